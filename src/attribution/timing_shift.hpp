// The estimator's timing shift (read_gpu_timeline's timing_shift, gpu_timeline.hpp): how far
// each window of a GPU's timeline moves, from how well the align step knows the offsets of the
// stretches (pp_alignment) that hold it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/gpu_timeline.hpp"
#include "attribution/stretch_sums.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

// The least timing shift: a fraction of how far DCGM's polls stray (combined_timing).
constexpr double kPollWanderNs = 100000;  // 0.1 ms

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

// What place_timing knows of a GPU's stretches that have layers, numbered in from_ms order:
// every one (read_stretches, stretch_read.hpp), or what a read of its newest windows needs
// (StretchReader): the sums of the stretches before `first` (pp_alignment_sums), each one from
// there on, and the first stretches of each job whose span begins before those.
struct KnownStretches {
  size_t first = 0;  // the number of stretches[0]
  StretchSums before;  // of the stretches before it
  std::vector<StretchTiming> stretches;
  // Where a job's stretches begin among the GPU's.
  struct JobStart {
    enum Kind { kAmongKnown, kBefore, kNotRead } kind = kAmongKnown;
    // kBefore: its first stretch's number, and from there the stretches whose windows begin
    // before its span (the edge); those after them up to `first` lie wholly inside the span,
    // their windows the reach of no kept window (window_ms and util_window_ms NULL), and
    // before_inside holds the sums of the stretches before them.
    size_t first = 0;
    std::vector<StretchTiming> edge;
    StretchSums before_inside;
  };
  // Per job of the timeline; empty: every job's stretches are among `stretches`. (kNotRead: a
  // job no window's move reaches, whose timing place_timing never takes.)
  std::vector<JobStart> job_starts;
};

// How far a stretch's longest window reaches back from its end, each series' as the sweep takes
// it (from_data: per series, whether its window length is the data's, where the stretch's kept
// length wins), and where its windows begin then (saturated: a reach beyond any time reaches
// every span).
int64_t stretch_reach_ns(const GpuTimeline& gpu, const std::vector<bool>& from_data, const StretchTiming& stretch);
int64_t windows_start_ns(const StretchTiming& s);

// Gives every sample the size of its timing shift: that of the jobs whose span its window
// overlaps (the largest, where several), each job's from its stretches that begin within
// horizon_ms of the sample's stored time (timing_horizon_ms), so that one job's well placed
// history does not vouch for another's uncertain windows. A job none of whose stretches there
// has layers, and a window of no job's span, take the GPU's stretches within the horizon.
// Then moves every window by timing_shift times it.
// (known: the GPU's stretches; from_data: per series, whether its window length is the data's;
// farthest_move_ns: the farthest any window can be moved, as the events were read.)
void place_timing(GpuTimeline& gpu, KnownStretches& known, const std::vector<bool>& from_data,
                  int64_t farthest_move_ns, int timing_shift, bool for_shifts, int64_t horizon_ms);

}  // namespace pp
