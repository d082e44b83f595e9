#include "attribution/gpu_timeline.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "core/statement.hpp"

namespace pp {
namespace {

constexpr int64_t kNsPerMsInt = 1000000;
constexpr const char* kUntracked = "(untracked)";
constexpr double kPollWanderNs = 100000;  // 0.1 ms

// How far the estimator's timing shift moves windows: the uncertainty of the GPU's offset over
// all its stretches. Each stretch's offset is estimated from its own samples, so their errors are
// independent and their mean is known sqrt(n) times better than one of them; a stretch whose
// timing is unknown (half a window) still dominates. DCGM's grid and the driver's apart.
struct TimingShift {
  double dcgm_ns = 0, driver_ns = 0;
};

// A stored sample time of the GPU and the window it describes (a row of pp_windows).
struct StoredWindow {
  int64_t ts_ms, end_ns;
  std::optional<int64_t> util_end_ns;
  bool util_copy, copy;
};

class TimelineReader {
 public:
  TimelineReader(sqlite3* db, GpuTimeline& gpu) : db_(db), gpu_(gpu) {}

  void read_series(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms,
                   int timing_shift, bool for_shifts = false) {
    Statement series(db_,
                     "SELECT i.metric, i.interval_ms, coalesce(m.kind, 'window') FROM main.pp_intervals AS i "
                     "LEFT JOIN main.pp_metrics AS m USING (metric) WHERE i.uuid = :uuid ORDER BY i.metric");
    series.bind(":uuid", uuid);
    while (series.step()) {
      if (series.column_null(1)) continue;
      TimelineSeries s;
      s.metric = series.column_text(0);
      s.window_ns = series.column_double(1) * static_cast<double>(kNsPerMsInt);
      const std::string kind = series.column_text(2);
      s.kind = kind == "instant" ? TimelineSeries::kInstant
               : kind == "driver_window" ? TimelineSeries::kDriverWindow
                                         : TimelineSeries::kWindow;
      gpu_.series.push_back(std::move(s));
    }
    const TimingShift by = timing_shift || for_shifts ? read_timing(uuid) : TimingShift{};
    if (for_shifts) {
      gpu_.shift_dcgm_ns = by.dcgm_ns;
      gpu_.shift_driver_ns = by.driver_ns;
    }
    // The GPU's windows once, then each metric's samples merged with them by stored time (both
    // in ts_ms order, index ranges): a join would look each sample's window up in the index,
    // which was most of the fold's time.
    const std::vector<StoredWindow> windows = read_windows(uuid, after_ms, through_ms);
    Statement samples(db_,
                      "SELECT ts_ms, value FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric "
                      "AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    samples.bind(":uuid", uuid);
    samples.bind(":after", after_ms.value_or(INT64_MIN));
    samples.bind(":through", through_ms.value_or(INT64_MAX));
    for (auto& s : gpu_.series) {
      samples.bind(":metric", s.metric);
      const bool driver = s.kind == TimelineSeries::kDriverWindow;
      auto window = windows.begin();
      while (samples.step()) {
        const int64_t ts = samples.column_int64(0);
        while (window != windows.end() && window->ts_ms < ts) ++window;
        // Not aligned yet, or a copy of a window already counted: left out.
        if (window == windows.end() || window->ts_ms != ts || window->copy) continue;
        const bool null = samples.column_null(1);
        const bool own_grid = driver && window->util_end_ns;
        if (driver && !own_grid) ++s.off_own_grid;
        const int64_t end = own_grid ? *window->util_end_ns : window->end_ns;
        // A driver window read by two DCGM samples is one window: its second reading is left out.
        if (own_grid && window->util_copy) continue;
        const int64_t moved = std::llround(timing_shift * (own_grid ? by.driver_ns : by.dcgm_ns));
        s.samples.push_back({ts, end + moved, null ? 0.0 : samples.column_double(1), null, own_grid});
      }
      const auto by_end = [](const TimelineSample& a, const TimelineSample& b) { return a.end_ns < b.end_ns; };
      if (!std::is_sorted(s.samples.begin(), s.samples.end(), by_end))
        std::stable_sort(s.samples.begin(), s.samples.end(), by_end);
      if (!s.samples.empty()) {
        const int64_t reach = s.kind == TimelineSeries::kInstant ? 0 : static_cast<int64_t>(s.window_ns);
        // (For later shifts, as far as the largest move reaches.)
        const int64_t move = for_shifts ? std::llround(std::max(by.dcgm_ns, by.driver_ns)) + 1 : 0;
        lo_ns_ = std::min(lo_ns_, s.samples.front().end_ns - reach - move);
        hi_ns_ = std::max(hi_ns_, s.samples.back().end_ns + 1 + move);
      }
    }
  }

  // The GPU's events in t_start_ns order (but those whose times cannot be a call, which an
  // earlier version imported; kMaxEventNs is 1 << 62; the fold step warns about them): every one
  // counts for its job's span; those that can overlap a window [lo_ns_, hi_ns_) are kept for the
  // sweep; unfolded ones starting by through_ms give their durations.
  //
  // A fold (bounded: after_ms or through_ms given) reads only what it needs, so that its cost
  // does not grow with the GPU's history: the spans of the folded events from pp_gpu_spans, the
  // unfolded events (their partial index), and the folded events that can reach into the
  // windows (an index range from the window range's start less the longest folded event). The
  // estimator and the views (unbounded) read every event, as does a fold where pp_gpu_spans does
  // not know a span's longest event.
  void read_events(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms) {
    const int64_t through_ns = through_ms && *through_ms < INT64_MAX / kNsPerMsInt ? *through_ms * kNsPerMsInt : INT64_MAX;
    // (t_start_ns >= 0 is said in each query: with a second lower bound on t_start_ns SQLite may
    // take this one for the index range, and read the GPU's history from its first event.)
    constexpr const char* kColumns =
        "SELECT t_start_ns, t_end_ns, job_id, id, layer, forward, folded, layer_type FROM main.pp_events "
        "WHERE gpu_uuid = :uuid AND t_end_ns >= t_start_ns AND t_end_ns <= (1 << 62)";
    const std::optional<int64_t> longest = (after_ms || through_ms) ? read_folded_spans(uuid) : std::nullopt;
    if (!longest) {
      Statement all(db_, std::string(kColumns) + " AND t_start_ns >= 0 ORDER BY t_start_ns");
      all.bind(":uuid", uuid);
      while (all.step()) take_event(all, through_ns);
      widen_to_folded_spans(uuid);
    } else {
      Statement unfolded(db_, std::string(kColumns) + " AND t_start_ns >= 0 AND folded = 0 ORDER BY t_start_ns");
      unfolded.bind(":uuid", uuid);
      while (unfolded.step()) take_event(unfolded, through_ns);
      if (lo_ns_ < hi_ns_) {
        Statement reaching(db_, std::string(kColumns) +
                                    " AND t_start_ns >= :from AND t_start_ns < :to AND folded <> 0 ORDER BY t_start_ns");
        reaching.bind(":uuid", uuid);
        reaching.bind(":from", std::max<int64_t>(lo_ns_ - *longest, 0));
        reaching.bind(":to", hi_ns_);
        while (reaching.step()) take_event(reaching, through_ns);
      }
    }
    // The untracked row of each job is the group (job, '(untracked)', 0), as in SQL.
    std::string key;
    for (uint32_t j = 0; j < gpu_.jobs.size(); ++j) {
      key.assign(reinterpret_cast<const char*>(&j), sizeof j);
      key.push_back(0);
      key.append(kUntracked);
      gpu_.jobs[j].untracked_group = group_for(key, j, kUntracked, 0, kUntracked);
    }
    // ORDER BY t_start_ns is served by the index; the two reads of a fold are merged here.
    const auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start < b.start; };
    if (!std::is_sorted(gpu_.events.begin(), gpu_.events.end(), by_start))
      std::stable_sort(gpu_.events.begin(), gpu_.events.end(), by_start);
  }

