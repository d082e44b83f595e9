// prom_samples: the RAW samples stored for a series selector, each with its own timestamp.
//
//   SELECT metric, json_extract(labels, '$.UUID') AS uuid, ts, value
//     FROM prom_samples('{__name__=~"DCGM_FI_PROF_.*", Hostname="node-a"}',
//                       1714557600, 1714561200)
//    WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
//
// Arguments (hidden columns selector, start, end):
//   selector  a series selector such as 'up' or '{__name__=~"DCGM_.*",gpu="0"}' (required)
//   start     unix seconds or RFC3339 text; samples at exactly start are included (required)
//   end       inclusive, not before start (required)
// Columns: metric, labels (JSON, sorted keys), ts (REAL unix seconds), value (REAL, NaN is NULL).
//
// This is the table attribution is built on: a dcgm-exporter sample at ts is the average over
// the collection interval that ends at ts, so its timestamp must be the stored one. It is
// fetched as instant queries of `selector[range]`, one per samples_chunk_seconds of time.
// `metric = '...'` and `metric REGEXP '...'` are pushed into the selector.
#include <algorithm>

#include "core/sql_values.hpp"
#include "core/text.hpp"
#include "prometheus/metric_pushdown.hpp"
#include "prometheus/prom_client.hpp"
#include "prometheus/prometheus_tables.hpp"
#include "prometheus/promql.hpp"
#include "prometheus/samples_cursor.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kSamplesArguments = {{"selector", true}, {"start", true}, {"end", true}};

// Windows (after, through] of samples_chunk_seconds covering [start, end]: the first begins
// 1 ms before start because Prometheus stores milliseconds.
std::vector<MatrixChunk> plan_sample_chunks(Connection& connection, const char* table, uint64_t cursor,
                                            const std::string& selector, int64_t start, int64_t end,
                                            bool whole_only) {
  const Settings& settings = connection.settings();
  const int64_t chunk_ms = std::max<int64_t>(1000, settings.get_int("samples_chunk_seconds") * 1000);
  const int64_t span = end - start + 1;
  const int64_t requests = (span + chunk_ms - 1) / chunk_ms;
  if (requests > settings.get_int("max_requests_per_query"))
    throw Error("the range needs " + std::to_string(requests) + " requests of samples_chunk_seconds = " +
                settings.get("samples_chunk_seconds") + " (limit max_requests_per_query = " +
                settings.get("max_requests_per_query") + "); use a shorter range or larger chunks");
  auto client = std::make_shared<PromClient>(connection, table, cursor);
  std::vector<MatrixChunk> chunks;
  for (int64_t after = start - 1; after < end; after += chunk_ms) {
    const int64_t through = std::min(end, after + chunk_ms);
    chunks.push_back({[client, selector, after, through, whole_only] {
                        return client->raw_samples(selector, through, through - after, whole_only);
                      },
                      after, through});
  }
  return chunks;
}

// prom_samples' own columns: metric, labels, ts, value.
struct PromSamplesCursor : SamplesCursor {
  static constexpr const char* kName = "prom_samples";
  static constexpr const char* kSchema =
      "CREATE TABLE x(" PP_MATRIX_COLUMNS ", selector HIDDEN, start HIDDEN, \"end\" HIDDEN)";
  using SamplesCursor::SamplesCursor;
  static int plan(sqlite3_index_info* info) { return plan_samples(info, kFirstArgument); }
  void filter(int idx_num, int argc, sqlite3_value** argv) { filter_samples(kName, idx_num, argc, argv); }
};

}  // namespace

int SamplesCursor::plan_samples(sqlite3_index_info* info, int first_argument) {
  const int rc = plan_arguments(info, first_argument, kSamplesArguments);
  if (rc != SQLITE_OK) return rc;
  info->estimatedRows = 100000;
  info->estimatedCost = 1e6;
  plan_metric_pushdown(info, kMetricColumn);
  return SQLITE_OK;
}

void SamplesCursor::filter_samples(const char* table, int idx_num, int argc, sqlite3_value** argv) {
  const auto args = filter_arguments(idx_num, argc, argv, kSamplesArguments.size());
  keep_arguments(args);
  const std::string selector = required_nonblank_text(args[0], "selector");
  // Raw samples belong to series. Prometheus refuses an expression followed by the range this
  // table appends, naming text the user never wrote; VictoriaMetrics runs it as a subquery, whose
  // computed points would be rows that look like stored samples.
  if (!is_series_selector(selector))
    throw argument_error("selector", "is not a series selector: '" + valid_utf8(selector, 200) + "' (" + table +
                                         " reads the raw samples of series: give a metric name and/or label "
                                         "matchers in braces, such as 'up' or '{__name__=~\"DCGM_.*\", gpu=\"0\"}', "
                                         "with nothing after them; for a PromQL expression use prom_range)");
  const TimeRange range = parse_time_range(args[1], args[2], connection->statement_now_ms(), /*into_range=*/true);
  const auto pushed = apply_metric_pushdown(selector, idx_num, argc, argv);
  table_ = table;
  series_numbering_.clear();
  numbering_ = nullptr;
  start(pushed && !range.empty ? plan_sample_chunks(*connection, table, serial, *pushed, range.start_ms, range.end_ms,
                                                    refuse_partial_answers)
                               : std::vector<MatrixChunk>{});
  number_row();
}

void SamplesCursor::next() {
  MatrixCursor::next();
  number_row();
}

void SamplesCursor::number_row() {
  if (eof) return;
  if (!numbering_ || numbered_serial_ != series_serial()) {
    const PromSeries& s = series();
    std::string key = part_key(table_, (s.metric ? "1" + *s.metric : "0") + '\n' + s.labels_json);
    auto [it, added] = series_numbering_.try_emplace(key);
    if (added) it->second.base = part_rowid_base(key);
    numbering_ = &it->second;
    numbered_serial_ = series_serial();
  }
  rowid = numbering_->base + ++numbering_->points;
}

const sqlite3_module kPromSamplesModule = table_function_module<PromSamplesCursor>();

}  // namespace pp
