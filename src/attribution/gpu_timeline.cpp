#include "attribution/gpu_timeline.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "attribution/event_store.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

constexpr int64_t kNsPerMsInt = 1000000;
constexpr const char* kUntracked = "(untracked)";
constexpr double kPollWanderNs = 100000;  // 0.1 ms

// How far the estimator's timing shift moves windows: the uncertainty of the offset over a
// job's stretches (those within the window's horizon, timing_horizon_ms). Each stretch's offset
// is estimated from its own samples, so their errors are independent and their mean is known
// sqrt(n) times better than one of them (each weighing as much of the job's span as it covers);
// a stretch whose timing is unknown (half a window) still dominates. DCGM's grid and the
// driver's apart.
struct TimingShift {
  double dcgm_ns = 0, driver_ns = 0;
};

// A stretch of pp_alignment that has layers in it: the window ends of its stored times and how
// far its offset is known. (A stretch without layers has its offset from its neighbours and no
// timing of its own: it says nothing about how well a job's windows are placed.)
struct StretchTiming {
  int64_t from_ms;  // its first stored time
  int64_t first_end_ns, last_end_ns;
  double dcgm_ns, driver_ns;
  std::optional<double> window_ns, util_window_ns;  // the lengths its windows keep (pp_alignment)
  int64_t reach_ns = 0;  // how far its longest window reaches back from its end (place_timing)
};

// How much of a job's span [span_first, span_last] (ns) a stretch's windows cover: the share of
// the job's windows whose placement its offset decides.
double overlap_ns(const StretchTiming& s, int64_t span_first, int64_t span_last) {
  const double from = std::max(static_cast<double>(s.first_end_ns) - static_cast<double>(s.reach_ns),
                               static_cast<double>(span_first));
  const double to = std::min(static_cast<double>(s.last_end_ns), static_cast<double>(span_last));
  return std::max(0.0, to - from);
}

// The stretches' timings combined as independent errors, never below the floor (read_stretches).
// Each weighs as much of the job's span as its windows cover (span: the job's first and last ns;
// none: every stretch alike): an offset error moves only its own stretch's windows, so a stretch
// that holds a job's last seconds and then the idle GPU (its offset poorly known: most of its
// windows have no layer to place them by) moves few of the job's windows.
TimingShift combined_timing(std::vector<StretchTiming>::const_iterator first,
                            std::vector<StretchTiming>::const_iterator last,
                            std::optional<std::pair<int64_t, int64_t>> span) {
  double dcgm = 0, driver = 0, total = 0;
  for (auto it = first; it != last; ++it) {
    const double w = span ? overlap_ns(*it, span->first, span->second) : 1.0;
    dcgm += w * w * it->dcgm_ns * it->dcgm_ns;
    driver += w * w * it->driver_ns * it->driver_ns;
    total += w;
  }
  // (A span that none of its stretches' windows reach, e.g. one of reversed ends: every stretch alike.)
  if (span && !(total > 0)) return combined_timing(first, last, std::nullopt);
  if (total == 0) return {kPollWanderNs, kPollWanderNs};
  // Never below a fraction of how far DCGM's own polls stray from the straight grid the windows
  // are put on (its scheduler's lateness, up to some 0.2 ms): no stored time shows that, and at
  // low noise a 0.1 ms layer's value moves with it (8% at zero noise). Nor does it shrink with
  // the stretches: shrinking as 0.1 ms x sqrt(3 / n), it let a 6-hour realistic recording mark a
  // 0.2 ms layer identified and 6% off after an hour.
  return {std::max(std::sqrt(dcgm) / total, kPollWanderNs), std::max(std::sqrt(driver) / total, kPollWanderNs)};
}

// A stored sample time of the GPU and the window it describes (a row of pp_windows).
struct StoredWindow {
  int64_t ts_ms, end_ns;
  std::optional<int64_t> util_end_ns;
  bool util_copy, copy;
  // The lengths its stretch was aligned with where the data had not told them yet (pp_windows).
  std::optional<double> window_ms, util_window_ms;
};

