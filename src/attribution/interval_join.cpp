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
// Inputs are the attribution tables of the main database: the GPU's rows of pp_events (all of
// them, folded or not), of pp_samples in the range, and of pp_intervals (a series without an
// interval is skipped). A sample at ts_ms with interval I covers the window (ts_ms - I, ts_ms],
// in integer ns [start, end) = [(ts_ms - I) * 1e6, ts_ms * 1e6). An event overlaps it when
// t_start_ns < end and t_end_ns > start, with weight_ns = min(t_end_ns, end) -
// max(t_start_ns, start): exact integers. The part of a window inside a job's span on the GPU
// (min t_start_ns to max t_end_ns of the job's events there) that its events do not cover is
// the job's untracked time: max(0, span overlap - sum of the job's weights in the window).
//
// pp_overlaps COLUMNS: event_id INTEGER (pp_events.id; NULL on untracked rows), job_id TEXT,
//   layer TEXT ('(untracked)' for untracked time), forward INTEGER (0 on untracked rows),
//   metric TEXT, ts_ms INTEGER, value REAL (NULL as stored), interval_ms INTEGER,
//   weight_ns INTEGER (> 0: pairs that only touch are not rows).
// pp_overlap_means COLUMNS: job_id, layer, forward, metric, state BLOB, first_id INTEGER,
//   windows INTEGER: the rows the fold (src/attribution/sql/fold.sql) merges into layer_state, in one pass.
//   * per (job_id, layer, forward, metric) of the rows of pp_overlaps, the pp_mean state of
//     their values weighted by weight_ns / 1e9 seconds, exactly what
//       SELECT job_id, layer, forward, metric, pp_mean(value, weight_ns / 1e9)
//         FROM pp_overlaps(...) GROUP BY job_id, layer, forward, metric
//     gives (up to the order of additions), without handing millions of pairs to SQLite;
//     state is NULL when every value of the group is NULL;
//   * per (job_id, layer, forward), metric '_duration': the pp_mean state of the call durations
//     (t_end_ns - t_start_ns) / 1e9 of the GPU's events that the fold has not counted yet
//     (pp_events.folded = 0) and that start by through_ms; first_id is the lowest pp_events.id
//     among them (NULL on the other rows);
//   windows is the number of distinct sample timestamps of the GPU in the range, on every row.
//   A value that is not finite (+Inf stored from Prometheus) is an error, as in pp_mean.
//
// Cost: one index range per series of the GPU, one scan of its events in t_start_ns order
// (index pp_events_by_gpu_time), and O(events + samples + pairs) for the sweep: per series,
// events enter an active list when they start before a window's end and leave it for good once
// they end before a window's start (both only grow within a series). pp_overlap_means sweeps a
// GPU's series on two threads (plain C++ on data already read; SQLite is called from the
// calling thread only). On 1M events and 1.73M samples over 8 GPUs it takes about 0.8 s
// (bench/attribution_bench.py).
//
// INNOCUOUS: it reads only tables of the database it runs in, no files or network.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "stats/mean_state.hpp"
#include "core/registry.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

constexpr const char* kOverlaps = "pp_overlaps";
constexpr const char* kMeans = "pp_overlap_means";
const std::vector<ArgumentSpec> kArguments = {{"uuid", true}, {"after_ms", false}, {"through_ms", false}};
constexpr const char* kUntracked = "(untracked)";
constexpr int64_t kNsPerMs = 1000000;
constexpr size_t kThreads = 2;  // pp_overlap_means sweeps a GPU's series on up to this many threads

// ---- reading the inputs ----

std::string column_text(sqlite3_stmt* stmt, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
  return text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, column))) : std::string();
}

struct Sample {
  int64_t ts_ms;
  double value;
  bool null;
};

struct Series {
  std::string metric;
  int64_t interval_ms;
  std::vector<Sample> samples;  // ts_ms ascending
};

struct Event {
  int64_t start, end, id;
  uint32_t group, job;
};

// (job_id, layer, forward): the unit of a pp_mean state.
struct Group {
  uint32_t job;
  std::string layer;
  int forward;
};

struct Job {
  std::string job_id;
  int64_t first = 0, last = 0;  // span on this GPU over all its events
  uint32_t untracked_group = 0;
};

