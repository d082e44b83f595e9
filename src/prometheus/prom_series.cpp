// prom_series: the series that match a selector, for discovery.
//
//   SELECT metric, json_extract(labels, '$.UUID') AS uuid, json_extract(labels, '$.Hostname') AS host
//     FROM prom_series('{__name__=~"DCGM_FI_DEV_.*"}', '2024-05-01T12:00:00Z', '2024-05-01T13:00:00Z');
//
// Arguments (hidden columns match, start, end):
//   match  a series selector (required)
//   start, end  optional time bounds (unix seconds or RFC3339); all time otherwise
// Columns: metric (the __name__), labels (the other labels, JSON with sorted keys).
// `metric = '...'` and `metric REGEXP '...'` are pushed into the selector. A series' rowid is
// its own (TableCursor::part_rowid_base, the series the part), so that the branches of a
// MULTI-INDEX OR that push down different metrics (or none) give a series one rowid.
#include <algorithm>
#include <map>

#include "core/sql_values.hpp"
#include "core/table_function.hpp"
#include "prometheus/metric_pushdown.hpp"
#include "prometheus/prom_client.hpp"
#include "prometheus/prometheus_tables.hpp"
#include "prometheus/time_parse.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kSeriesArguments = {{"match", true}, {"start", false}, {"end", false}};

struct SeriesCursor : RowsCursor {
  static constexpr const char* kName = "prom_series";
  static constexpr const char* kSchema =
      "CREATE TABLE x(metric TEXT, labels TEXT, \"match\" HIDDEN, start HIDDEN, \"end\" HIDDEN)";
  static constexpr int kFirstArgument = 2;
  static constexpr bool kDirectOnly = true;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kSeriesArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 1000;
    info->estimatedCost = 1e5;
    plan_metric_pushdown(info, /*metric_column=*/0);
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kSeriesArguments.size());
    keep_arguments(args);
    const std::string match = required_nonblank_text(args[0], "match");
    // The series API needs both bounds; absent ones mean all time (kAllTimeStartMs: VictoriaMetrics
    // reads a start of 0 as none given, and then looks at the last day only).
    TimeRange range{kAllTimeStartMs, kAllTimeEndMs};
    const int64_t now_ms = connection->statement_now_ms();
    if (args[1] && args[2])
      range = parse_time_range(args[1], args[2], now_ms);
    else if (args[1])
      range.start_ms = parse_time_ms(args[1], "start", now_ms);
    else if (args[2])
      range.end_ms = parse_time_ms(args[2], "end", now_ms);
    // A start given as 0 (or before it) is sent as 1 s too, for the same reason; no series has
    // samples that old.
    if (range.end_ms >= kAllTimeStartMs) range.start_ms = std::max(range.start_ms, kAllTimeStartMs);
    std::vector<std::vector<SqlValue>> rows;
    rowids_.clear();
    if (const auto pushed = apply_metric_pushdown(match, idx_num, argc, argv)) {
      PromClient client(*connection, kName, serial);
      std::map<std::string, sqlite3_int64> seen;  // a series named twice: its second row is 2 on
      for (const PromSeries& s : *client.series(*pushed, range.start_ms, range.end_ms)) {
        rows.push_back({s.metric ? SqlValue(*s.metric) : SqlValue(), s.labels_json});
        const std::string key = part_key(kName, (s.metric ? "1" + *s.metric : "0") + '\n' + s.labels_json);
        rowids_.push_back(part_rowid_base(key) + ++seen[key]);
      }
    }
    set_rows(std::move(rows));
    at_ = 0;
    if (!eof) rowid = rowids_[at_];
  }

  void next() {
    RowsCursor::next();
    if (!eof) rowid = rowids_[++at_];
  }

 private:
  std::vector<sqlite3_int64> rowids_;  // of the rows, in order
  size_t at_ = 0;  // the row's index
};

}  // namespace

const sqlite3_module kPromSeriesModule = table_function_module<SeriesCursor>();

}  // namespace pp
