// pp_estimates: the estimator over every job of the database, as the views layer_estimates and
// layer_type_estimates show it (docs/reference/views.md).
//
//   SELECT job_id, layer_type, forward, metric, estimate, lower90, upper90, identified, shared_with
//     FROM pp_estimates('layer_type');
//
// Argument (HIDDEN column grouping): 'layer' (each layer and direction is an unknown) or
// 'layer_type' (each layer type and direction). Per (job, metric), every aligned window of the
// job's GPUs gives one row of the linear system (pp_fractions' rows, pp_deconvolve's method and
// bounds from pp_metric_bounds). Jobs that shared a GPU (job_sharing.hpp) are one system: the
// GPU ran one of them at a time (time-slicing), so a window is the sum over all their layers,
// each job's layers its own unknowns, and the time in which none ran one '(untracked)' for all.
// A window in which two of them ran at once (MPS, several streams) does not fit that model and
// is left out (concurrent_windows counts them); an instant gauge of a shared GPU (memory in use)
// holds every job's part at once and is never identified.
// The system is solved three times: with each window where the alignment puts it, and moved by
// the uncertainty of the GPU's offset (pp_alignment.timing_ns over all its stretches,
// read_gpu_timeline) either way; the estimate is the first, the 90% interval holds all three,
// and `identified` is judged on that interval, so timing uncertainty widens intervals instead of
// producing a confident wrong number.
// Columns: job_id, layer (NULL per type), layer_type, forward, metric, estimate, stderr,
//   lower90, upper90, windows, identified (0/1), condition (of the scaled system), shared_with
//   (the other jobs of a joint system, comma-separated; NULL alone), concurrent_windows (NULL
//   alone), reason (why a row is never identified, beyond its interval; NULL otherwise).
//
// INNOCUOUS: it reads only tables of the database it runs in.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/interval_sweep.hpp"
#include "attribution/job_sharing.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"
#include "stats/deconvolve.hpp"
#include "stats/sample_key.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kEstimateArguments = {{"grouping", true}};
constexpr int kShifts[] = {0, -1, 1};

struct Bounds {
  double lower = -INFINITY, upper = INFINITY;
};

std::map<std::string, Bounds> metric_bounds(sqlite3* db) {
  std::map<std::string, Bounds> out;
  Statement read(db, "SELECT metric, lower, upper FROM main.pp_metric_bounds");
  while (read.step())
    out[read.column_text(0)] = {read.column_null(1) ? -INFINITY : read.column_double(1),
                                read.column_null(2) ? INFINITY : read.column_double(2)};
  return out;
}

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
// Two jobs' events that overlap by at most this much hand the GPU over rather than run at once:
// each process turns its CUDA event times into unix time with its own anchor, some tens of us
// apart. (The overlap is then counted twice; the window's fractions are scaled back to 1.)
constexpr int64_t kHandOverNs = 100000;

// Per system: why its rows cannot be identified whatever the fit says, and the windows left out.
struct SystemNotes {
  bool windows_unknown = false;    // GPU_UTIL samples off their driver's grid
  bool shared_gauge = false;       // an instant gauge of a GPU shared by its jobs
  int64_t concurrent_windows = 0;  // windows left out: two of its jobs ran at the same time
  std::string failed;              // the solver refused the system: no fit at all
};

// The unknowns each system has met, in windows kept or left out: system -> name -> info.
using SystemUnknowns = std::map<std::string, std::map<std::string, UnknownInfo>>;

// How one group of a GPU's timeline enters the systems (fixed for the timeline).
struct GroupRole {
  const std::string* system = nullptr;
  bool joint = false;
  bool untracked = false;  // the job's own untracked group
  bool registered = false;
  std::string name;  // its unknown; a joint system's untracked time is the union's, per window
};

// Whether events of two different jobs run at the same time (longer than a hand-over) within
// [start, end).
bool jobs_ran_at_once(const GpuTimeline& gpu, std::vector<size_t>& events, int64_t start, int64_t end) {
  std::sort(events.begin(), events.end(), [&](size_t a, size_t b) { return gpu.events[a].start < gpu.events[b].start; });
  std::vector<std::pair<uint32_t, int64_t>> last_end;  // per job, the latest end so far
  for (size_t i : events) {
    const TimelineEvent& e = gpu.events[i];
    const int64_t from = std::max(e.start, start), to = std::min(e.end, end);
    if (to <= from) continue;
    bool mine = false;
    for (auto& [job, until] : last_end) {
      if (job == e.job) {
        until = std::max(until, to);
        mine = true;
      } else if (std::min(until, to) - from > kHandOverNs) {
        return true;
      }
    }
    if (!mine) last_end.emplace_back(e.job, to);
  }
  return false;
}