// Everything the sweep needs for one GPU.
class GpuData {
 public:
  GpuData(sqlite3* db, const char* function, const std::string& uuid, std::optional<int64_t> after_ms,
          std::optional<int64_t> through_ms)
      : db_(db), function_(function) {
    read_series(uuid, after_ms, through_ms);
    read_events(uuid, through_ms);
  }

  std::vector<Series> series;
  std::vector<Event> events;  // relevant to the samples' windows, sorted by start
  std::vector<Job> jobs;      // sorted by first
  std::vector<Group> groups;
  // Per group: the durations of its unfolded events starting by through_ms, and their lowest id.
  std::vector<MeanState> durations;
  std::vector<int64_t> first_id;

  const std::string& job_id(uint32_t group) const { return jobs[groups[group].job].job_id; }

  // Distinct sample timestamps over all series.
  int64_t windows() const {
    // Usually every series of a GPU has the same timestamps (one scrape, all fields).
    const auto same_times = [](const Series& a, const Series& b) {
      return a.samples.size() == b.samples.size() &&
             std::equal(a.samples.begin(), a.samples.end(), b.samples.begin(),
                        [](const Sample& x, const Sample& y) { return x.ts_ms == y.ts_ms; });
    };
    if (series.empty()) return 0;
    if (std::all_of(series.begin(), series.end(), [&](const Series& s) { return same_times(s, series[0]); }))
      return static_cast<int64_t>(series[0].samples.size());
    std::vector<int64_t> all;
    size_t total = 0;
    for (const auto& s : series) total += s.samples.size();
    all.reserve(total);
    for (const auto& s : series) {
      const size_t middle = all.size();
      for (const auto& sample : s.samples) all.push_back(sample.ts_ms);
      std::inplace_merge(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(middle), all.end());
    }
    return static_cast<int64_t>(std::unique(all.begin(), all.end()) - all.begin());
  }

 private:
  void read_series(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms) {
    Statement intervals(db_, "SELECT metric, interval_ms FROM main.pp_intervals WHERE uuid = ?1 ORDER BY metric",
                        function_);
    sqlite3_bind_text(intervals.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_STATIC);
    while (intervals.step()) {
      if (sqlite3_column_type(intervals.stmt, 1) == SQLITE_NULL) continue;
      series.push_back({column_text(intervals.stmt, 0), sqlite3_column_int64(intervals.stmt, 1), {}});
    }
    Statement samples(db_,
                      "SELECT ts_ms, value FROM main.pp_samples WHERE uuid = ?1 AND metric = ?2 "
                      "AND ts_ms > ?3 AND ts_ms <= ?4 ORDER BY ts_ms",
                      function_);
    sqlite3_bind_text(samples.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_STATIC);
    sqlite3_bind_int64(samples.stmt, 3, after_ms.value_or(INT64_MIN));
    sqlite3_bind_int64(samples.stmt, 4, through_ms.value_or(INT64_MAX));
    for (auto& s : series) {
      sqlite3_reset(samples.stmt);
      sqlite3_bind_text(samples.stmt, 2, s.metric.data(), static_cast<int>(s.metric.size()), SQLITE_STATIC);
      while (samples.step()) {
        const bool null = sqlite3_column_type(samples.stmt, 1) == SQLITE_NULL;
        s.samples.push_back({sqlite3_column_int64(samples.stmt, 0),
                             null ? 0.0 : sqlite3_column_double(samples.stmt, 1), null});
      }
      if (!s.samples.empty()) {
        lo_ns_ = std::min(lo_ns_, (s.samples.front().ts_ms - s.interval_ms) * kNsPerMs);
        hi_ns_ = std::max(hi_ns_, s.samples.back().ts_ms * kNsPerMs);
      }
    }
  }

