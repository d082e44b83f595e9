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
// Ranges over max_points_per_series points are fetched in chunks aligned on start + k*step.
#include <algorithm>

#include "core/registry.hpp"
#include "core/sql_values.hpp"
#include "prometheus/time_parse.hpp"
#include "prometheus/matrix_cursor.hpp"

namespace pp {
namespace {

constexpr const char* kName = "prom_range";
const std::vector<ArgumentSpec> kArguments = {
    {"query", true}, {"start", true}, {"end", true}, {"step", false}};

int64_t default_step_ms(int64_t span_ms) {
  return std::max<int64_t>(1, (span_ms + 999) / 1000);  // about 1,000 points
}

// Splits [start, end] into requests of at most max_points evaluation times each.
std::vector<MatrixChunk> plan(Connection& connection, const std::string& query, int64_t start,
                              int64_t end, int64_t step) {
  const Settings& settings = connection.settings();
  const int64_t max_points = std::max<int64_t>(1, settings.get_int("max_points_per_series"));
  const int64_t points = (end - start) / step + 1;
  const int64_t requests = (points + max_points - 1) / max_points;
  if (requests > settings.get_int("max_requests_per_query"))
    throw Error(std::string(kName) + ": the range needs " + std::to_string(requests) +
                " requests of " + std::to_string(max_points) + " points (limit max_requests_per_query = " +
                settings.get("max_requests_per_query") + "); use a larger step or a shorter range");
  std::vector<MatrixChunk> chunks;
  auto client = std::make_shared<PromClient>(connection, kName);
  for (int64_t k = 0; k < requests; ++k) {
    const int64_t chunk_start = start + k * max_points * step;
    const int64_t chunk_end = std::min(end, chunk_start + (max_points - 1) * step);
    chunks.push_back({[client, query, chunk_start, chunk_end, step] {
                        return client->query_range(query, chunk_start, chunk_end, step);
                      },
                      chunk_start - 1, chunk_end});
  }
  return chunks;
}

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  return connect_table(db, aux,
                       (std::string("CREATE TABLE x(") + kMatrixColumns +
                        ", query HIDDEN, start HIDDEN, \"end\" HIDDEN, step HIDDEN)")
                           .c_str(),
                       /*does_io=*/true, out, error);
}

int xBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const int rc = plan_arguments(vtab, info, kName, kFirstArgument, kArguments);
  info->estimatedRows = 10000;
  info->estimatedCost = 1e6;  // a network round trip: make SQLite call it as few times as it can
  return rc;
}

int xFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<MatrixCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    const std::string query = required_text(args[0], kName, "query");
    const auto [start, end] = parse_time_range(args[1], args[2], kName);
    const int64_t step = args[3] ? parse_duration_ms(args[3], kName, "step") : default_step_ms(end - start);
    std::vector<sqlite3_value*> shown(args.begin(), args.end());
    cursor->start(plan(*cursor->connection, query, start, end, step), static_cast<int>(shown.size()),
                  shown.data());
    return SQLITE_OK;
  });
}

sqlite3_module make_module() {
  sqlite3_module m{};
  fill_matrix_module(m);
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xFilter = xFilter;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_prom_range(const Registration& r) { return create_connection_module(r, kName, &kModule); }

}  // namespace pp
