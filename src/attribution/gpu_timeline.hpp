// One GPU's events and samples, as the interval sweep (interval_sweep.hpp) reads them: plain
// data, and read_gpu_timeline() that fills it from the attribution tables.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/sqlite_api.hpp"
#include "stats/weighted_sums.hpp"

namespace pp {

struct TimelineSample {
  int64_t ts_ms;   // the time Prometheus stored
  int64_t end_ns;  // the end of the window it describes (the align step), or its instant
  double value;
  bool null;
  bool driver_grid = false;  // on the driver's grid (a driver-window series' own window)
  // Its window's length: 0 the series' window_ns, k > 0 its other_windows_ns[k - 1] (a length
  // the window was given when it was aligned, before the data told the series' own).
  uint16_t window = 0;
  // How far timing shift 1 moves it, in ns (read_gpu_timeline with a shift, or _for_shifts).
  int64_t shift_ns = 0;
};

// One metric of the GPU. A sample of a window or driver_window metric covers (end_ns - window,
// end_ns]; a sample of an instant metric is the value at the moment end_ns, DCGM's poll, known
// to within kInstantSpreadNs (it counts with the weight of one window).
struct TimelineSeries {
  enum Kind { kWindow, kDriverWindow, kInstant };
  std::string metric;
  Kind kind = kWindow;
  double window_ns = 0;
  std::vector<TimelineSample> samples;  // end_ns ascending; one per window (copies left out)
  std::vector<double> other_windows_ns{};  // see TimelineSample::window

  double window_of(const TimelineSample& s) const { return s.window == 0 ? window_ns : other_windows_ns[s.window - 1]; }
  // Whether the sample's window is known: not for a driver-window series' sample whose driver
  // grid the align step did not find, which is placed on DCGM's window, not the one it averages.
  bool window_known(const TimelineSample& s) const { return kind != kDriverWindow || s.driver_grid; }
  // The longest window of its samples, in whole ns.
  int64_t longest_window_ns() const {
    double longest = window_ns;
    for (double w : other_windows_ns) longest = std::max(longest, w);
    return static_cast<int64_t>(std::llround(longest));
  }
};

// How far the moment of an instant metric's sample is known: within +-0.2 ms of where the align
// step puts it. The moment is DCGM's poll, which ends the PROF window read with it (dcgm-exporter
// serves DCGM's cached values, never reads the GPU itself), and the align step places each
// window end on the grid it fits to the stored times, not at the stored ms: a tenth of a ms off
// or less, up to the 0.2 ms DCGM's polls stray from that grid. An event running during part of
// the spread gets that part of the sample. The spread must not be wider than that: the sample
// is the value of one layer, so spread over +-1 ms it credited a 1 ms layer's value to its
// neighbours and theirs to it, a bias of several stderr on a gauge whose layers differ by a few
// % (an identified ReLU 5.7% off, its 90% interval missing the truth).
constexpr int64_t kInstantSpreadNs = 400000;

// How far a sample of the series covers time before and after its end_ns, as the sweep of
// interval_sweep.hpp takes it: a window (end - window, end], an instant spread over
// kInstantSpreadNs around it.
struct SampleReach {
  int64_t before, after;
};
inline SampleReach reach_of(const TimelineSeries& s) {
  if (s.kind == TimelineSeries::kInstant) return {kInstantSpreadNs / 2, kInstantSpreadNs / 2};
  return {s.longest_window_ns(), 0};
}

struct TimelineEvent {
  int64_t start, end, id;  // ns; pp_events.id
  uint32_t group, job;
};

// The largest magnitude of a sample value the fold and the estimator take (pp_deconvolve's limit
// on its values): their sums square the values, and past this the squares leave the doubles'
// range. A stored value beyond it, or not finite (+Inf or -Inf from Prometheus), is read as NULL.
constexpr double kLargestSampleValue = 1e150;

// (job_id, layer, forward): the unit of a pp_mean state.
struct TimelineGroup {
  uint32_t job;
  std::string layer;
  int forward;
  std::string layer_type;  // of its first event
};

struct TimelineJob {
  std::string job_id;
  int64_t first = 0, last = 0;  // span on this GPU over all its events, ns
  uint32_t untracked_group = 0;  // the group (job, '(untracked)', 0)
  // Its calls that give durations (GpuTimeline::durations): their span, count and longest, ns
  // (what the fold adds to pp_gpu_spans).
  int64_t unfolded_first = INT64_MAX, unfolded_last = INT64_MIN, unfolded_events = 0, unfolded_longest = 0;
};

struct GpuTimeline {
  std::vector<TimelineSeries> series;
  std::vector<TimelineEvent> events;  // those that may overlap a window of the series, by start
  std::vector<TimelineJob> jobs;
  std::vector<TimelineGroup> groups;
  // Per group: the durations of its unfolded events starting by through_ms (in seconds, each of
  // weight 1), and their lowest id.
  std::vector<WeightedSums> durations;
  std::vector<int64_t> first_id;
  // Samples whose stored value is not finite or beyond kLargestSampleValue in magnitude: read as
  // NULL, like NaN (what no GPU counter gives and no sum of the fold or the estimator could take),
  // and the first of them, for the refresh's warning.
  int64_t unusable_values = 0;
  std::string first_unusable;