  // All events of the GPU in t_start_ns order: every one counts for its job's span; those that
  // can overlap a window [lo_ns_, hi_ns_) are kept for the sweep; unfolded ones starting by
  // through_ms give their durations.
  void read_events(const std::string& uuid, std::optional<int64_t> through_ms) {
    const int64_t through_ns = through_ms && *through_ms < INT64_MAX / kNsPerMs ? *through_ms * kNsPerMs : INT64_MAX;
    Statement stmt(db_,
                   "SELECT t_start_ns, t_end_ns, job_id, id, layer, forward, folded FROM main.pp_events "
                   "WHERE gpu_uuid = ?1 ORDER BY t_start_ns",
                   function_);
    sqlite3_bind_text(stmt.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_STATIC);
    std::unordered_map<std::string, uint32_t> job_index;
    std::unordered_map<std::string, uint32_t> group_index;
    std::string key;
    uint32_t last_job = UINT32_MAX;
    std::string last_job_id;
    while (stmt.step()) {
      const int64_t start = sqlite3_column_int64(stmt.stmt, 0);
      const int64_t end = sqlite3_column_int64(stmt.stmt, 1);
      const auto* job_text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.stmt, 2));
      const size_t job_bytes = static_cast<size_t>(sqlite3_column_bytes(stmt.stmt, 2));
      if (last_job == UINT32_MAX || last_job_id.size() != job_bytes ||
          std::memcmp(last_job_id.data(), job_text, job_bytes) != 0) {
        last_job_id.assign(job_text ? job_text : "", job_bytes);
        auto [it, added] = job_index.emplace(last_job_id, static_cast<uint32_t>(jobs.size()));
        if (added) jobs.push_back({last_job_id, start, end, 0});
        last_job = it->second;
      }
      Job& job = jobs[last_job];
      job.first = std::min(job.first, start);
      job.last = std::max(job.last, end);
      const bool in_range = start < hi_ns_ && end > lo_ns_;  // may overlap a window of the range
      const bool unfolded = start <= through_ns && sqlite3_column_int64(stmt.stmt, 6) == 0;
      if (!in_range && !unfolded) continue;
      const auto* layer = reinterpret_cast<const char*>(sqlite3_column_text(stmt.stmt, 4));
      const int forward = sqlite3_column_int(stmt.stmt, 5);
      key.assign(reinterpret_cast<const char*>(&last_job), sizeof last_job);
      key.push_back(static_cast<char>(forward != 0 ? 1 : 0));
      key.append(layer ? layer : "", static_cast<size_t>(sqlite3_column_bytes(stmt.stmt, 4)));
      const uint32_t group = group_for(group_index, key, last_job, layer, forward);
      const int64_t id = sqlite3_column_int64(stmt.stmt, 3);
      if (in_range) events.push_back({start, end, id, group, last_job});
      if (unfolded) {
        durations[group].add(static_cast<double>(end - start) / 1e9);
        first_id[group] = std::min(first_id[group], id);
      }
    }
    // The untracked row of each job is the group (job, '(untracked)', 0), as in SQL.
    for (uint32_t j = 0; j < jobs.size(); ++j) {
      key.assign(reinterpret_cast<const char*>(&j), sizeof j);
      key.push_back(0);
      key.append(kUntracked);
      jobs[j].untracked_group = group_for(group_index, key, j, kUntracked, 0);
    }
    // ORDER BY t_start_ns is served by the index; sort anyway if a plan ever says otherwise.
    if (!std::is_sorted(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.start < b.start; }))
      std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  }

  uint32_t group_for(std::unordered_map<std::string, uint32_t>& index, const std::string& key, uint32_t job,
                     const char* layer, int forward) {
    const auto found = index.find(key);  // (emplace would allocate a node for every event)
    if (found != index.end()) return found->second;
    const auto group = static_cast<uint32_t>(groups.size());
    index.emplace(key, group);
    groups.push_back({job, layer ? layer : "", forward != 0 ? 1 : 0});
    durations.push_back(MeanState{});
    first_id.push_back(INT64_MAX);
    return group;
  }

  sqlite3* db_;
  const char* function_;
  int64_t lo_ns_ = INT64_MAX, hi_ns_ = INT64_MIN;
};

