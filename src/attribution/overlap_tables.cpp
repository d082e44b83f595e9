// pp_overlaps and pp_overlap_means: the interval join of the attribution engine, as a sweep over
// one GPU's time-sorted events and samples (never a nested loop).
//
// USAGE:
//
//   SELECT * FROM pp_overlaps('GPU-5d1c...');                 -- every (event, sample) pair
//   SELECT * FROM pp_overlaps('GPU-5d1c...', 1714557600000, 1714557660000);
//   SELECT job_id, layer, forward, metric, pp_mean_value(state), pp_mean_count(state)
//     FROM pp_overlap_means('GPU-5d1c...');                   -- the same, as layer_state rows
//
// Arguments (HIDDEN columns uuid, after_ms, through_ms):
//   uuid        the GPU (required)
//   after_ms    only samples with ts_ms > after_ms (optional; NULL or absent: no bound)
//   through_ms  only samples with ts_ms <= through_ms (optional; NULL or absent: no bound)
//
// Inputs are the attribution tables of the main database (gpu_timeline.hpp); the overlaps and
// the untracked time are computed by the sweep of interval_sweep.hpp.
//
// pp_overlaps COLUMNS: event_id INTEGER (pp_events.id; NULL on untracked rows), job_id TEXT,
//   layer TEXT ('(untracked)' for untracked time), forward INTEGER (0 on untracked rows),
//   metric TEXT, ts_ms INTEGER (the time Prometheus stored), value REAL (NULL as stored),
//   interval_ms REAL (the window the sample averages over), weight_ns INTEGER (> 0: pairs that
//   only touch are not rows; an instant metric's sample weighs one window),
//   window_end_ns INTEGER (the end of the window, or the instant, from the align step).
// pp_overlap_means COLUMNS: job_id, layer, forward, metric, state BLOB, first_id INTEGER,
//   windows INTEGER: the rows the fold (sql/fold.sql) merges into layer_state, in one pass.
//   * per (job_id, layer, forward, metric) of the rows of pp_overlaps, the pp_mean state of
//     their values weighted by weight_ns / 1e9 seconds, exactly what
//       SELECT job_id, layer, forward, metric, pp_mean(value, weight_ns / 1e9)
//         FROM pp_overlaps(...) GROUP BY job_id, layer, forward, metric
//     gives (up to the order of additions: a window's rows of one group are added as one value
//     with their summed weight and count), without handing millions of pairs to SQLite;
//     state is NULL when every value of the group is NULL;
//   * per (job_id, layer, forward), metric '_duration': the pp_mean state of the call durations
//     (t_end_ns - t_start_ns) / 1e9 of the GPU's events that the fold has not counted yet
//     (pp_events.folded = 0) and that start by through_ms; first_id is the lowest pp_events.id
//     among them (NULL on the other rows);
//   windows is the number of distinct sample timestamps of the GPU in the range, on every row.
//   A value that is not finite or beyond 1e150 in magnitude (+Inf stored from Prometheus), or
//   text or a BLOB, is read as NULL (gpu_timeline.hpp, kLargestSampleValue).
//
// Cost: one index range per series of the GPU, one scan of its events in t_start_ns order
// (index pp_events_by_gpu_time), and O(events + samples + pairs) for the sweep.
// pp_overlap_means sweeps a GPU's series on two threads (plain C++ on data already read;
// SQLite is called from the calling thread only); bench/attribution_bench.py measures it.
//
// INNOCUOUS: it reads only tables of the database it runs in, no files or network.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "attribution/schema.hpp"
#include "attribution/overlap_means.hpp"
#include "core/interrupt.hpp"
#include "core/sql_values.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kOverlapArguments = {{"uuid", true}, {"after_ms", false}, {"through_ms", false},
                                                   {"database", false}};
constexpr size_t kThreads = 2;  // pp_overlap_means sweeps a GPU's series on up to this many threads