// How far a sample of the series covers time before and after its end_ns, as the sweep of
// interval_sweep.hpp takes it: a window (end - window, end], an instant spread over
// kInstantSpreadNs around it.
struct SampleReach {
  int64_t before, after;
};
SampleReach reach_of(const TimelineSeries& s) {
  if (s.kind == TimelineSeries::kInstant) return {kInstantSpreadNs / 2, kInstantSpreadNs / 2};
  return {s.longest_window_ns(), 0};
}

void sort_by_end(TimelineSeries& s) {
  const auto by_end = [](const TimelineSample& a, const TimelineSample& b) { return a.end_ns < b.end_ns; };
  if (!std::is_sorted(s.samples.begin(), s.samples.end(), by_end)) std::stable_sort(s.samples.begin(), s.samples.end(), by_end);
}

}  // namespace

void move_windows(GpuTimeline& gpu, int timing_shift) {
  for (TimelineSeries& s : gpu.series) {
    for (TimelineSample& sample : s.samples) sample.end_ns += timing_shift * sample.shift_ns;
    sort_by_end(s);
  }
}

namespace {

// Reads a GPU's timeline: read_series and read_events query the database (the connection's
// thread), build() decodes what they copied and places the windows (any thread).
class TimelineReader : public TimelineFetch {
 public:
  TimelineReader(sqlite3* db, int timing_shift, bool for_shifts, int64_t horizon_ms)
      : db_(db), layers_(db, "main"), timing_shift_(timing_shift), for_shifts_(for_shifts), horizon_ms_(horizon_ms) {}

  GpuTimeline build() override {
    if (built_) throw std::logic_error("a timeline is built once");
    built_ = true;
    build_events();
    place_timing(timing_shift_, for_shifts_, horizon_ms_);
    return std::move(gpu_);
  }

