// The estimator's timing shift (read_gpu_timeline's timing_shift, gpu_timeline.hpp): how far
// each window of a GPU's timeline moves, from how well the align step knows the offsets of the
// stretches (pp_alignment) that hold it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attribution/gpu_timeline.hpp"
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

// The GPU's stretches that have layers, in time order (pp_alignment), for place_timing.
std::vector<StretchTiming> read_stretches(sqlite3* db, const std::string& uuid);

// Gives every sample the size of its timing shift: that of the jobs whose span its window
// overlaps (the largest, where several), each job's from its stretches that begin within
// horizon_ms of the sample's stored time (timing_horizon_ms), so that one job's well placed
// history does not vouch for another's uncertain windows. A job none of whose stretches there
// has layers, and a window of no job's span, take the GPU's stretches within the horizon.
// Then moves every window by timing_shift times it.
// (stretches: read_stretches'; from_data: per series, whether its window length is the data's;
// farthest_move_ns: the farthest any window can be moved, as the events were read.)
void place_timing(GpuTimeline& gpu, std::vector<StretchTiming>& stretches, const std::vector<bool>& from_data,
                  int64_t farthest_move_ns, int timing_shift, bool for_shifts, int64_t horizon_ms);

}  // namespace pp
