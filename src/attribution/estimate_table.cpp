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

const std::vector<ArgumentSpec> kArguments = {{"grouping", true}};
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
  std::string job_id;  // empty: the shared untracked time of a joint system
  std::string name, layer_type;
  int64_t forward = 0;
};
constexpr char kJobSeparator = '\x1f';
const std::string kSharedUntracked = "(untracked)|0";

// Per system, beyond its rows: why its rows cannot be identified whatever the fit says.
struct SystemNotes {
  bool windows_unknown = false;  // GPU_UTIL samples off their driver's grid
  bool shared_gauge = false;     // an instant gauge of a GPU shared by its jobs
  int64_t concurrent_windows = 0;  // windows left out: two of its jobs ran at the same time
};

// Whether events of two different jobs run at the same time within [start, end).
bool jobs_ran_at_once(const GpuTimeline& gpu, std::vector<size_t>& events, int64_t start, int64_t end) {
  std::sort(events.begin(), events.end(), [&](size_t a, size_t b) { return gpu.events[a].start < gpu.events[b].start; });
  std::map<uint32_t, int64_t> last_end;  // per job, the latest end so far
  for (size_t i : events) {
    const TimelineEvent& e = gpu.events[i];
    const int64_t from = std::max(e.start, start), to = std::min(e.end, end);
    if (to <= from) continue;
    for (const auto& [job, until] : last_end)
      if (job != e.job && until > from) return true;
    int64_t& until = last_end[e.job];
    until = std::max(until, to);
  }
  return false;
}