  const std::string& job_id(uint32_t group) const { return jobs[groups[group].job].job_id; }
  // Distinct sample timestamps over all series.
  int64_t windows() const;
};

// How far after a window the stretches whose timing moves it may begin (ms): with
// event_retention_minutes = M, M minutes, since every stretch that begins within M minutes of a
// window is aligned, and never aligned again, before the retention step removes the window and
// keeps it as the estimator's state: so that state moves the window as any later read does, and
// any sequence of refreshes gives one refresh's intervals. Without retention, every stretch.
constexpr int64_t kEveryStretch = INT64_MAX;
int64_t timing_horizon_ms(int64_t retention_minutes);

// The GPU's series (pp_intervals, kinds from pp_metrics; a series without an interval is
// skipped) with their aligned samples stored in (after_ms, through_ms] (pp_windows: a sample
// not aligned yet, or a copy of a window already counted, is left out), and all of its events
// (pp_events): every one counts for its job's span; those that can overlap a window are kept
// for the sweep; unfolded ones starting by through_ms give their durations. Absent bounds are
// no bound. timing_shift moves every window by that many times the uncertainty of its offset,
// for the estimator's intervals: over the stretches of the job whose span it is in that begin
// before the window's stored time plus horizon_ms (pp_alignment.timing_ns, or util_timing_ns for
// a window on the driver's grid, combined as independent errors; the largest where jobs' spans
// overlap; the GPU's stretches within the horizon for a job none of whose stretches there has
// layers, and outside every span).
GpuTimeline read_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                              std::optional<int64_t> through_ms, int timing_shift = 0,
                              int64_t horizon_ms = kEveryStretch);
// The same at timing shift 0, with the events that windows moved by any shift reach and the size
// of the moves, so that moving its windows (move_windows) gives what reading at that shift gives,
// without reading again.
GpuTimeline read_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                         std::optional<int64_t> through_ms, int64_t horizon_ms);
// The same in two parts, so that most of a read can run off the connection's thread
// (sql_relay.hpp): fetch_gpu_timeline* query the database (the connection's thread) and copy
// the event blocks they need; decode() decodes them (any thread), read_timing() reads the
// stretches a timing shift needs (the connection's thread) and build() places the windows (any
// thread, once).
class TimelineFetch {
 public:
  virtual ~TimelineFetch() = default;
  // Decodes the events, which gives the jobs' spans (any thread; build() does where not called).
  virtual void decode() = 0;
  // With a timing shift: reads what it needs of pp_alignment at those spans (the connection's
  // thread, before build()).
  virtual void read_timing() = 0;
  virtual GpuTimeline build() = 0;
};
std::unique_ptr<TimelineFetch> fetch_gpu_timeline(sqlite3* db, const std::string& uuid, std::optional<int64_t> after_ms,
                                                  std::optional<int64_t> through_ms, int timing_shift = 0,
                                                  int64_t horizon_ms = kEveryStretch);
std::unique_ptr<TimelineFetch> fetch_gpu_timeline_for_shifts(sqlite3* db, const std::string& uuid,
                                                             std::optional<int64_t> after_ms,
                                                             std::optional<int64_t> through_ms, int64_t horizon_ms);

// Every window moved by timing_shift times its sample's shift_ns, each series kept in end order.
void move_windows(GpuTimeline& gpu, int timing_shift);

}  // namespace pp