// The sweep: calls pair(event index or -1 for untracked, group, series, sample, weight_ns) for
// every row of pp_overlaps, series by series, samples in time order.
// Series first_series, first_series + stride, ...: so that threads can share a GPU's series.
template <class Emit>
void sweep(const GpuData& gpu, Emit&& emit, size_t first_series = 0, size_t stride = 1) {
  const auto& events = gpu.events;
  std::vector<int64_t> covered(gpu.jobs.size(), 0);
  std::vector<uint32_t> touched;
  // Jobs by span start, for an active list of jobs as for events.
  std::vector<uint32_t> jobs_by_first(gpu.jobs.size());
  for (uint32_t j = 0; j < jobs_by_first.size(); ++j) jobs_by_first[j] = j;
  std::sort(jobs_by_first.begin(), jobs_by_first.end(),
            [&](uint32_t a, uint32_t b) { return gpu.jobs[a].first < gpu.jobs[b].first; });
  std::vector<size_t> active;
  std::vector<uint32_t> active_jobs;
  for (size_t si = first_series; si < gpu.series.size(); si += stride) {
    const Series& series = gpu.series[si];
    active.clear();
    active_jobs.clear();
    size_t next = 0, next_job = 0;
    for (const Sample& sample : series.samples) {
      const int64_t start = (sample.ts_ms - series.interval_ms) * kNsPerMs;
      const int64_t end = sample.ts_ms * kNsPerMs;
      while (next < events.size() && events[next].start < end) active.push_back(next++);
      size_t kept = 0;
      for (size_t i : active) {
        const Event& e = events[i];
        if (e.end <= start) continue;  // ended before this window, so before every later one
        active[kept++] = i;  // and it started before this window's end: it overlaps
        const int64_t weight = std::min(e.end, end) - std::max(e.start, start);
        if (covered[e.job] == 0) touched.push_back(e.job);
        covered[e.job] += weight;  // zero-length or inverted events count as in SQL
        if (weight > 0) emit(static_cast<int64_t>(i), e.group, si, sample, weight);
      }
      active.resize(kept);
      while (next_job < jobs_by_first.size() && gpu.jobs[jobs_by_first[next_job]].first < end)
        active_jobs.push_back(jobs_by_first[next_job++]);
      kept = 0;
      for (uint32_t j : active_jobs) {
        const Job& job = gpu.jobs[j];
        if (job.last <= start) continue;
        active_jobs[kept++] = j;
        const int64_t untracked =
            std::max<int64_t>(0, std::min(end, job.last) - std::max(start, job.first) - covered[j]);
        if (untracked > 0) emit(-1, job.untracked_group, si, sample, untracked);
      }
      active_jobs.resize(kept);
      for (uint32_t j : touched) covered[j] = 0;
      touched.clear();
    }
  }
}

// ---- the tables ----

enum OverlapColumn {
  kEventId, kJobId, kLayer, kForward, kMetric, kTsMs, kValue, kIntervalMs, kWeightNs,
  kOverlapsUuid, kOverlapsAfter, kOverlapsThrough
};
enum MeanColumn {
  kMeanJobId, kMeanLayer, kMeanForward, kMeanMetric, kMeanState, kMeanFirstId, kMeanWindows, kMeansUuid
};
constexpr uint32_t kDurationRow = UINT32_MAX;  // MeanRow::series of a '_duration' row

struct PairRow {
  int64_t event;  // index into events, -1 untracked
  uint32_t group;
  uint32_t series;
  const Sample* sample;
  int64_t weight;
};

struct MeanRow {
  uint32_t group;
  uint32_t series;                   // kDurationRow: the group's durations
  std::optional<std::string> state;  // nullopt: every value NULL
};

struct JoinCursor : ConnectionCursor {
  using ConnectionCursor::ConnectionCursor;
  ~JoinCursor() {
    for (auto* v : arguments) sqlite3_value_free(v);
  }
  bool means = false;
  std::unique_ptr<GpuData> gpu;
  std::vector<PairRow> pairs;
  std::vector<MeanRow> states;
  int64_t windows = 0;
  size_t row = 0;
  std::vector<sqlite3_value*> arguments;  // copies, echoed by the hidden columns

  size_t size() const { return means ? states.size() : pairs.size(); }
};

template <bool kMeansTable>
int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  const char* schema =
      kMeansTable ? "CREATE TABLE x(job_id TEXT, layer TEXT, forward INTEGER, metric TEXT, state BLOB, "
                    "first_id INTEGER, windows INTEGER, uuid HIDDEN, after_ms HIDDEN, through_ms HIDDEN)"
                  : "CREATE TABLE x(event_id INTEGER, job_id TEXT, layer TEXT, forward INTEGER, metric TEXT, "
                    "ts_ms INTEGER, value REAL, interval_ms INTEGER, weight_ns INTEGER, "
                    "uuid HIDDEN, after_ms HIDDEN, through_ms HIDDEN)";
  return connect_table(db, aux, schema, /*does_io=*/false, out, error);
}

template <bool kMeansTable>
int xBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const char* name = kMeansTable ? kMeans : kOverlaps;
  const int rc = plan_arguments(vtab, info, name, kMeansTable ? int{kMeansUuid} : int{kOverlapsUuid}, kArguments);
  info->estimatedRows = kMeansTable ? 500 : 1000000;
  info->estimatedCost = 1e6;
  return rc;
}

