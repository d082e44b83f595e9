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
// is left out (concurrent_windows counts them), as is one in which two processes of one job did
// (ranks sharing a GPU); an instant gauge of a shared GPU (memory in use) holds every job's part
// at once and is never identified. A driver-period metric's (GPU_UTIL's)
// window whose driver grid the align step did not place is left out too: its window is not known.
// Windows that the retention step removed enter as the sums it kept (estimator_state.hpp), so a
// system is the fit of every window its jobs had.
// The system is solved three times: with each window where the alignment puts it, and moved by
// the uncertainty of its offset (pp_alignment.timing_ns over its job's stretches,
// read_gpu_timeline) either way; the estimate is the first, the 90% interval adds how far the
// moved windows move it to the noise's part (deconvolve_hull), and `identified` is judged on
// that, so timing uncertainty widens intervals instead of producing a confident wrong number.
// Columns: job_id, layer (NULL per type), layer_type, forward, metric, estimate, stderr,
//   lower90, upper90, windows, identified (0/1), condition (of the scaled system), shared_with
//   (the other jobs of a joint system, comma-separated; NULL alone), concurrent_windows (NULL
//   alone, unless its own processes ran at once), reason (why a row is never identified, beyond
//   its interval; NULL otherwise).
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
#include "attribution/estimator_state.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/estimator_systems.hpp"
#include "attribution/job_sharing.hpp"
#include "core/errors.hpp"
#include "core/interrupt.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"
#include "attribution/schema.hpp"
#include "stats/deconvolve.hpp"
#include "stats/sample_key.hpp"