// Length of [start, end) covered by the spans of the given jobs on this GPU.
int64_t span_union(const GpuTimeline& gpu, const std::set<uint32_t>& jobs, int64_t start, int64_t end) {
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

// The rows of every system for one timing shift, from every aligned GPU.
std::map<SystemKey, DeconvolveData> build_systems(sqlite3* db, const std::vector<std::string>& gpus, bool by_type,
                                                  int shift, const std::map<std::string, Bounds>& bounds,
                                                  const JobSharing& sharing,
                                                  std::map<std::string, UnknownInfo>& unknowns,
                                                  std::map<SystemKey, SystemNotes>& notes) {
  std::map<SystemKey, DeconvolveData> systems;
  for (size_t g = 0; g < gpus.size(); ++g) {
    const GpuTimeline gpu = read_gpu_timeline(db, gpus[g], std::nullopt, std::nullopt, shift);
    const TimelineSample* current = nullptr;
    size_t current_series = 0;
    std::vector<std::pair<uint32_t, int64_t>> groups;
    std::vector<size_t> window_events;
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
      // Per system, per unknown: its fraction of the window; per joint system, its jobs here and
      // the time their events cover.
      std::map<std::string, std::map<std::string, double>> weights;
      std::map<std::string, std::set<uint32_t>> jobs_here;
      std::map<std::string, double> event_time;
      for (const auto& [group, weight] : groups) {
        const TimelineGroup& gr = gpu.groups[group];
        const std::string& job_id = gpu.jobs[gr.job].job_id;
        const std::string& system = sharing.system(job_id);
        const bool joint = sharing.joint(system);
        const bool untracked = gr.layer == "(untracked)";
        const std::string unknown = (by_type ? gr.layer_type : gr.layer) + "|" + std::to_string(gr.forward);
        if (joint) {
          jobs_here[system].insert(gr.job);
          if (untracked) continue;  // the shared untracked time is the union's, below
          event_time[system] += static_cast<double>(weight);
        }
        const std::string name = joint ? job_id + kJobSeparator + unknown : unknown;
        unknowns.emplace(name, UnknownInfo{joint ? job_id : "", by_type ? gr.layer_type : gr.layer, gr.layer_type,
                                           gr.forward});
        weights[system][name] += static_cast<double>(weight) / window;
      }
      for (const auto& [system, jobs] : jobs_here) {
        const double spans = static_cast<double>(span_union(gpu, jobs, start, end)) * scale;
        const double untracked = std::max(0.0, spans - event_time[system]);
        if (untracked <= 0) continue;
        unknowns.emplace(kSharedUntracked, UnknownInfo{"", "(untracked)", "(untracked)", 0});
        weights[system][kSharedUntracked] += untracked / window;
      }
      for (const auto& [system, fractions] : weights) {
        const SystemKey system_key{system, series.metric};
        auto [it, added] = systems.try_emplace(system_key);
        if (added) {
          const auto b = bounds.find(series.metric);
          if (b != bounds.end()) it->second.set_bounds(b->second.lower, b->second.upper);
        }
        SystemNotes& note = notes[system_key];
        if (sharing.joint(system)) {
          if (instant) note.shared_gauge = true;
          // Time-slicing is the model: a window in which two of the jobs ran at once is not.
          if (jobs_here[system].size() > 1 && jobs_ran_at_once(gpu, window_events, start, end)) {
            if (shift == 0) ++note.concurrent_windows;
            continue;
          }
        }
        for (const auto& [name, fraction] : fractions) it->second.add(key, name, std::min(1.0, fraction), current->value);
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
    const int rc = plan_arguments(info, kFirstArgument, kArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 1000;
    info->estimatedCost = 1e7;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
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
    std::map<std::string, UnknownInfo> unknowns;
    std::map<SystemKey, SystemNotes> notes;
    // One shift's systems at a time: the central results, then the variants' (only their
    // intervals are kept).
    std::map<SystemKey, DeconvolveResult> central;
    std::map<SystemKey, std::vector<DeconvolveResult>> variants;
    for (int shift : kShifts) {
      for (auto& [key, data] : build_systems(db, gpus, by_type, shift, bounds, sharing, unknowns, notes)) {
        DeconvolveResult r = deconvolve(data);
        if (shift == 0)
          central.emplace(key, std::move(r));
        else
          variants[key].push_back(std::move(r));
      }
    }
    std::vector<std::vector<SqlValue>> rows;
    auto optional = [](const std::optional<double>& v) { return v ? SqlValue(*v) : SqlValue(); };
    for (const auto& [key, result] : central) {
      const DeconvolveResult hull = deconvolve_hull(result, variants[key]);
      const SystemNotes& note = notes[key];
      const std::vector<std::string>& members = sharing.members(key.system);
      // Why no row of the system is identified, whatever its fit says (NULL: nothing beyond it).
      // GPU_UTIL samples off their driver's grid were fitted as DCGM windows, which they are not:
      // the fit says nothing about how far that moves the estimate. An instant gauge of a shared
      // GPU (memory in use) holds every job's part at once, which a time-slicing model does not.
      std::optional<std::string> reason;
      if (note.windows_unknown)
        reason = "samples whose window is not known (a driver-period metric off its driver's grid)";
      else if (note.shared_gauge)
        reason = "an instant gauge of a shared GPU holds every sharing job's part at once";
      // (Solving it as a sum per job does not help: while one job runs, the other waits, so a
      // job's layers always appear with the other's idle level and only their sum is known; the
      // metric's lower bound then pins one part and the other looks identified, wrongly.)
      const bool bounds_only = reason.has_value();
      for (const DeconvolveUnknown& u : hull.unknowns) {
        if (u.name == DeconvolveData::kRest) continue;
        const UnknownInfo& info = unknowns[u.name];
        std::optional<double> lower90 = u.lower90, upper90 = u.upper90;
        if (bounds_only) {  // and the interval is only what the metric's bounds say
          const auto b = bounds.find(key.metric);
          lower90 = b != bounds.end() && std::isfinite(b->second.lower) ? std::optional<double>(b->second.lower) : std::nullopt;
          upper90 = b != bounds.end() && std::isfinite(b->second.upper) ? std::optional<double>(b->second.upper) : std::nullopt;
        }
        std::optional<std::string> row_reason = reason;
        if (!row_reason && !u.identified && note.concurrent_windows > 0)
          row_reason = std::to_string(note.concurrent_windows) +
                       " windows in which the sharing jobs ran at the same time were left out";
        const bool identified = u.identified && !bounds_only;
        // The shared untracked time belongs to every job of the system alike.
        const std::vector<std::string> jobs = info.job_id.empty() && !members.empty()
                                                  ? members
                                                  : std::vector<std::string>{info.job_id.empty() ? key.system : info.job_id};
        for (const std::string& job : jobs) {
          std::string others;
          for (const std::string& m : members)
            if (m != job) others += (others.empty() ? "" : ",") + m;
          rows.push_back({job, by_type ? SqlValue() : SqlValue(info.name), info.layer_type, info.forward, key.metric,
                          optional(u.estimate), optional(u.std_error), optional(lower90), optional(upper90), u.n,
                          int64_t{identified ? 1 : 0}, optional(hull.condition_scaled),
                          others.empty() ? SqlValue() : SqlValue(others),
                          members.empty() ? SqlValue() : SqlValue(note.concurrent_windows),
                          row_reason ? SqlValue(*row_reason) : SqlValue()});
        }
      }
    }
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kEstimatesModule = table_function_module<EstimatesCursor>();

}  // namespace pp
