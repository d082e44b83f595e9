// What pp_refresh says in pp_last_warnings() about events it cannot attribute, or cannot
// attribute to one job alone: never dropped silently.
#include <cmath>
#include <string>
#include <vector>

#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/settings.hpp"
#include "core/statement.hpp"
#include "core/text.hpp"

namespace pp {

// Before folding: unfolded events that start before their GPU's fold point arrived after (some
// of) their sample windows were folded, so those overlaps are lost.
void count_late_events(RefreshRun& run) {
  run.late_events = static_cast<long long>(query_double(run.db, named_sql("refresh", "late_events"), {}, 0));
}

// During the fold, before it marks its events folded: on a GPU's first fold, the events that
// end before its first sample's window could begin (dcgm-exporter started after the job, or
// Prometheus' retention dropped the job's first samples) are marked folded with no window, so
// the job's values describe only the rest of it: said per GPU and job.
void warn_about_events_before_samples(RefreshRun& run) {
  constexpr int kNamed = 10;
  int named = 0, more = 0;
  std::vector<std::string> first_folds;
  {
    Statement list(run.db, "SELECT uuid FROM main.pp_refresh_fold_window WHERE after_ms = 0 AND uuid <> 'cpu' ORDER BY uuid");
    while (list.step()) first_folds.push_back(list.column_text(0));
  }
  const int64_t lag_ms = run.connection.settings().get_int("max_sample_lag_ms");
  for (const std::string& uuid : first_folds) {
    Statement cutoff(run.db, named_sql("refresh", "first_sample_cutoff"));
    cutoff.bind(":uuid", uuid);
    cutoff.bind(":lag_ms", lag_ms);
    if (!cutoff.step() || cutoff.column_null(0)) continue;
    const int64_t cutoff_ns = cutoff.column_int64(0);
    Statement before(run.db, named_sql("refresh", "events_before_first_sample"));
    before.bind(":uuid", uuid);
    before.bind(":cutoff_ns", cutoff_ns);
    while (before.step()) {
      if (++named > kNamed) {
        ++more;
        continue;
      }
      run.warn(std::to_string(before.column_int64(1)) + " events of job '" + before.column_text(0) + "' on GPU " + uuid +
               " (from " + utc_text(before.column_double(2) / 1e9) + " to " + utc_text(before.column_double(3) / 1e9) +
               " UTC) end before the first DCGM sample of that GPU at " +
               redact_url(run.connection.settings().get("prometheus_url")) + " could begin (" +
               utc_text(static_cast<double>(cutoff_ns) / 1e9) +
               " UTC), so they are not attributed and the job's values describe the rest of it (did "
               "dcgm-exporter or the scrape start after the job, or Prometheus' retention drop its first samples?)");
    }
  }
  if (more > 0)
    run.warn("events of " + std::to_string(more) + " more (job, GPU) pairs end before the first DCGM sample of their GPU");
}

// After folding: a GPU whose fetched samples lack some metrics in the time folded (the others
// there), so that those columns of its jobs come from their other GPUs, or are empty.
void warn_about_missing_metrics(RefreshRun& run) {
  Statement missing(run.db, named_sql("refresh", "metrics_missing"));
  while (missing.step())
    run.warn("GPU " + missing.column_text(0) + " has no samples of " + missing.column_text(1) +
             " in the time folded, which its other metrics have (an exporter without those metrics, or DCGM "
             "profiling held by another tool, such as a profiler, leaves them blank): its jobs' values of them "
             "come from their other GPUs, or are empty");
}

namespace {

// A MIG device whose GPU instance is known (pp_mig_devices, or its R470-era UUID) and that has
// no samples: what was looked for, and how to check it. A gpu_instance_id a user wrote that is no
// GPU_I_ID ('seven', 2.5, -1) never matches a series: named, with the UPDATE that mends it.
std::string mig_device_without_samples(const std::string& mig, const std::string& events, const std::string& parent,
                                       const std::string& instance, bool instance_valid, bool from_row,
                                       const std::string& url) {
  if (!instance_valid)
    return "MIG device " + mig + " (" + events + ") has gpu_instance_id '" + instance +
           "' in pp_mig_devices, which is not a GPU_I_ID (a whole number from 0), so no series of its GPU instance "
           "can match and its events are not attributed; mend the row with UPDATE pp_mig_devices SET "
           "gpu_instance_id = <GPU_I_ID> WHERE mig_uuid = '" + mig +
           "' (nvidia-smi mig -lgi lists the GPU instance IDs) and refresh again";
  return "MIG device " + mig + " (" + events + ") has no DCGM samples at " + url + ": no series there carries UUID (or uuid) " + parent +
         " with GPU_I_ID " + instance + ", its GPU instance as " +
         (from_row ? "pp_mig_devices gives it (check that row against nvidia-smi -L and nvidia-smi mig -lgi, and "
                   : "its MIG UUID (a driver before R470's) names it (check ") +
         "that dcgm-exporter runs on that GPU with MIG support, which labels each instance's series with "
         "GPU_I_ID); its events are not attributed";
}

}  // namespace

void warn_about_unattributed(RefreshRun& run) {
  constexpr int kNamed = 5;
  std::string named;
  long long gpus = 0;
  int mig_devices = 0;
  const std::string url = redact_url(run.connection.settings().get("prometheus_url"));
  Statement never(run.db, named_sql("refresh", "gpus_never_sampled"));
  while (never.step()) {
    const std::string events = std::to_string(never.column_int64(1)) + " events of job '" + never.column_text(2) + "'" +
                               (never.column_int64(3) > 1 ? " and " + std::to_string(never.column_int64(3) - 1) + " more jobs" : "");
    if (!never.column_null(4)) {
      if (++mig_devices <= kNamed)
        run.warn(mig_device_without_samples(never.column_text(0), events, never.column_text(4), never.column_text(5),
                                            never.column_int64(6) != 0, never.column_int64(7) != 0, url));
      continue;
    }
    if (++gpus <= kNamed) named += std::string(named.empty() ? "" : ", ") + never.column_text(0) + " (" + events + ")";
  }
  if (mig_devices > kNamed)
    run.warn(std::to_string(mig_devices - kNamed) + " more MIG devices of the events have no DCGM samples at " + url);
  if (gpus > 0)
    run.warn(std::to_string(gpus) + " GPU(s) of the events have no DCGM samples at " + url + ": " + named +
             (gpus > kNamed ? " and " + std::to_string(gpus - kNamed) + " more" : "") +
             " (check prometheus_url, and that dcgm-exporter's series carry the events' GPU UUID in a UUID or uuid "
             "label, or their host in Hostname and the GPU's index in gpu); their events are not attributed");
  // A MIG device's samples are its GPU instance's series, found through pp_mig_devices.
  constexpr int named_devices = 10;
  int devices = 0;
  Statement unmapped(run.db, named_sql("refresh", "mig_devices_without_mapping"));
  while (unmapped.step()) {
    if (++devices > named_devices) continue;
    const std::string mig = unmapped.column_text(0);
    run.warn("MIG device " + mig + " (" + unmapped.column_text(1) +
             " events) has no row in pp_mig_devices, so its GPU instance's samples cannot be found "
             "(dcgm-exporter labels them with the parent GPU's UUID and GPU_I_ID) and its events are not "
             "attributed; add it with INSERT INTO pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id) VALUES ('" +
             mig +
             "', 'GPU-<parent>', <GPU_I_ID>) (nvidia-smi -L lists each MIG device under its GPU, nvidia-smi "
             "mig -lgi the GPU instance IDs) and refresh again, or run the hook client where NVML "
             "(libnvidia-ml.so.1) loads, which records it");
  }
  if (devices > named_devices)
    run.warn(std::to_string(devices - named_devices) + " more MIG devices have no row in pp_mig_devices");
  if (run.late_events > 0)
    run.warn(std::to_string(run.late_events) +
             " events arrived after their sample windows were folded and are not attributed (folded without "
             "windows: their calls count, in no metric's mean): a refresh folds a "
             "GPU's windows up to " + run.connection.settings().get("attribution_margin_seconds") +
             " s (attribution_margin_seconds) past the last event it has of that GPU once that event is older "
             "than that, or all of them with final = 1, so events of that time read later come too late (a "
             "job's other files, another job's run on the GPU, or the rest of a job that was still running when "
             "a refresh with final = 1, the commands' --final, folded its windows): refresh every event file of "
             "a GPU's time together, in the order they were written (or each job into a database of its own), "
             "and with final = 1 only once the job has ended");
  // Not final: the newest events wait for windows the job may still write events into. Said,
  // so that a refresh right after a job ended is not taken for the whole job. Final: every
  // window there is was folded, so what waits lies past its GPU's last sample.
  // The same count is pp_refresh's events_waiting, so that a caller can refresh again.
  Statement waiting(run.db, named_sql("refresh", "waiting_events"));
  if (waiting.step() && waiting.column_int64(0) > 0) {
    run.summary.events_waiting = waiting.column_int64(0);
    run.summary.waiting_end_time = waiting.column_double(2);
    const std::string events = std::to_string(waiting.column_int64(0)) + " events (the last " +
                               std::to_string(static_cast<long long>(std::ceil(waiting.column_double(1)))) + " s)";
    if (!run.final)
      run.warn(events + " are not folded yet: while a job may still write events, the fold waits " +
               run.connection.settings().get("attribution_margin_seconds") +
               " s (attribution_margin_seconds) after a GPU's last event; refresh again later, or with "
               "final = 1 once the job has ended");
    else
      run.warn(events + " lie past the last DCGM sample of their GPU at " +
               redact_url(run.connection.settings().get("prometheus_url")) +
               ", so they are not attributed yet (did dcgm-exporter or the scrape stop before the job ended, or "
               "retention drop the samples?); a later refresh folds them once Prometheus has their samples");
  }
}

// After folding: jobs whose spans on one GPU overlap (colocated_spans), for the pairs this
// fold added events to. The GPU's samples describe both jobs at once; the views flag their rows
// and the estimator solves the jobs jointly.
void warn_about_shared_gpus(RefreshRun& run) {
  constexpr int named_pairs = 10;
  int pairs = 0;
  Statement shared(run.db, named_sql("refresh", "shared_gpus"));
  while (shared.step()) {
    if (++pairs > named_pairs) continue;
    run.warn("GPU " + shared.column_text(0) + " was shared by jobs " + shared.column_text(1) + " and " +
             shared.column_text(2) + " from " + shared.column_text(3) + " to " + shared.column_text(4) + " UTC (" +
             shared.column_text(5) +
             " s): its samples describe both jobs at once, so their overlap means blend the two; the estimator "
             "solves them jointly (layer_estimates.shared_with); see colocated_spans");
  }
  if (pairs > named_pairs)
    run.warn(std::to_string(pairs - named_pairs) + " more pairs of jobs shared a GPU; see colocated_spans");
}

void warn_about_unnamed_gpus(RefreshRun& run) {
  Statement unnamed(run.db, named_sql("refresh", "unnamed_gpus_of_several_devices"));
  while (unnamed.step())
    run.warn("GPU '" + unnamed.column_text(0) + "' of the events is " + unnamed.column_text(1) + " devices (" +
             unnamed.column_text(2) +
             "): their hook clients could not name their GPUs' UUIDs, and events are attributed by the GPU they "
             "name, so these devices are one GPU here: the samples matched to them by host and index mix under "
             "one name (one per time), and their jobs read as sharing it; do not trust these jobs' numbers. "
             "Give the hook client the UUIDs (nvidia-smi in the container, torch 2.0 or later, or "
             "CUDA_VISIBLE_DEVICES=GPU-...)");
}

}  // namespace pp