namespace pp {
namespace {

// Jobs none of whose GPU stretches (pp_alignment, over the job's spans) had their timing
// determined, though some were aligned: every one poorly or not determined. A stretch's timing
// shift covers the uncertainty of one offset, not an offset that may be off by periods (a GPU
// whose dcgm-exporter serves GPU_UTIL and FB_USED alone, no profiling field to align with):
// their estimates give only what the bounds say.
std::set<std::string> jobs_without_determined_timing(sqlite3* db) {
  std::set<std::string> jobs;
  Statement list(db,
                 "SELECT g.job_id FROM main.pp_gpu_spans AS g JOIN main.pp_alignment AS a ON a.uuid = g.uuid "
                 "AND a.from_ms <= g.last_ns / 1000000 AND a.through_ms >= g.first_ns / 1000000 "
                 "WHERE g.uuid <> 'cpu' AND a.status <> 'no layers' GROUP BY g.job_id "
                 "HAVING max(a.status IN ('estimated', 'setting')) = 0");
  while (list.step()) jobs.insert(list.column_text(0));
  return jobs;
}

const std::vector<ArgumentSpec> kEstimateArguments = {{"grouping", true}, {"database", false}};

struct EstimatesCursor : RowsCursor {
  static constexpr const char* kName = "pp_estimates";
  static constexpr const char* kSchema =
      "CREATE TABLE x(job_id TEXT, layer TEXT, layer_type TEXT, forward INTEGER, metric TEXT, estimate REAL, "
      "stderr REAL, lower90 REAL, upper90 REAL, windows INTEGER, identified INTEGER, condition REAL, "
      "shared_with TEXT, concurrent_windows INTEGER, reason TEXT, grouping HIDDEN, database HIDDEN)";
  static constexpr int kFirstArgument = 15;
  static constexpr bool kDirectOnly = false;
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
    refuse_other_database(connection->db(), args[1]);
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
    const std::set<std::string> timing_unknown = jobs_without_determined_timing(db);
    const int64_t horizon_ms = timing_horizon_ms(connection->settings().get_int("event_retention_minutes"));
    SystemUnknowns unknowns;
    std::map<SystemKey, SystemNotes> notes;
    InterruptCheck interrupted(db);
    // One shift's systems at a time: the central results, then the variants' (only their
    // intervals are kept).
    std::map<SystemKey, DeconvolveResult> central;
    std::map<SystemKey, std::vector<DeconvolveResult>> variants;
    for (int shift : kTimingShifts) {
      std::map<SystemKey, DeconvolveData> systems =
          build_systems(db, gpus, by_type, shift, bounds, sharing, unknowns, notes, horizon_ms);
      add_estimator_state(db, by_type, shift, bounds, sharing, systems, unknowns, notes);
      for (auto& [key, data] : systems) {
        if (!notes[key].failed.empty()) continue;
        DeconvolveResult r;
        try {
          r = deconvolve(data, [&] { interrupted.check(); });
        } catch (const InterruptedError&) {
          throw;
        } catch (const std::exception& e) {  // no fit for this system (its state has too many unknowns); the others go on
          notes[key].failed = std::string("its system could not be solved (") + e.what() + ")";
          continue;
        }
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
      // A state an earlier version kept with GPU_UTIL samples off their driver's grid fitted as
      // DCGM windows, which they are not: the fit says nothing about how far that moves the
      // estimate (such windows are left out now, off_grid_windows). An instant gauge of a shared
      // GPU (memory in use) holds every job's part at once, which a time-slicing model does not.
      // (Solving it as a sum per job does not help: while one job runs, the other waits, so a
      // job's layers always appear with the other's idle level and only their sum is known; the
      // metric's lower bound then pins one part and the other looks identified, wrongly.)
      std::optional<std::string> reason;
      const bool timing_known = members.empty() ? !timing_unknown.count(key.system)
                                                : std::none_of(members.begin(), members.end(), [&](const std::string& m) {
                                                    return timing_unknown.count(m) > 0;
                                                  });
      if (!note.failed.empty())
        reason = note.failed;
      else if (!timing_known)
        reason = "the timing of its GPU's samples was determined in no stretch of the job (pp_alignment: "
                 "poorly or not determined), so where its windows lie is not known";
      else if (note.windows_unknown)
        reason = "samples whose window is not known (a driver-period metric off its driver's grid), in the "
                 "estimator's state an earlier version kept";
      else if (note.shared_gauge)
        reason = "an instant gauge of a shared GPU holds every sharing job's part at once";
      const bool bounds_only = reason.has_value();
      const std::string concurrency =
          std::to_string(note.concurrent_windows) +
          (members.empty() ? " windows in which two processes of the job ran at the same time on one GPU were left out"
                           : " windows in which the sharing jobs ran at the same time were left out");
      const std::string off_grid = std::to_string(note.off_grid_windows) +
                                   " windows whose samples lie off their driver's grid (a driver-period metric: the "
                                   "window they average is not known) were left out";
      auto emit = [&](const std::string& unknown, const DeconvolveUnknown* u, std::optional<double> condition) {
        const UnknownInfo& info = unknowns[key.system][unknown];
        std::optional<double> lower90 = u ? u->lower90 : lowest, upper90 = u ? u->upper90 : highest;
        if (bounds_only) lower90 = lowest, upper90 = highest;  // the interval is only what the bounds say
        const bool identified = u && u->identified && !bounds_only;
        std::optional<std::string> row_reason = reason;
        // Windows left out, where they say why a row is not identified: a layer that ran only in
        // them has no estimate. Windows off the driver's grid are said only where no window of the
        // row was fitted; where some were, the interval is the answer, and a longer run narrows it.
        if (!row_reason && !identified) {
          std::string left_out = note.concurrent_windows > 0 ? concurrency : "";
          if (!u && note.off_grid_windows > 0) left_out += (left_out.empty() ? "" : "; ") + off_grid;
          if (!left_out.empty()) row_reason = left_out;
          else if (!u)
            row_reason = "no sample of this metric covers any of its calls (an instant gauge read between "
                         "them, or a gap in the samples)";
        }
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
                          members.empty() && note.concurrent_windows == 0 ? SqlValue() : SqlValue(note.concurrent_windows),
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
      // Unknowns the fit never saw (their windows left out, no fit at all, or no sample of this
      // metric in their calls: an instant gauge misses short layers) are said so, rather than
      // left out: every metric has a row for each layer the system met.
      for (const auto& [unknown, info] : unknowns[key.system])
        if (!emitted.count(unknown)) emit(unknown, nullptr, std::nullopt);
    }
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kEstimatesModule = table_function_module<EstimatesCursor>();

}  // namespace pp
