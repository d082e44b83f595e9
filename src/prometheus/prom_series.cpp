// prom_series: the series that match a selector, for discovery.
//
//   SELECT metric, json_extract(labels, '$.UUID') AS uuid, json_extract(labels, '$.Hostname') AS host
//     FROM prom_series('{__name__=~"DCGM_FI_DEV_.*"}', '2024-05-01T12:00:00Z', '2024-05-01T13:00:00Z');
//
// Arguments (hidden columns match, start, end):
//   match  a series selector (required)
//   start, end  optional time bounds (unix seconds or RFC3339); the server's defaults otherwise
// Columns: metric (the __name__), labels (the other labels, JSON with sorted keys).
// `metric = '...'` and `metric REGEXP '...'` are pushed into the selector.
#include "prometheus/prom_api.hpp"
#include "core/registry.hpp"
#include "core/sql_values.hpp"
#include "prometheus/time_parse.hpp"
#include "prometheus/metric_pushdown.hpp"
#include "core/text_rows_cursor.hpp"

namespace pp {
namespace {

constexpr const char* kName = "prom_series";
constexpr int kFirstArgument = 2;
const std::vector<ArgumentSpec> kArguments = {{"match", true}, {"start", false}, {"end", false}};

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  return connect_table(db, aux,
                       "CREATE TABLE x(metric TEXT, labels TEXT, \"match\" HIDDEN, start HIDDEN, "
                       "\"end\" HIDDEN)",
                       /*does_io=*/true, out, error);
}

int xBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const int rc = plan_arguments(vtab, info, kName, kFirstArgument, kArguments);
  if (rc != SQLITE_OK) return rc;
  info->estimatedRows = 1000;
  info->estimatedCost = 1e5;
  plan_metric_pushdown(info, /*metric_column=*/0);
  return SQLITE_OK;
}

int xFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<TextRowsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    const std::string match = required_text(args[0], kName, "match");
    // The series API needs both bounds; absent ones mean all time (through the year 2100).
    TimeRange range{0, 4102444800000};
    if (args[1] && args[2]) range = parse_time_range(args[1], args[2], kName);
    else if (args[1]) range.start_ms = parse_time_ms(args[1], kName, "start");
    else if (args[2]) range.end_ms = parse_time_ms(args[2], kName, "end");
    std::vector<TextRow> rows;
    if (const auto pushed = apply_metric_pushdown(match, idx_num, argc, argv)) {
      PromClient client(*cursor->connection, kName);
      for (const PromSeries& s : *client.series(*pushed, range.start_ms, range.end_ms)) rows.push_back({s.metric, s.labels_json});
    }
    cursor->start(std::move(rows), args);
    return SQLITE_OK;
  });
}

sqlite3_module make_module() {
  sqlite3_module m{};
  fill_text_rows_module<2>(m);
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xFilter = xFilter;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_prom_series(const Registration& r) { return create_connection_module(r, kName, &kModule); }

}  // namespace pp