  void read_series(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms,
                   int timing_shift, bool for_shifts = false) {
    Statement series(db_,
                     "SELECT i.metric, i.interval_ms, coalesce(m.kind, 'window'), i.source IN ('median', 'estimated') "
                     "FROM main.pp_intervals AS i LEFT JOIN main.pp_metrics AS m USING (metric) WHERE i.uuid = :uuid "
                     "ORDER BY i.metric");
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
      from_data_.push_back(series.column_int64(3) != 0);
    }
    // Windows are moved once the jobs' spans are known (place_timing); until then the events
    // read are those that windows moved by the farthest any job's shift can take them reach.
    int64_t move = 0;
    if (timing_shift || for_shifts) {
      read_stretches(uuid);
      double farthest = kPollWanderNs;
      for (const StretchTiming& s : stretches_) farthest = std::max({farthest, s.dcgm_ns, s.driver_ns});
      move = std::llround(farthest) + 1;  // no job's shift, rounded to the ns, goes further
    }
    farthest_move_ns_ = move;
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
    for (size_t si = 0; si < gpu_.series.size(); ++si) {
      TimelineSeries& s = gpu_.series[si];
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
        const int64_t end = own_grid ? *window->util_end_ns : window->end_ns;
        // A driver window read by two DCGM samples is one window: its second reading is left out.
        if (own_grid && window->util_copy) continue;
        s.samples.push_back({ts, end, null ? 0.0 : samples.column_double(1), null, own_grid});
        const std::optional<double>& aligned_with = driver ? window->util_window_ms : window->window_ms;
        if (aligned_with && from_data_[si])
          s.samples.back().window = window_index(s, *aligned_with * static_cast<double>(kNsPerMsInt));
      }
      sort_by_end(s);
      if (!s.samples.empty()) {
        const SampleReach reach = reach_of(s);
        lo_ns_ = std::min(lo_ns_, s.samples.front().end_ns - reach.before - move);
        hi_ns_ = std::max(hi_ns_, s.samples.back().end_ns + reach.after + 1 + move);
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
  //
  // With `copy`, the blocks' rows are copied for build() to decode (fetch_gpu_timeline, whose
  // build() runs on another thread); else they are decoded as they are read (read_gpu_timeline,
  // which then holds one block at a time).
  void read_events(const std::string& uuid, std::optional<int64_t> after_ms, std::optional<int64_t> through_ms,
                   bool copy) {
    through_ns_ = through_ms && *through_ms < INT64_MAX / kNsPerMsInt ? *through_ms * kNsPerMsInt : INT64_MAX;
    const std::optional<int64_t> longest = (after_ms || through_ms) ? read_folded_spans(uuid) : std::nullopt;
    std::vector<EventScan> scans;
    if (!longest) {
      scans.push_back({uuid, int64_t{0}, std::nullopt, EventScan::kAny});
      read_spans_to_widen(uuid);
    } else {
      scans.push_back({uuid, int64_t{0}, std::nullopt, EventScan::kUnfolded});
      if (lo_ns_ < hi_ns_) scans.push_back({uuid, std::max<int64_t>(lo_ns_ - *longest, 0), hi_ns_ - 1, EventScan::kFolded});
    }
    if (copy) {
      for (const EventScan& scan : scans) copied_.push_back({scan, fetch_event_blocks(db_, "main", scan)});
      layers_.reload();  // (after the fetches, which first write what pp_events' statements buffered)
      return;
    }
    begin_events();
    for (const EventScan& scan : scans) {
      scan_bounds_.push_back(gpu_.events.size());
      scan_events(db_, "main", scan, layers_, [this](const ScannedEvent& e) { take(e); });
    }
    decoded_ = true;
  }

  // The events of read_events, decoded (the copied blocks freed as they are), and each job's
  // untracked group.
  void build_events() {
    if (!decoded_) {
      begin_events();
      for (auto& [scan, blocks] : copied_) {
        scan_bounds_.push_back(gpu_.events.size());
        visit_event_blocks(blocks, scan, layers_, [this](const ScannedEvent& e) { take(e); });
        std::vector<FetchedBlock>().swap(blocks);
      }
      copied_.clear();
    }
    widen_to_folded_spans();
    // The untracked row of each job is the group (job, '(untracked)', 0), as in SQL.
    std::string key;
    for (uint32_t j = 0; j < gpu_.jobs.size(); ++j) {
      key.assign(reinterpret_cast<const char*>(&j), sizeof j);
      key.push_back(0);
      key.append(kUntracked);
      gpu_.jobs[j].untracked_group = group_for(key, j, kUntracked, 0, kUntracked);
    }
    sort_events();
  }

  // Gives every sample the size of its timing shift: that of the jobs whose span its window
  // overlaps (the largest, where several), each job's from its stretches that begin within
  // horizon_ms of the sample's stored time (timing_horizon_ms), so that one job's well placed
  // history does not vouch for another's uncertain windows. A job none of whose stretches there
  // has layers, and a window of no job's span, take the GPU's stretches within the horizon.
  // Then moves every window by timing_shift times it.
  void place_timing(int timing_shift, bool for_shifts, int64_t horizon_ms) {
    if (!timing_shift && !for_shifts) return;
    // Each stretch's reach: the longest of its windows, each series' as the sweep takes it (not
    // which windows this read holds, so that every read gives a job the same stretches).
    for (StretchTiming& stretch : stretches_) {
      stretch.reach_ns = 0;
      for (size_t si = 0; si < gpu_.series.size(); ++si) {
        const TimelineSeries& s = gpu_.series[si];
        const std::optional<double>& kept =
            s.kind == TimelineSeries::kDriverWindow ? stretch.util_window_ns : stretch.window_ns;
        const int64_t reach = s.kind == TimelineSeries::kInstant ? kInstantSpreadNs / 2
                              : kept && from_data_[si]           ? std::llround(*kept)
                                                                 : std::llround(s.window_ns);
        stretch.reach_ns = std::max(stretch.reach_ns, reach);
      }
    }
    // Per job, its stretches [first, last): those that hold a window of its span.
    std::vector<std::pair<size_t, size_t>> job_stretches;
    std::vector<uint32_t> by_first(gpu_.jobs.size());
    for (uint32_t j = 0; j < gpu_.jobs.size(); ++j) {
      job_stretches.push_back(stretches_of_span(gpu_.jobs[j].first, gpu_.jobs[j].last));
      by_first[j] = j;
    }
    std::sort(by_first.begin(), by_first.end(),
              [&](uint32_t a, uint32_t b) { return gpu_.jobs[a].first < gpu_.jobs[b].first; });
    // The farthest a move can take a sample: the largest timing of the stretches in its horizon.
    std::vector<int64_t> farthest_before(stretches_.size() + 1, static_cast<int64_t>(std::llround(kPollWanderNs)) + 1);
    for (size_t i = 0; i < stretches_.size(); ++i)
      farthest_before[i + 1] =
          std::max(farthest_before[i],
                   static_cast<int64_t>(std::llround(std::max(stretches_[i].dcgm_ns, stretches_[i].driver_ns))) + 1);
    // By stretches [first, last) and job (kNoJob: every stretch alike).
    constexpr uint32_t kNoJob = UINT32_MAX;
    std::map<std::tuple<size_t, size_t, uint32_t>, TimingShift> combined;
    const auto timing = [&](size_t first, size_t last, uint32_t job) {
      auto [it, added] = combined.try_emplace({first, last, job});
      if (added)
        it->second = combined_timing(stretches_.begin() + static_cast<std::ptrdiff_t>(first),
                                     stretches_.begin() + static_cast<std::ptrdiff_t>(last),
                                     job == kNoJob ? std::nullopt
                                                   : std::optional(std::pair(gpu_.jobs[job].first, gpu_.jobs[job].last)));
      return it->second;
    };
    for (TimelineSeries& s : gpu_.series) {
      const SampleReach covers = reach_of(s);
      const bool instant = s.kind == TimelineSeries::kInstant;
      // A sweep in end order: jobs enter as their span starts before what a sample covers ends
      // and leave once it ends before what any later sample covers starts, each as far as a
      // move can take the sample (one moved into a job's span moves as that job's windows do).
      std::vector<uint32_t> active;
      size_t next = 0;
      for (TimelineSample& sample : s.samples) {
        // The stretches within the horizon: those that begin before the sample's stored time plus it.
        const size_t known = static_cast<size_t>(
            std::partition_point(stretches_.begin(), stretches_.end(),
                                 [&](const StretchTiming& t) {
                                   return t.from_ms < sample.ts_ms || t.from_ms - sample.ts_ms < horizon_ms;
                                 }) -
            stretches_.begin());
        const int64_t move = farthest_before[known];
        const int64_t before = instant ? covers.before : std::llround(s.window_of(sample));
        const int64_t from = sample.end_ns - before - move;
        const int64_t to = sample.end_ns + covers.after + farthest_move_ns_;
        const int64_t earliest = sample.end_ns - covers.before - farthest_move_ns_;
        while (next < by_first.size() && gpu_.jobs[by_first[next]].first < to) active.push_back(by_first[next++]);
        active.erase(
            std::remove_if(active.begin(), active.end(), [&](uint32_t j) { return gpu_.jobs[j].last <= earliest; }),
            active.end());
        const auto pick = [&](const TimingShift& t) { return sample.driver_grid ? t.driver_ns : t.dcgm_ns; };
        bool in_a_span = false;
        double shift = 0;
        for (uint32_t j : active)
          if (gpu_.jobs[j].last > from && gpu_.jobs[j].first < sample.end_ns + covers.after + move) {
            in_a_span = true;
            const size_t first = job_stretches[j].first, last = std::min(job_stretches[j].second, known);
            shift = std::max(shift, pick(first < last ? timing(first, last, j) : timing(0, known, kNoJob)));
          }
        sample.shift_ns = std::llround(in_a_span ? shift : pick(timing(0, known, kNoJob)));
      }
    }
    if (timing_shift) move_windows(gpu_, timing_shift);
  }

 private:
  std::vector<StoredWindow> read_windows(const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms) {
    Statement read(db_,
                   "SELECT ts_ms, end_ns, util_end_ns, util_copy, copy_of_ms IS NOT NULL, window_ms, util_window_ms "
                   "FROM main.pp_windows WHERE uuid = :uuid AND ts_ms > :after AND ts_ms <= :through ORDER BY ts_ms");
    read.bind(":uuid", uuid);
    read.bind(":after", after_ms.value_or(INT64_MIN));
    read.bind(":through", through_ms.value_or(INT64_MAX));
    std::vector<StoredWindow> out;
    const auto optional_real = [&](int column) {
      return read.column_null(column) ? std::nullopt : std::optional<double>(read.column_double(column));
    };
    while (read.step())
      out.push_back({read.column_int64(0), read.column_int64(1),
                     read.column_null(2) ? std::nullopt : std::optional<int64_t>(read.column_int64(2)),
                     read.column_int64(3) != 0, read.column_int64(4) != 0, optional_real(5), optional_real(6)});
    return out;
  }

  // The index of a window length among the series' (TimelineSample::window), added if new.
  static uint16_t window_index(TimelineSeries& s, double window_ns) {
    if (window_ns == s.window_ns) return 0;
    const auto known = std::find(s.other_windows_ns.begin(), s.other_windows_ns.end(), window_ns);
    if (known != s.other_windows_ns.end()) return static_cast<uint16_t>(known - s.other_windows_ns.begin() + 1);
    if (s.other_windows_ns.size() >= UINT16_MAX)
      throw std::runtime_error("pp_windows: more window lengths than a series can have");
    s.other_windows_ns.push_back(window_ns);
    return static_cast<uint16_t>(s.other_windows_ns.size());
  }

  // Each job's span of folded events from pp_gpu_spans, as jobs of the timeline (begin_events
  // adds them first), and the longest folded event of the spans that reach the windows; nullopt
  // where a span does not know its longest event (negative: not one pp_gpu_spans holds; read
  // everything then).
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
    folded_jobs_ = std::move(jobs);
    return longest;
  }

