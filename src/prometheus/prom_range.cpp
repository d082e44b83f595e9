// prom_range: a PromQL range query as a table.
//
//   SELECT metric, labels, ts, value
//     FROM prom_range('avg by (gpu) (DCGM_FI_DEV_GPU_UTIL)', '2024-05-01T12:00:00Z',
//                     '2024-05-01T13:00:00Z', '15s');
//
// Arguments (hidden columns query, start, end, step):
//   query  PromQL expression (required)
//   start  first evaluation time: unix seconds or RFC3339 text (required)
//   end    last evaluation time, inclusive (required, not before start)
//   step   seconds or a Prometheus duration such as '15s' or '1m30s'; without it, a step that
//          gives about 1,000 points per series
// Columns:
//   metric  the series' __name__ (NULL for expressions that drop it)
//   labels  the other labels as a JSON object with sorted keys
//   ts      evaluation time, REAL unix seconds (milliseconds kept)
//   value   REAL; NaN is NULL, +Inf/-Inf are infinities
// Each point is the last raw sample within the lookback window (5 minutes by default), so
// values repeat and raw timestamps are lost: prom_samples returns the stored samples instead.
// Ranges over max_points_per_series points are fetched in chunks aligned on start + k*step;
// `@ start()` and `@ end()` in the query then name the call's start and end, as in one request.
#include <algorithm>

#include "core/sql_values.hpp"
#include "prometheus/matrix_cursor.hpp"
#include "prometheus/prom_client.hpp"
#include "prometheus/prometheus_tables.hpp"
#include "prometheus/promql.hpp"
#include "prometheus/time_parse.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kRangeArguments = {{"query", true}, {"start", true}, {"end", true}, {"step", false}};

int64_t default_step_ms(int64_t span_ms) {
  return std::max<int64_t>(1, (span_ms + 999) / 1000);  // about 1,000 points
}

// Splits [start, end] into requests of at most max_points evaluation times each.
std::vector<MatrixChunk> plan_range_chunks(Connection& connection, uint64_t cursor, const std::string& query,
                                           int64_t start, int64_t end, int64_t step) {
  const Settings& settings = connection.settings();
  const int64_t max_points = std::max<int64_t>(1, settings.get_int("max_points_per_series"));
  const int64_t points = (end - start) / step + 1;
  const int64_t requests = (points + max_points - 1) / max_points;
  if (requests > settings.get_int("max_requests_per_query"))
    throw Error("the range needs " + std::to_string(requests) + " requests of " + std::to_string(max_points) +
                " points (limit max_requests_per_query = " + settings.get("max_requests_per_query") +
                "); use a larger step or a shorter range");
  std::vector<MatrixChunk> chunks;
  auto client = std::make_shared<PromClient>(connection, "prom_range", cursor);
  // `@ start()` and `@ end()` mean the call's ends, not a request's.
  const std::string sent = requests > 1 ? pin_at_modifiers(query, format_seconds(start), format_seconds(end)) : query;
  for (int64_t k = 0; k < requests; ++k) {
    const int64_t chunk_start = start + k * max_points * step;
    // (max_points - 1) * step may pass int64 (steps up to 2^63 ns): compare before multiplying.
    const int64_t chunk_end =
        (max_points - 1) > (end - chunk_start) / step ? end : std::min(end, chunk_start + (max_points - 1) * step);
    chunks.push_back({[client, sent, chunk_start, chunk_end, step] {
                        return client->query_range(sent, chunk_start, chunk_end, step);
                      },
                      chunk_start - 1, chunk_end});
  }
  return chunks;
}

struct RangeCursor : MatrixCursor {
  static constexpr const char* kName = "prom_range";
  static constexpr const char* kSchema =
      "CREATE TABLE x(" PP_MATRIX_COLUMNS ", query HIDDEN, start HIDDEN, \"end\" HIDDEN, step HIDDEN)";
  using MatrixCursor::MatrixCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kRangeArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 10000;
    info->estimatedCost = 1e6;  // a network round trip: make SQLite call it as few times as it can
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kRangeArguments.size());
    keep_arguments(args);
    const std::string query = required_nonblank_text(args[0], "query");
    const TimeRange range = parse_time_range(args[1], args[2], connection->statement_now_ms());  // (evaluation times: nearest ms)
    const int64_t step = args[3] ? parse_duration_ms(args[3], "step") : default_step_ms(range.end_ms - range.start_ms);
    start(plan_range_chunks(*connection, serial, query, range.start_ms, range.end_ms, step));
  }
};

}  // namespace

const sqlite3_module kPromRangeModule = table_function_module<RangeCursor>();

}  // namespace pp