template <bool kMeansTable>
int xOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  return guard_vtab(vtab, kMeansTable ? kMeans : kOverlaps, [&] {
    auto* cursor = new JoinCursor(static_cast<ConnectionTable*>(vtab));
    cursor->means = kMeansTable;
    *out = cursor;
    return SQLITE_OK;
  });
}

int xClose(sqlite3_vtab_cursor* cursor) {
  delete static_cast<JoinCursor*>(cursor);
  return SQLITE_OK;
}

std::optional<int64_t> bound_argument(sqlite3_value* value, const char* function, const char* argument) {
  if (!value || sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;
  const double d = required_double(value, function, argument);
  if (!std::isfinite(d)) throw argument_error(function, argument, "must be a finite number of milliseconds");
  if (sqlite3_value_type(value) == SQLITE_INTEGER) return sqlite3_value_int64(value);
  if (d >= 9.2e18 || d <= -9.2e18) throw argument_error(function, argument, "is out of range");
  return static_cast<int64_t>(std::floor(d));  // ts_ms > after or ts_ms <= through, for integer ts_ms
}

int xFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<JoinCursor*>(base);
  const char* name = cursor->means ? kMeans : kOverlaps;
  return guard_vtab(base->pVtab, name, [&] {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    for (auto* v : cursor->arguments) sqlite3_value_free(v);
    cursor->arguments.clear();
    for (auto* v : args) cursor->arguments.push_back(v ? sqlite3_value_dup(v) : nullptr);
    cursor->pairs.clear();
    cursor->states.clear();
    cursor->row = 0;
    const std::string uuid = required_text(args[0], name, "uuid");
    const auto after = bound_argument(args[1], name, "after_ms");
    const auto through = bound_argument(args[2], name, "through_ms");
    cursor->gpu = std::make_unique<GpuData>(cursor->connection->db(), name, uuid, after, through);
    const GpuData& gpu = *cursor->gpu;
    if (!cursor->means) {
      sweep(gpu, [&](int64_t event, uint32_t group, size_t series, const Sample& sample, int64_t weight) {
        cursor->pairs.push_back({event, group, static_cast<uint32_t>(series), &sample, weight});
      });
      return SQLITE_OK;
    }
    const size_t metrics = gpu.series.size();
    std::vector<MeanState> states(gpu.groups.size() * metrics, MeanState{});
    std::vector<char> seen(states.size(), 0);
    // Series are independent (each writes its own states), so up to kThreads sweep them at once.
    const size_t threads = std::max<size_t>(1, std::min<size_t>({kThreads, metrics,
                                                                 std::thread::hardware_concurrency()}));
    std::vector<std::exception_ptr> failures(threads);
    auto work = [&](size_t first) {
      try {
        sweep(gpu, [&](int64_t, uint32_t group, size_t series, const Sample& sample, int64_t weight) {
          seen[group * metrics + series] = 1;
          if (sample.null) return;
          if (!std::isfinite(sample.value))
            throw Error(std::string(name) + ": value of " + gpu.series[series].metric + " at ts_ms " +
                        std::to_string(sample.ts_ms) + " is not finite (pp_mean takes finite values)");
          states[group * metrics + series].add(sample.value, static_cast<double>(weight) / 1e9);
        }, first, threads);
      } catch (...) {
        failures[first] = std::current_exception();
      }
    };
    std::vector<std::thread> workers;
    for (size_t t = 1; t < threads; ++t) workers.emplace_back(work, t);
    work(0);
    for (auto& w : workers) w.join();
    for (const auto& failure : failures)
      if (failure) std::rethrow_exception(failure);
    for (uint32_t g = 0; g < gpu.groups.size(); ++g) {
      for (uint32_t m = 0; m < metrics; ++m)
        if (seen[g * metrics + m]) {
          const MeanState& state = states[g * metrics + m];
          cursor->states.push_back({g, m, state.empty() ? std::nullopt : std::optional(encode_mean_state(state))});
        }
      if (!gpu.durations[g].empty()) cursor->states.push_back({g, kDurationRow, encode_mean_state(gpu.durations[g])});
    }
    cursor->windows = cursor->states.empty() ? 0 : gpu.windows();
    return SQLITE_OK;
  });
}