  // Events the retention setting dropped (event_retention_minutes) still count for their job's
  // span: a window after them in which the job ran no layer is its untracked time, as in the
  // fold. Without retention the spans are those of the events read (every folded event is in
  // pp_gpu_spans once), so nothing changes. A job none of whose events is left is not added.
  void read_spans_to_widen(const std::string& uuid) {
    Statement spans(db_, "SELECT job_id, first_ns, last_ns FROM main.pp_gpu_spans WHERE uuid = :uuid "
                         "AND first_ns >= 0 AND last_ns >= first_ns AND last_ns <= (1 << 62)");
    spans.bind(":uuid", uuid);
    while (spans.step()) spans_to_widen_.push_back({spans.column_text(0), spans.column_int64(1), spans.column_int64(2), 0});
  }
  void widen_to_folded_spans() {
    for (const TimelineJob& span : spans_to_widen_) {
      const auto found = job_index_.find(span.job_id);
      if (found == job_index_.end()) continue;
      TimelineJob& job = gpu_.jobs[found->second];
      job.first = std::min(job.first, span.first);
      job.last = std::max(job.last, span.last);
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

  // The events by start, stably. ORDER BY t_start_ns is served by the index, so each scan's
  // events come in order but where blocks of one GPU overlap in time (two jobs' files): the two
  // scans of a fold are merged (as a stable sort of them would order them, in linear time).
  void sort_events() {
    const auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start < b.start; };
    auto& events = gpu_.events;
    if (scan_bounds_.empty() || scan_bounds_.front() != 0) scan_bounds_.insert(scan_bounds_.begin(), 0);
    scan_bounds_.push_back(events.size());
    bool runs_sorted = true;
    for (size_t r = 1; r < scan_bounds_.size() && runs_sorted; ++r)
      runs_sorted = std::is_sorted(events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r - 1]),
                                   events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r]), by_start);
    if (!runs_sorted) {
      std::stable_sort(events.begin(), events.end(), by_start);
    } else {
      for (size_t r = 2; r < scan_bounds_.size(); ++r)
        std::inplace_merge(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r - 1]),
                           events.begin() + static_cast<std::ptrdiff_t>(scan_bounds_[r]), by_start);
    }
    scan_bounds_.clear();
  }

  // The jobs of the folded spans come first, as the events' jobs are numbered after them.
  void begin_events() {
    for (const TimelineJob& job : folded_jobs_) job_for(job.job_id, job.first, job.last);
  }
  void take(const ScannedEvent& e) {
    if (e.event.t_end_ns >= e.event.t_start_ns && e.event.t_end_ns <= kMaxEventNs) take_event(e, through_ns_);
  }

  // One event of a read_events scan.
  void take_event(const ScannedEvent& e, int64_t through_ns) {
    const int64_t start = e.event.t_start_ns;
    const int64_t end = e.event.t_end_ns;
    const uint32_t job = job_for(e.job_id, start, end);
    const bool in_range = start < hi_ns_ && end > lo_ns_;  // may overlap a window of the range
    const bool unfolded = start <= through_ns && !e.folded;
    if (!in_range && !unfolded) return;
    const int forward = e.event.forward ? 1 : 0;
    // A group is (job, layer, direction); its number is looked up by the block's layer id, and by
    // name only the first time an id comes (two ids may name one layer, with two types).
    if (groups_by_id_.size() <= job) groups_by_id_.resize(job + 1);
    auto [known, added] = groups_by_id_[job].try_emplace(e.event.layer_id * 2 + forward, 0);
    if (added) {
      const std::string_view layer = e.layer.first;
      key_.assign(reinterpret_cast<const char*>(&job), sizeof job);
      key_.push_back(static_cast<char>(forward));
      key_.append(layer.data(), layer.size());
      known->second = group_for(key_, job, layer, forward, e.layer.second ? std::string_view(*e.layer.second) : "");
    }
    const uint32_t group = known->second;
    const int64_t id = e.id;
    if (in_range) gpu_.events.push_back({start, end, id, group, job});
    if (unfolded) {
      // (In the order the blocks are read: by GPU, then first start, then id, so the same
      // database gives the same sums.)
      gpu_.durations[group].add(static_cast<double>(end - start) / 1e9, 1, 1);
      gpu_.first_id[group] = std::min(gpu_.first_id[group], id);
      TimelineJob& span = gpu_.jobs[job];
      span.unfolded_first = std::min(span.unfolded_first, start);
      span.unfolded_last = std::max(span.unfolded_last, end);
      span.unfolded_longest = std::max(span.unfolded_longest, end - start);
      ++span.unfolded_events;
    }
  }

  uint32_t group_for(const std::string& key, uint32_t job, std::string_view layer, int forward,
                     std::string_view layer_type) {
    const auto found = group_index_.find(key);  // (emplace would allocate a node for every event)
    if (found != group_index_.end()) return found->second;
    const auto group = static_cast<uint32_t>(gpu_.groups.size());
    group_index_.emplace(key, group);
    gpu_.groups.push_back({job, std::string(layer), forward, std::string(layer_type)});
    gpu_.durations.emplace_back();
    gpu_.first_id.push_back(INT64_MAX);
    return group;
  }

  // The GPU's stretches that have layers, in time order (pp_alignment), for place_timing.
  void read_stretches(const std::string& uuid) {
    Statement read(db_, "SELECT from_ms, through_ms, offset_ns, timing_ns, coalesce(util_timing_ns, 0), window_ms, "
                        "util_window_ms FROM main.pp_alignment WHERE uuid = :uuid AND status <> 'no layers' ORDER BY from_ms");
    read.bind(":uuid", uuid);
    const auto length_ns = [&](int column) {
      return read.column_null(column) ? std::nullopt
                                      : std::optional<double>(read.column_double(column) * static_cast<double>(kNsPerMsInt));
    };
    while (read.step()) {
      const int64_t offset = read.column_int64(2);
      stretches_.push_back({read.column_int64(0), read.column_int64(0) * kNsPerMsInt - offset,
                            read.column_int64(1) * kNsPerMsInt - offset, read.column_double(3), read.column_double(4),
                            length_ns(5), length_ns(6)});
    }
  }

  // The stretches that hold a window of the span [first, last] (a window reaching its stretch's
  // reach_ns back from its end), as indices [from, to) into stretches_.
  std::pair<size_t, size_t> stretches_of_span(int64_t first, int64_t last) const {
    const auto from = std::partition_point(stretches_.begin(), stretches_.end(),
                                           [&](const StretchTiming& s) { return s.last_end_ns <= first; });
    auto to = from;
    while (to != stretches_.end() && to->first_end_ns - to->reach_ns < last) ++to;
    return {static_cast<size_t>(from - stretches_.begin()), static_cast<size_t>(to - stretches_.begin())};
  }

  sqlite3* db_;
  GpuTimeline gpu_;
  LayerNames layers_;
  // What read_events read for build_events.
  int64_t through_ns_ = INT64_MAX;
  std::vector<TimelineJob> folded_jobs_, spans_to_widen_;
  std::vector<std::pair<EventScan, std::vector<FetchedBlock>>> copied_;
  bool decoded_ = false;  // read_events decoded the events as it read them
  std::vector<size_t> scan_bounds_;  // where each scan's events begin in gpu_.events
  int timing_shift_;
  bool for_shifts_;
  int64_t horizon_ms_;
  bool built_ = false;
  std::unordered_map<std::string, uint32_t> group_index_;
  std::vector<std::unordered_map<int64_t, uint32_t>> groups_by_id_;  // per job: layer id x 2 + forward
  std::unordered_map<std::string, uint32_t> job_index_;
  uint32_t last_job_ = UINT32_MAX;  // the job of the previous row (rows come in runs of one job)
  std::string last_job_id_, key_;
  int64_t lo_ns_ = INT64_MAX, hi_ns_ = INT64_MIN;
  std::vector<StretchTiming> stretches_;
  int64_t farthest_move_ns_ = 0;  // the farthest any window can be moved (read_series)
  std::vector<bool> from_data_;   // per series: its length is the data's (a user's or setting's wins)
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