// Length of [start, end) covered by the spans of the given jobs on this GPU.
int64_t span_union(const GpuTimeline& gpu, const std::vector<uint32_t>& jobs, int64_t start, int64_t end) {
  std::vector<std::pair<int64_t, int64_t>> parts;
  for (uint32_t j : jobs) {
    const int64_t from = std::max(start, gpu.jobs[j].first), to = std::min(end, gpu.jobs[j].last);
    if (to > from) parts.emplace_back(from, to);
  }
  std::sort(parts.begin(), parts.end());
  int64_t total = 0, reached = start;
  for (const auto& [from, to] : parts) {
    if (to <= reached) continue;
    total += to - std::max(from, reached);
    reached = to;
  }
  return total;
}

// One system's part of a window.
struct SystemHere {
  const std::string* system;
  bool joint = false;
  std::vector<std::pair<const std::string*, double>> fractions;  // unknown, fraction of the window
  std::vector<uint32_t> jobs;  // a joint system's jobs in the window
  double event_time = 0;       // and the time their events cover (ns, as weighed)
};

// The rows of every system for one timing shift, from every aligned GPU.
std::map<SystemKey, DeconvolveData> build_systems(sqlite3* db, const std::vector<std::string>& gpus, bool by_type,
                                                  int shift, const std::map<std::string, Bounds>& bounds,
                                                  const JobSharing& sharing, SystemUnknowns& unknowns,
                                                  std::map<SystemKey, SystemNotes>& notes) {
  std::map<SystemKey, DeconvolveData> systems;
  for (size_t g = 0; g < gpus.size(); ++g) {
    const GpuTimeline gpu = read_gpu_timeline(db, gpus[g], std::nullopt, std::nullopt, shift);
    std::vector<GroupRole> roles(gpu.groups.size());
    for (size_t i = 0; i < gpu.groups.size(); ++i) {
      const TimelineGroup& gr = gpu.groups[i];
      GroupRole& role = roles[i];
      role.system = &sharing.system(gpu.jobs[gr.job].job_id);
      role.joint = sharing.joint(*role.system);
      role.untracked = i == gpu.jobs[gr.job].untracked_group;
      if (role.joint && role.untracked) continue;
      const std::string unknown = (by_type ? gr.layer_type : gr.layer) + "|" + std::to_string(gr.forward);
      role.name = role.joint ? gpu.jobs[gr.job].job_id + kJobSeparator + unknown : unknown;
    }
    auto register_unknown = [&](GroupRole& role, const TimelineGroup& gr) {
      role.registered = true;
      auto& known = unknowns[*role.system];
      if (role.joint && role.untracked)
        known.emplace(kSharedUntracked, UnknownInfo{"", "(untracked)", "(untracked)", 0});
      else
        known.emplace(role.name, UnknownInfo{role.joint ? gpu.jobs[gr.job].job_id : "",
                                             by_type ? gr.layer_type : gr.layer, gr.layer_type, gr.forward});
    };
    const TimelineSample* current = nullptr;
    size_t current_series = 0;
    std::vector<std::pair<uint32_t, int64_t>> groups;
    std::vector<size_t> window_events;
    std::vector<SystemHere> here;
    auto flush = [&] {
      if (!current || current->null) return;
      const TimelineSeries& series = gpu.series[current_series];
      const std::string key = sample_key_integer((static_cast<int64_t>(g) << 44) + current->ts_ms);
      const double window = std::max(series.window_ns, 1.0);
      const bool instant = series.kind == TimelineSeries::kInstant;
      // The span of time the sample stands for, as the sweep took it (interval_sweep.hpp).
      const int64_t half = kInstantSpreadNs / 2, window_int = static_cast<int64_t>(std::llround(series.window_ns));
      const int64_t start = instant ? current->end_ns - half : current->end_ns - window_int;
      const int64_t end = instant ? current->end_ns + half : current->end_ns;
      const double scale = instant ? static_cast<double>(std::max<int64_t>(window_int, 1)) / kInstantSpreadNs : 1.0;
      here.clear();
      for (const auto& [group, weight] : groups) {
        GroupRole& role = roles[group];
        const TimelineGroup& gr = gpu.groups[group];
        if (!role.registered) register_unknown(role, gr);
        auto h = std::find_if(here.begin(), here.end(), [&](const SystemHere& x) { return *x.system == *role.system; });
        if (h == here.end()) h = here.insert(here.end(), SystemHere{role.system, role.joint, {}, {}, 0});
        if (role.joint) {
          if (std::find(h->jobs.begin(), h->jobs.end(), gr.job) == h->jobs.end()) h->jobs.push_back(gr.job);
          if (role.untracked) continue;  // the untracked time of a joint system is the union's, below
          h->event_time += static_cast<double>(weight);
        }
        h->fractions.emplace_back(&role.name, static_cast<double>(weight) / window);
      }
      for (SystemHere& h : here) {
        const SystemKey system_key{*h.system, series.metric};
        SystemNotes& note = notes[system_key];
        if (!note.failed.empty()) continue;
        if (h.joint) {
          if (instant) note.shared_gauge = true;
          const double untracked =
              std::max(0.0, static_cast<double>(span_union(gpu, h.jobs, start, end)) * scale - h.event_time);
          if (untracked > 0) h.fractions.emplace_back(&kSharedUntracked, untracked / window);
          // Time-slicing is the model: a window in which two of the jobs ran at once is not.
          if (h.jobs.size() > 1 && jobs_ran_at_once(gpu, window_events, start, end)) {
            if (shift == 0) ++note.concurrent_windows;
            continue;
          }
          double total = 0;
          for (const auto& f : h.fractions) total += f.second;
          if (total > 1)  // hand-overs counted twice
            for (auto& f : h.fractions) f.second /= total;
        }
        auto [it, added] = systems.try_emplace(system_key);
        if (added) {
          const auto b = bounds.find(series.metric);
          if (b != bounds.end()) it->second.set_bounds(b->second.lower, b->second.upper);
        }
        try {
          for (const auto& [name, fraction] : h.fractions)
            it->second.add(key, *name, std::min(1.0, fraction), current->value);
        } catch (const std::exception& e) {  // no fit for this system; the others go on
          note.failed = unknowns[*h.system].size() >= DeconvolveLimits::kMaxUnknowns
                            ? "more than " + std::to_string(DeconvolveLimits::kMaxUnknowns) +
                                  " layers and directions in one system (layer_type_estimates has fewer)"
                            : std::string("its system could not be solved (") + e.what() + ")";
          systems.erase(it);
          continue;
        }
        if (series.off_own_grid > 0) note.windows_unknown = true;
      }
    };
    sweep_overlaps(gpu, [&](int64_t event, uint32_t group, size_t series, const TimelineSample& sample, int64_t weight) {
      if (&sample != current) {
        flush();
        current = &sample;
        current_series = series;
        groups.clear();
        window_events.clear();
      }
      if (event >= 0) window_events.push_back(static_cast<size_t>(event));
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == group; });
      if (it == groups.end())
        groups.emplace_back(group, weight);
      else
        it->second += weight;
    });
    flush();
  }
  return systems;
}

