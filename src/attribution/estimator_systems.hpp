// The estimator's linear systems, as pp_estimates solves them (estimate_table.cpp) and the
// retention step keeps the windows it removes (estimator_state.hpp): per job, or per group of
// jobs that shared a GPU (job_sharing.hpp), and metric, one row per aligned window of its GPUs
// with the fraction of the window spent in each unknown (a layer, or a layer type, and a
// direction; the job's untracked time; '(rest)' where no job ran).
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "attribution/gpu_timeline.hpp"
#include "attribution/job_sharing.hpp"
#include "core/sqlite_api.hpp"
#include "stats/deconvolve.hpp"

namespace pp {

struct Bounds {
  double lower = -INFINITY, upper = INFINITY;
};

// Per metric, its bounds from pp_metric_bounds (none: no bound).
std::map<std::string, Bounds> metric_bounds(sqlite3* db);

// One system: a job (or the jobs that shared a GPU, named by the first: JobSharing) and a metric.
struct SystemKey {
  std::string system, metric;
  bool operator<(const SystemKey& o) const { return std::tie(system, metric) < std::tie(o.system, o.metric); }
};

// What an unknown of a system stands for. A job alone has unknowns "layer|forward"; a joint
// system "job<US>layer|forward" per job, and one "(untracked)|0" shared by its jobs: the time in
// which none of their layers ran.
struct UnknownInfo {
  std::string job_id;  // empty: the shared untracked time of a joint system (or a job alone's)
  std::string name, layer_type;
  int64_t forward = 0;
};
constexpr char kJobSeparator = '\x1f';
const std::string kSharedUntracked = "(untracked)|0";

// Per system: why its rows cannot be identified whatever the fit says, and the windows left out.
struct SystemNotes {
  // Its state holds rows of a driver-period metric's samples off their driver's grid, fitted on
  // DCGM's windows (pp_estimator_state rows an earlier version kept; such windows are left out now).
  bool windows_unknown = false;
  bool shared_gauge = false;       // an instant gauge of a GPU shared by its jobs
  int64_t concurrent_windows = 0;  // windows left out: two of its jobs ran at the same time
  // Windows left out: a driver-period metric's (GPU_UTIL's) samples off their driver's grid,
  // whose window is not known (TimelineSeries::window_known). Counted at timing shift 0.
  int64_t off_grid_windows = 0;
  std::string failed;              // the solver refused the system: no fit at all
};

// The unknowns each system has met, in windows kept or left out: system -> name -> info.
using SystemUnknowns = std::map<std::string, std::map<std::string, UnknownInfo>>;

// The timing shifts each system is solved with: windows where the alignment puts them, and
// moved by their timing uncertainty either way (pp_estimates' intervals add how far they move).
constexpr int kTimingShifts[] = {0, -1, 1};

// One grouping's systems ('layer' or 'layer_type'), with the unknowns and notes they met.
struct GroupingSystems {
  bool by_type = false;
  bool sums_only = false;  // the rows go only into `states`, not `systems`
  std::map<SystemKey, DeconvolveData> systems;
  std::map<SystemKey, LeastSquaresState> states;  // sums_only: each system's rows as sums
  SystemUnknowns unknowns;
  std::map<SystemKey, SystemNotes> notes;
};

// The rows of every system for one timing shift (windows moved by that many times the GPU's
// timing uncertainty), from the given GPUs' windows stored at or before through_ms (every
// window: none), for each grouping in one sweep of each GPU's timeline; their unknowns and notes
// are added to the grouping's. A system with bounds in `bounds` gets them. horizon_ms: which
// stretches time each window (timing_horizon_ms).
void build_systems(sqlite3* db, const std::vector<std::string>& gpus, int shift,
                   const std::map<std::string, Bounds>& bounds, const JobSharing& sharing,
                   const std::vector<GroupingSystems*>& groupings, int64_t horizon_ms,
                   std::optional<int64_t> through_ms = std::nullopt);
// The same from one GPU's timeline read at that shift (g: its index among the GPUs of the
// systems, which keeps its samples apart from other GPUs').
void add_timeline_systems(const GpuTimeline& gpu, size_t g, int shift, const std::map<std::string, Bounds>& bounds,
                          const JobSharing& sharing, const std::vector<GroupingSystems*>& groupings);
// The same for one grouping, over every window.
std::map<SystemKey, DeconvolveData> build_systems(sqlite3* db, const std::vector<std::string>& gpus, bool by_type,
                                                  int shift, const std::map<std::string, Bounds>& bounds,
                                                  const JobSharing& sharing, SystemUnknowns& unknowns,
                                                  std::map<SystemKey, SystemNotes>& notes, int64_t horizon_ms);

}  // namespace pp