int64_t timing_horizon_ms(int64_t retention_minutes) {
  return retention_minutes > 0 && retention_minutes < kEveryStretch / 60000 ? retention_minutes * 60000 : kEveryStretch;
}

std::unique_ptr<TimelineFetch> fetch_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                                  std::optional<int64_t> through_ms, int timing_shift,
                                                  int64_t horizon_ms) {
  auto reader = std::make_unique<TimelineReader>(db, timing_shift, false, horizon_ms);
  reader->read_series(uuid, after_ms, through_ms, timing_shift);
  reader->read_events(uuid, after_ms, through_ms, true);
  return reader;
}

std::unique_ptr<TimelineFetch> fetch_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid,
                                                             std::optional<int64_t> after_ms,
                                                             std::optional<int64_t> through_ms, int64_t horizon_ms) {
  auto reader = std::make_unique<TimelineReader>(db, 0, true, horizon_ms);
  reader->read_series(uuid, after_ms, through_ms, 0, true);
  reader->read_events(uuid, after_ms, through_ms, true);
  return reader;
}

GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms, int timing_shift, int64_t horizon_ms) {
  TimelineReader reader(db, timing_shift, false, horizon_ms);
  reader.read_series(uuid, after_ms, through_ms, timing_shift);
  reader.read_events(uuid, after_ms, through_ms, false);
  return reader.build();
}

GpuTimeline read_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms, int64_t horizon_ms) {
  TimelineReader reader(db, 0, true, horizon_ms);
  reader.read_series(uuid, after_ms, through_ms, 0, true);
  reader.read_events(uuid, after_ms, through_ms, false);
  return reader.build();
}

}  // namespace pp