struct EstimatesCursor : RowsCursor {
  static constexpr const char* kName = "pp_estimates";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, layer TEXT, layer_type TEXT, forward INTEGER, metric TEXT, estimate REAL, "
      "stderr REAL, lower90 REAL, upper90 REAL, windows INTEGER, identified INTEGER, condition REAL, "
      "shared_with TEXT, concurrent_windows INTEGER, reason TEXT, grouping HIDDEN)";
  static constexpr int kFirstArgument = 15;
  static constexpr bool kDoesIo = false;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kEstimateArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 1000;
    info->estimatedCost = 1e7;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kEstimateArguments.size());
    keep_arguments(args);
    const std::string grouping = required_text(args[0], "grouping");
    if (grouping != "layer" && grouping != "layer_type")
      throw argument_error("grouping", "must be 'layer' or 'layer_type', got '" + grouping + "'");
    const bool by_type = grouping == "layer_type";
    sqlite3* db = connection->db();
    std::vector<std::string> gpus;
    {
      Statement list(db, "SELECT DISTINCT uuid FROM main.pp_alignment ORDER BY uuid");
      while (list.step()) gpus.push_back(list.column_text(0));
    }
    const auto bounds = metric_bounds(db);
    const JobSharing sharing = JobSharing::read(db);
    SystemUnknowns unknowns;
    std::map<SystemKey, SystemNotes> notes;
    // One shift's systems at a time: the central results, then the variants' (only their
    // intervals are kept).
    std::map<SystemKey, DeconvolveResult> central;
    std::map<SystemKey, std::vector<DeconvolveResult>> variants;
    for (int shift : kShifts) {
      for (auto& [key, data] : build_systems(db, gpus, by_type, shift, bounds, sharing, unknowns, notes)) {
        if (!notes[key].failed.empty()) continue;
        DeconvolveResult r = deconvolve(data);
        if (shift == 0)
          central.emplace(key, std::move(r));
        else
          variants[key].push_back(std::move(r));
      }
    }
    std::vector<std::vector<SqlValue>> rows;
    auto optional = [](const std::optional<double>& v) { return v ? SqlValue(*v) : SqlValue(); };
    for (const auto& system_notes : notes) {
      const SystemKey& key = system_notes.first;  // (not a structured binding: the lambda below uses it)
      const SystemNotes& note = system_notes.second;
      const std::vector<std::string>& members = sharing.members(key.system);
      const auto b = bounds.find(key.metric);
      const std::optional<double> lowest = b != bounds.end() && std::isfinite(b->second.lower)
                                               ? std::optional<double>(b->second.lower) : std::nullopt;
      const std::optional<double> highest = b != bounds.end() && std::isfinite(b->second.upper)
                                                ? std::optional<double>(b->second.upper) : std::nullopt;
      // Why no row of the system is identified, whatever its fit says (NULL: nothing beyond it).
      // GPU_UTIL samples off their driver's grid were fitted as DCGM windows, which they are not:
      // the fit says nothing about how far that moves the estimate. An instant gauge of a shared
      // GPU (memory in use) holds every job's part at once, which a time-slicing model does not.
      // (Solving it as a sum per job does not help: while one job runs, the other waits, so a
      // job's layers always appear with the other's idle level and only their sum is known; the
      // metric's lower bound then pins one part and the other looks identified, wrongly.)
      std::optional<std::string> reason;
      if (!note.failed.empty())
        reason = note.failed;
      else if (note.windows_unknown)
        reason = "samples whose window is not known (a driver-period metric off its driver's grid)";
      else if (note.shared_gauge)
        reason = "an instant gauge of a shared GPU holds every sharing job's part at once";
      const bool bounds_only = reason.has_value();
      const std::string concurrency = std::to_string(note.concurrent_windows) +
                                      " windows in which the sharing jobs ran at the same time were left out";
      auto emit = [&](const std::string& unknown, const DeconvolveUnknown* u, std::optional<double> condition) {
        const UnknownInfo& info = unknowns[key.system][unknown];
        std::optional<double> lower90 = u ? u->lower90 : lowest, upper90 = u ? u->upper90 : highest;
        if (bounds_only) lower90 = lowest, upper90 = highest;  // the interval is only what the bounds say
        const bool identified = u && u->identified && !bounds_only;
        std::optional<std::string> row_reason = reason;
        if (!row_reason && !identified && note.concurrent_windows > 0) row_reason = concurrency;
        // The shared untracked time belongs to every job of the system alike.
        const std::vector<std::string> jobs = info.job_id.empty() && !members.empty()
                                                  ? members
                                                  : std::vector<std::string>{info.job_id.empty() ? key.system : info.job_id};
        for (const std::string& job : jobs) {
          std::string others;
          for (const std::string& m : members)
            if (m != job) others += (others.empty() ? "" : ",") + m;
          rows.push_back({job, by_type ? SqlValue() : SqlValue(info.name), info.layer_type, info.forward, key.metric,
                          optional(u ? u->estimate : std::nullopt), optional(u ? u->std_error : std::nullopt),
                          optional(lower90), optional(upper90), u ? u->n : int64_t{0}, int64_t{identified ? 1 : 0},
                          optional(condition), others.empty() ? SqlValue() : SqlValue(others),
                          members.empty() ? SqlValue() : SqlValue(note.concurrent_windows),
                          row_reason ? SqlValue(*row_reason) : SqlValue()});
        }
      };
      std::set<std::string> emitted;
      const auto fitted = central.find(key);
      if (fitted != central.end()) {
        const DeconvolveResult hull = deconvolve_hull(fitted->second, variants[key]);
        for (const DeconvolveUnknown& u : hull.unknowns) {
          if (u.name == DeconvolveData::kRest) continue;
          emit(u.name, &u, hull.condition_scaled);
          emitted.insert(u.name);
        }
      }
      // Unknowns the fit never saw because their windows were left out, or no fit at all: said
      // so, rather than left out.
      if (note.concurrent_windows > 0 || !note.failed.empty())
        for (const auto& [unknown, info] : unknowns[key.system])
          if (!emitted.count(unknown)) emit(unknown, nullptr, std::nullopt);
    }
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kEstimatesModule = table_function_module<EstimatesCursor>();

}  // namespace pp