 private:
  std::vector<StoredWindow> read_windows(const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms) {
    Statement read(db_,
                   "SELECT ts_ms, end_ns, util_end_ns, util_copy, copy_of_ms IS NOT NULL FROM main.pp_windows "
                   "WHERE uuid = :uuid AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    read.bind(":uuid", uuid);
    read.bind(":after", after_ms.value_or(INT64_MIN));
    read.bind(":through", through_ms.value_or(INT64_MAX));
    std::vector<StoredWindow> out;
    while (read.step())
      out.push_back({read.column_int64(0), read.column_int64(1),
                     read.column_null(2) ? std::nullopt : std::optional<int64_t>(read.column_int64(2)),
                     read.column_int64(3) != 0, read.column_int64(4) != 0});
    return out;
  }

  // Each job's span of folded events from pp_gpu_spans, as jobs of the timeline, and the longest
  // folded event of the spans that reach the windows; nullopt where a span does not know its
  // longest event (negative: not one pp_gpu_spans holds; read everything then).
  std::optional<int64_t> read_folded_spans(const std::string& uuid) {
    Statement spans(db_, "SELECT job_id, first_ns, last_ns, longest_ns FROM main.pp_gpu_spans WHERE uuid = :uuid");
    spans.bind(":uuid", uuid);
    int64_t longest = 0;
    std::vector<TimelineJob> jobs;
    while (spans.step()) {
      if (spans.column_int64(3) < 0) return std::nullopt;
      jobs.push_back({spans.column_text(0), spans.column_int64(1), spans.column_int64(2), 0});
      if (spans.column_int64(2) > lo_ns_) longest = std::max(longest, spans.column_int64(3));
    }
    for (TimelineJob& job : jobs) job_for(job.job_id, job.first, job.last);
    return longest;
  }

  // Events the retention setting dropped (event_retention_minutes) still count for their job's
  // span: a window after them in which the job ran no layer is its untracked time, as in the
  // fold. Without retention the spans are those of the events read (every folded event is in
  // pp_gpu_spans once), so nothing changes. A job none of whose events is left is not added.
  void widen_to_folded_spans(const std::string& uuid) {
    Statement spans(db_, "SELECT job_id, first_ns, last_ns FROM main.pp_gpu_spans WHERE uuid = :uuid "
                         "AND first_ns >= 0 AND last_ns >= first_ns AND last_ns <= (1 << 62)");
    spans.bind(":uuid", uuid);
    while (spans.step()) {
      const auto found = job_index_.find(spans.column_text(0));
      if (found == job_index_.end()) continue;
      TimelineJob& job = gpu_.jobs[found->second];
      job.first = std::min(job.first, spans.column_int64(1));
      job.last = std::max(job.last, spans.column_int64(2));
    }
  }

  // The index of a job in the timeline, added with the span [first, last] if new, else widened.
  uint32_t job_for(std::string_view job_id, int64_t first, int64_t last) {
    if (last_job_ == UINT32_MAX || last_job_id_ != job_id) {
      last_job_id_.assign(job_id.data(), job_id.size());
      auto [it, added] = job_index_.emplace(last_job_id_, static_cast<uint32_t>(gpu_.jobs.size()));
      if (added) gpu_.jobs.push_back({last_job_id_, first, last, 0});
      last_job_ = it->second;
    }
    TimelineJob& job = gpu_.jobs[last_job_];
    job.first = std::min(job.first, first);
    job.last = std::max(job.last, last);
    return last_job_;
  }

  // One row of a read_events query.
  void take_event(Statement& row, int64_t through_ns) {
    const int64_t start = row.column_int64(0);
    const int64_t end = row.column_int64(1);
    const uint32_t job = job_for(row.column_view(2), start, end);
    const bool in_range = start < hi_ns_ && end > lo_ns_;  // may overlap a window of the range
    const bool unfolded = start <= through_ns && row.column_int64(6) == 0;
    if (!in_range && !unfolded) return;
    const std::string_view layer = row.column_view(4);
    const int forward = row.column_int64(5) != 0 ? 1 : 0;
    key_.assign(reinterpret_cast<const char*>(&job), sizeof job);
    key_.push_back(static_cast<char>(forward));
    key_.append(layer.data(), layer.size());
    const uint32_t group = group_for(key_, job, layer, forward, row.column_view(7));
    const int64_t id = row.column_int64(3);
    if (in_range) gpu_.events.push_back({start, end, id, group, job});
    if (unfolded) {
      gpu_.durations[group].add(static_cast<double>(end - start) / 1e9);
      gpu_.first_id[group] = std::min(gpu_.first_id[group], id);
    }
  }

  uint32_t group_for(const std::string& key, uint32_t job, std::string_view layer, int forward,
                     std::string_view layer_type) {
    const auto found = group_index_.find(key);  // (emplace would allocate a node for every event)
    if (found != group_index_.end()) return found->second;
    const auto group = static_cast<uint32_t>(gpu_.groups.size());
    group_index_.emplace(key, group);
    gpu_.groups.push_back({job, std::string(layer), forward, std::string(layer_type)});
    gpu_.durations.push_back(MeanState{});
    gpu_.first_id.push_back(INT64_MAX);
    return group;
  }

  TimingShift read_timing(const std::string& uuid) {
    Statement read(db_, "SELECT count(*), sum(timing_ns * timing_ns), sum(coalesce(util_timing_ns, 0) * coalesce(util_timing_ns, 0)) "
                        "FROM main.pp_alignment WHERE uuid = :uuid");
    read.bind(":uuid", uuid);
    TimingShift out;
    if (read.step() && read.column_int64(0) > 0) {
      const double n = static_cast<double>(read.column_int64(0));
      // Never below a fraction of how far DCGM's own polls stray from the straight grid the
      // windows are put on (its scheduler's lateness, up to some 0.2 ms): no stored time shows
      // that, and at low noise a 0.1 ms layer's value moves with it (8% at zero noise). Nor does
      // it shrink with the stretches: shrinking as 0.1 ms x sqrt(3 / n), it let a 6-hour
      // realistic recording mark a 0.2 ms layer identified and 6% off after an hour.
      out.dcgm_ns = std::max(std::sqrt(read.column_double(1)) / n, kPollWanderNs);
      out.driver_ns = std::max(std::sqrt(read.column_double(2)) / n, kPollWanderNs);
    }
    return out;
  }

  sqlite3* db_;
  GpuTimeline& gpu_;
  std::unordered_map<std::string, uint32_t> group_index_;
  std::unordered_map<std::string, uint32_t> job_index_;
  uint32_t last_job_ = UINT32_MAX;  // the job of the previous row (rows come in runs of one job)
  std::string last_job_id_, key_;
  int64_t lo_ns_ = INT64_MAX, hi_ns_ = INT64_MIN;
};

}  // namespace

int64_t GpuTimeline::windows() const {
  // Usually every series of a GPU has the same timestamps (one scrape, all fields).
  const auto same_times = [](const TimelineSeries& a, const TimelineSeries& b) {
    return a.samples.size() == b.samples.size() &&
           std::equal(a.samples.begin(), a.samples.end(), b.samples.begin(),
                      [](const TimelineSample& x, const TimelineSample& y) { return x.ts_ms == y.ts_ms; });
  };
  if (series.empty()) return 0;
  if (std::all_of(series.begin(), series.end(), [&](const TimelineSeries& s) { return same_times(s, series[0]); }))
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

GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms, int timing_shift) {
  GpuTimeline gpu;
  TimelineReader reader(db, gpu);
  reader.read_series(uuid, after_ms, through_ms, timing_shift);
  reader.read_events(uuid, after_ms, through_ms);
  return gpu;
}

GpuTimeline read_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms) {
  GpuTimeline gpu;
  TimelineReader reader(db, gpu);
  reader.read_series(uuid, after_ms, through_ms, 0, true);
  reader.read_events(uuid, after_ms, through_ms);
  return gpu;
}

GpuTimeline shifted_timeline(const GpuTimeline& gpu, int timing_shift) {
  GpuTimeline out = gpu;
  const auto by_end = [](const TimelineSample& a, const TimelineSample& b) { return a.end_ns < b.end_ns; };
  for (TimelineSeries& s : out.series) {
    for (TimelineSample& sample : s.samples)  // as read_series moves them
      sample.end_ns += std::llround(timing_shift * (sample.driver_grid ? gpu.shift_driver_ns : gpu.shift_dcgm_ns));
    if (!std::is_sorted(s.samples.begin(), s.samples.end(), by_end))
      std::stable_sort(s.samples.begin(), s.samples.end(), by_end);
  }
  return out;
}

}  // namespace pp
