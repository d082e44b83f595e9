// Alignment: how the times Prometheus stores relate to the windows DCGM averaged over, estimated
// from the data itself (docs/concepts.md, "What a stored sample means"). Pure numerics on one
// GPU's events and samples; the refresh step that reads and writes the tables is
// align_samples.cpp.
//
// dcgm-exporter prints no timestamps, so a sample stored at T describes the DCGM window that
// ended some time d before T: d is the exporter's latency plus the phase between Prometheus'
// scrapes and DCGM's own clock. Within a stretch of time d is nearly constant (it drifts as the
// two clocks do). For a candidate d, every window's mix of layers follows from the events, and
// a least-squares fit of each metric's values on those mixes leaves a residual; the profile
// log-likelihood
//     l(d) = - sum over metrics of (n / 2) log(RSS_m(d) / n)
// peaks at the true offset, sharply, because shifting a window by even a millisecond changes
// which layers it holds. DCGM polls on a regular grid while the stored times carry the scrapes'
// jitter, so the windows are put on the straight grid fitted to them (snap_to_grid) before each
// fit. The estimate is the peak; its uncertainty is the larger of the profile-likelihood
// interval and the scatter of four quarters' own offsets from the stretch's grid (which also
// absorbs what the likelihood does not model: a grid that is not quite straight, an offset that
// steps within the stretch). Each quarter's offset is looked for within 3 steps of the
// stretch's, and where it peaks at that edge decisively (by the 90% chi-square level) within 20,
// that peak taken where it is decisively better again.
//
// Samples near a grid boundary may describe the window one period earlier or later than the
// constant offset says (jitter moves the exporter's read across DCGM's sample time): each
// sample's window is moved by one period where that fits its values decisively better. When
// the drift carries the offset across the exporter's latency within a stretch, every window
// past that point is one period off: the best such point is found from the same per-sample
// fits, and its windows moved together when that fits decisively better.

// GPU_UTIL, averaged over the driver's own period on its own grid, is placed on the DCGM window
// ends by driver_grid.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "attribution/window_grid.hpp"

namespace pp {

// One GPU's layer intervals, grouped into unknowns, and its jobs' spans.
struct AlignmentTimeline {
  struct Event {
    int64_t start, end;  // ns
    uint32_t unknown;    // index of its group
    uint32_t job;
  };
  struct Job {
    int64_t first, last;  // span on the GPU, ns
    uint32_t untracked;   // unknown of the job's time not covered by its events
  };
  std::vector<Event> events;  // by start
  // The longest event's duration, which lets a fit skip the events before its windows; the
  // largest value (unknown) skips none.
  int64_t longest_ns = std::numeric_limits<int64_t>::max();
  std::vector<Job> jobs;
  uint32_t unknowns = 0;  // groups and untracked; the rest of a window is one more
};

// The samples of one stretch: stored times (ns, ascending, copies of a window removed) and the
// values of each metric fitted jointly (NaN: no value).
struct AlignmentSamples {
  std::vector<int64_t> ts_ns;
  std::vector<std::vector<double>> values;  // [metric][sample]
  // Per sample: the stored time after it was a copy of its window (removed above). Empty: none.
  std::vector<char> copy_after;
};

// A stretch of candidate offsets [lo_ns, hi_ns] to search.
struct OffsetRange {
  double lo_ns, hi_ns;
};

struct OffsetEstimate {
  bool found = false;      // false: no window holds any layer (nothing to fit)
  double offset_ns = 0;    // window end = stored time - offset
  double half90_ns = 0;    // 90% half-width: max(profile likelihood, scatter of quarters)
  double likelihood_half90_ns = 0;
  double quarters_half90_ns = 0;
  // Whether the windows lie on a straight grid of the period (snap_to_grid); where not (two in
  // one step, or a period over 1% off), each keeps its scrape's lateness, and off_grid_spread_ns
  // says how far that spreads them (spread_about_grid).
  bool on_grid = true;
  double off_grid_spread_ns = 0;
  // The trend of stored time - window end over the stored times given (steps of one period,
  // repeats and skips, unwound): 0 unless it stands out of their scatter. Where the grid shows
  // none (its period is the window's, as the stored times at the scrapes' period put it), the
  // trend of the four quarters' own offsets, where that stands out of their scatter about it.
  double stretch_drift_ppm = 0;
  // No other peak within 10 log-likelihood units elsewhere in the ranges, and no other
  // placement of the windows (from the other starts, below) that fits within as much.
  bool unique = true;
  double log_likelihood = 0;
  // The search's best coarse point more than 5 ms (or 5 steps) from its peak, the windows as
  // stored (-infinity, NaN: none).
  double elsewhere_log_likelihood = -std::numeric_limits<double>::infinity();
  double elsewhere_offset_ns = std::numeric_limits<double>::quiet_NaN();
  std::vector<int> shift;  // per sample: windows moved by this many periods (-1: one later)
  // Per sample (empty: none): an idle sample found to be a copy of the one before, which the
  // align step could not tell by its values (every idle window reads alike).
  std::vector<char> copy;
  int moved = 0;
};

// The windows (stored times, copies removed) a stretch's offset needs to be fitted, in some
// metric with a value: kLeastWindowsToFit more than the fit has unknowns (the timeline's
// groups and untracked times, and the rest of each window). With no more than the unknowns,
// every offset fits the values exactly, each alike, and the search kept the first it tried: a
// short job's stretch (a few hundred ms of a dozen groups' calls) "fitted" 150 ms off. With a
// few more, chance makes some offset fit nearly exactly: a 0.6-2 s job's stretch of 19-23
// windows for 18 unknowns was "estimated", +-0.1 ms, 3-100 ms off.
constexpr size_t kLeastWindowsToFit = 8;
size_t windows_to_fit(const AlignmentTimeline& timeline);
// The most windows of the stretch that any one metric has a value in.
size_t windows_with_values(const AlignmentSamples& samples);

// Estimates the offset of windows of length window_ns (instant = false) whose ends are
// stored time - offset, searching the ranges on a grid of step_ns then refining the peak (not
// found where the stretch has fewer windows than windows_to_fit).
// period_ns is the spacing of DCGM's windows, by which a sample's window may be moved. Where
// the ranges span a period or more, the search is made again from other starts and the best
// fit returned: where a twentieth of the samples were stored twice (copy_after), from each
// copy's original one period later (a scrape answered late reads the window after its own);
// and, where the samples are stored at the period and each half holds 20 or more, from the
// peak each half has on its own within a period of the first estimate, where it places that
// half's windows elsewhere (the exporter's latency stepped by a period within the stretch).
OffsetEstimate estimate_offset(const AlignmentTimeline& timeline, const AlignmentSamples& samples, double window_ns,
                               double period_ns, const std::vector<OffsetRange>& ranges, double step_ns);

// The profile log-likelihood of windows (end - window_ns, end] for the given ends (ascending),
// or of instants at them when window_ns is 0.
double window_log_likelihood(const AlignmentTimeline& timeline, const std::vector<int64_t>& ends_ns, double window_ns,
                             const std::vector<std::vector<double>>& values);

}  // namespace pp