int xNext(sqlite3_vtab_cursor* base) {
  ++static_cast<JoinCursor*>(base)->row;
  return SQLITE_OK;
}

int xEof(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<JoinCursor*>(base);
  return cursor->row >= cursor->size();
}

void result_string(sqlite3_context* ctx, const std::string& s) {
  sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

void result_argument(sqlite3_context* ctx, const JoinCursor& cursor, size_t argument) {
  if (argument < cursor.arguments.size() && cursor.arguments[argument])
    sqlite3_result_value(ctx, cursor.arguments[argument]);
  else
    sqlite3_result_null(ctx);
}

int xColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<JoinCursor*>(base);
  const GpuData& gpu = *cursor->gpu;
  if (cursor->means) {
    const MeanRow& r = cursor->states[cursor->row];
    const Group& group = gpu.groups[r.group];
    switch (column) {
      case kMeanJobId: result_string(ctx, gpu.job_id(r.group)); break;
      case kMeanLayer: result_string(ctx, group.layer); break;
      case kMeanForward: sqlite3_result_int(ctx, group.forward); break;
      case kMeanMetric:
        if (r.series == kDurationRow)
          sqlite3_result_text(ctx, "_duration", -1, SQLITE_STATIC);
        else
          result_string(ctx, gpu.series[r.series].metric);
        break;
      case kMeanState:
        if (r.state)
          sqlite3_result_blob(ctx, r.state->data(), static_cast<int>(r.state->size()), SQLITE_TRANSIENT);
        else
          sqlite3_result_null(ctx);
        break;
      case kMeanFirstId:
        if (r.series == kDurationRow)
          sqlite3_result_int64(ctx, gpu.first_id[r.group]);
        else
          sqlite3_result_null(ctx);
        break;
      case kMeanWindows: sqlite3_result_int64(ctx, cursor->windows); break;
      default: result_argument(ctx, *cursor, static_cast<size_t>(column - kMeansUuid)); break;
    }
    return SQLITE_OK;
  }
  const PairRow& r = cursor->pairs[cursor->row];
  const Group& group = gpu.groups[r.group];
  const Series& series = gpu.series[r.series];
  switch (column) {
    case kEventId:
      if (r.event < 0)
        sqlite3_result_null(ctx);
      else
        sqlite3_result_int64(ctx, gpu.events[static_cast<size_t>(r.event)].id);
      break;
    case kJobId: result_string(ctx, gpu.job_id(r.group)); break;
    case kLayer: result_string(ctx, group.layer); break;
    case kForward: sqlite3_result_int(ctx, group.forward); break;
    case kMetric: result_string(ctx, series.metric); break;
    case kTsMs: sqlite3_result_int64(ctx, r.sample->ts_ms); break;
    case kValue:
      if (r.sample->null)
        sqlite3_result_null(ctx);
      else
        sqlite3_result_double(ctx, r.sample->value);
      break;
    case kIntervalMs: sqlite3_result_int64(ctx, series.interval_ms); break;
    case kWeightNs: sqlite3_result_int64(ctx, r.weight); break;
    default: result_argument(ctx, *cursor, static_cast<size_t>(column - kOverlapsUuid)); break;
  }
  return SQLITE_OK;
}

int xRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(static_cast<JoinCursor*>(base)->row);
  return SQLITE_OK;
}

template <bool kMeansTable>
sqlite3_module make_module() {
  sqlite3_module m{};  // eponymous: no xCreate/xDestroy, read-only
  m.xConnect = xConnect<kMeansTable>;
  m.xBestIndex = xBestIndex<kMeansTable>;
  m.xDisconnect = disconnect_table;
  m.xOpen = xOpen<kMeansTable>;
  m.xClose = xClose;
  m.xFilter = xFilter;
  m.xNext = xNext;
  m.xEof = xEof;
  m.xColumn = xColumn;
  m.xRowid = xRowid;
  return m;
}

const sqlite3_module kOverlapsModule = make_module<false>();
const sqlite3_module kMeansModule = make_module<true>();

}  // namespace

// Called by register_attribution (src/attribution/pp_refresh.cpp): the fold (src/attribution/sql/fold.sql) uses them.
int register_interval_join(const Registration& r) {
  int rc = create_connection_module(r, kOverlaps, &kOverlapsModule);
  if (rc == SQLITE_OK) rc = create_connection_module(r, kMeans, &kMeansModule);
  return rc;
}

}  // namespace pp