std::optional<int64_t> bound_argument(sqlite3_value* value, const char* argument) {
  if (!value || sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;
  const double d = required_double(value, argument);
  if (!std::isfinite(d)) throw argument_error(argument, "must be a finite number of milliseconds");
  if (sqlite3_value_type(value) == SQLITE_INTEGER) return sqlite3_value_int64(value);
  if (d >= 9.2e18 || d <= -9.2e18) throw argument_error(argument, "is out of range");
  return static_cast<int64_t>(std::floor(d));  // ts_ms > after or ts_ms <= through, for integer ts_ms
}

// The GPU's timeline for the call's arguments.
std::unique_ptr<GpuTimeline> read_arguments(sqlite3* db, const std::vector<sqlite3_value*>& args) {
  refuse_other_database(db, args[3]);
  const std::string uuid = required_text(args[0], "uuid");
  const auto after = bound_argument(args[1], "after_ms");
  const auto through = bound_argument(args[2], "through_ms");
  if (after && through && *through < *after)
    throw argument_error("through_ms", "(" + std::to_string(*through) + ") is before after_ms (" +
                                           std::to_string(*after) + "): the range (after_ms, through_ms] holds nothing");
  return std::make_unique<GpuTimeline>(read_gpu_timeline(db, uuid, after, through));
}

int plan_overlaps(sqlite3_index_info* info, int first_argument, double rows) {
  const int rc = plan_arguments(info, first_argument, kOverlapArguments);
  if (rc != SQLITE_OK) return rc;
  info->estimatedRows = static_cast<sqlite3_int64>(rows);
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}

// pp_overlaps: every (event, sample) pair.
struct OverlapsCursor : TableCursor {
  static constexpr const char* kName = "pp_overlaps";
  static constexpr const char* kSchema =
      "CREATE TABLE x(event_id INTEGER, job_id TEXT, layer TEXT, forward INTEGER, metric TEXT, ts_ms INTEGER, "
      "value REAL, interval_ms REAL, weight_ns INTEGER, window_end_ns INTEGER, uuid HIDDEN, after_ms HIDDEN, "
      "through_ms HIDDEN, database HIDDEN)";
  enum Column { kEventId, kJobId, kLayer, kForward, kMetric, kTsMs, kValue, kIntervalMs, kWeightNs, kWindowEndNs, kUuid };
  static constexpr int kFirstArgument = kUuid;
  static constexpr bool kDirectOnly = false;
  using TableCursor::TableCursor;

  struct Pair {
    int64_t event;  // index into events, -1 untracked
    uint32_t group;
    uint32_t series;
    const TimelineSample* sample;
    int64_t weight;
  };
  std::unique_ptr<GpuTimeline> gpu;
  std::vector<Pair> pairs;
  size_t row = 0;

  static int plan(sqlite3_index_info* info) { return plan_overlaps(info, kFirstArgument, 1000000); }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kOverlapArguments.size());
    keep_arguments(args);
    pairs.clear();
    gpu = read_arguments(connection->db(), args);
    sweep_overlaps(*gpu, [&](int64_t event, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
      pairs.push_back({event, group, static_cast<uint32_t>(series), &sample, weight});
    });
    row = 0;
    eof = pairs.empty();
  }

  void next() { eof = ++row >= pairs.size(); }

  void column(sqlite3_context* ctx, int column) const {
    const Pair& r = pairs[row];
    const TimelineGroup& group = gpu->groups[r.group];
    const TimelineSeries& series = gpu->series[r.series];
    switch (column) {
      case kEventId:
        if (r.event < 0)
          sqlite3_result_null(ctx);
        else
          sqlite3_result_int64(ctx, gpu->events[static_cast<size_t>(r.event)].id);
        break;
      case kJobId: result_text(ctx, gpu->job_id(r.group)); break;
      case kLayer: result_text(ctx, group.layer); break;
      case kForward: sqlite3_result_int(ctx, group.forward); break;
      case kMetric: result_text(ctx, series.metric); break;
      case kTsMs: sqlite3_result_int64(ctx, r.sample->ts_ms); break;
      case kValue:
        if (r.sample->null)
          sqlite3_result_null(ctx);
        else
          sqlite3_result_double(ctx, r.sample->value);
        break;
      case kIntervalMs: sqlite3_result_double(ctx, series.window_of(*r.sample) / 1e6); break;
      case kWeightNs: sqlite3_result_int64(ctx, r.weight); break;
      case kWindowEndNs: sqlite3_result_int64(ctx, r.sample->end_ns); break;
      default: sqlite3_result_null(ctx); break;
    }
  }
};

// pp_overlap_means: the same as layer_state rows, in one pass.
struct OverlapMeansCursor : TableCursor {
  static constexpr const char* kName = "pp_overlap_means";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, layer TEXT, forward INTEGER, metric TEXT, state BLOB, first_id INTEGER, "
      "windows INTEGER, uuid HIDDEN, after_ms HIDDEN, through_ms HIDDEN, database HIDDEN)";
  enum Column { kJobId, kLayer, kForward, kMetric, kState, kFirstId, kWindows, kUuid };
  static constexpr int kFirstArgument = kUuid;
  static constexpr bool kDirectOnly = false;
  using TableCursor::TableCursor;

  std::unique_ptr<GpuTimeline> gpu;
  std::vector<OverlapMeanRow> rows;
  int64_t windows = 0;
  size_t row = 0;

  static int plan(sqlite3_index_info* info) { return plan_overlaps(info, kFirstArgument, 500); }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kOverlapArguments.size());
    keep_arguments(args);
    rows.clear();
    gpu = read_arguments(connection->db(), args);
    // sqlite3_interrupt(): the calling thread asks the connection (only it uses the connection).
    InterruptCheck interrupted(connection->db());
    const size_t threads = std::max<size_t>(1, std::min<size_t>(kThreads, std::thread::hardware_concurrency()));
    OverlapMeans means = overlap_means(*gpu, threads, [&] { interrupted.check(); });
    rows = std::move(means.rows);
    windows = means.windows;
    row = 0;
    eof = rows.empty();
  }

  void next() { eof = ++row >= rows.size(); }

  void column(sqlite3_context* ctx, int column) const {
    const OverlapMeanRow& r = rows[row];
    const TimelineGroup& group = gpu->groups[r.group];
    switch (column) {
      case kJobId: result_text(ctx, gpu->job_id(r.group)); break;
      case kLayer: result_text(ctx, group.layer); break;
      case kForward: sqlite3_result_int(ctx, group.forward); break;
      case kMetric:
        if (r.series == OverlapMeanRow::kDurations)
          sqlite3_result_text(ctx, "_duration", -1, SQLITE_STATIC);
        else
          result_text(ctx, gpu->series[r.series].metric);
        break;
      case kState:
        if (r.state)
          sqlite3_result_blob(ctx, r.state->data(), static_cast<int>(r.state->size()), SQLITE_TRANSIENT);
        else
          sqlite3_result_null(ctx);
        break;
      case kFirstId:
        if (r.series == OverlapMeanRow::kDurations)
          sqlite3_result_int64(ctx, gpu->first_id[r.group]);
        else
          sqlite3_result_null(ctx);
        break;
      case kWindows: sqlite3_result_int64(ctx, windows); break;
      default: sqlite3_result_null(ctx); break;
    }
  }
};

}  // namespace

const sqlite3_module kOverlapsModule = table_function_module<OverlapsCursor>();
const sqlite3_module kOverlapMeansModule = table_function_module<OverlapMeansCursor>();

}  // namespace pp
