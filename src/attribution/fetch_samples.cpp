// Refresh step 2: raw samples of the metrics of pp_metrics (the six of Table I, and any a user
// added) for the GPUs of unfolded events, over their jobs' spans, into pp_samples. One
// pp_gpu_samples (prom_samples) call covers all GPUs (one request per chunk, never one per event) for each
// stretch of time the spans cover (spans more than a chunk apart are fetched apart). Series of whole GPUs are
// matched by the UUID label, then `uuid` (older exporters), then Hostname + gpu index, and never
// a series with a GPU_I_ID label (a MIG GPU instance's). Events on a MIG device ("MIG-..."
// gpu_uuid) get the series of their GPU instance: the parent's UUID (or uuid) label and GPU_I_ID,
// from pp_mig_devices, stored under the MIG UUID, so each instance is a GPU of its own to every
// later step.
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/statement.hpp"
#include "core/text.hpp"
#include "prometheus/promql.hpp"

namespace pp {
namespace {

// One regex alternative per value, each quoted: "a|b\\.c".
std::string alternatives(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : "|") + RE2::QuoteMeta(v);
  return out;
}

// A selector for the metrics of pp_metrics on the GPUs whose `label` is one of values, and
// `instances`: the GPU_I_ID values of MIG GPU instances, or none for whole GPUs only
// (GPU_I_ID="" matches the series without that label).
std::string selector_for(sqlite3* db, const std::string& label, const std::vector<std::string>& values,
                         const std::vector<std::string>& instances = {}) {
  std::vector<std::string> metrics;
  Statement list(db, "SELECT metric FROM main.pp_metrics ORDER BY metric");
  while (list.step()) metrics.push_back(list.column_text(0));
  const std::string instance_matcher =
      instances.empty() ? "GPU_I_ID=\"\"" : "GPU_I_ID=~" + promql_quote(alternatives(instances));
  return "{__name__=~" + promql_quote(alternatives(metrics)) + "," + label + "=~" + promql_quote(alternatives(values)) +
         "," + instance_matcher + "}";
}

// A stretch of time to fetch samples for: job spans (fetch_spans) within a chunk of each
// other, so that the time between jobs far apart on a GPU is not asked for; and the longest
// of its spans, which an error names when the stretch needs too many requests.
struct FetchRange {
  double start, end;
  std::set<std::string> uuids;  // the GPUs of its spans: a pass asks for these only
  std::string longest_job, longest_uuid;
  double longest_start = 0, longest_end = 0;
  double longest_last_event = 0;  // its last event's end, which longest_end may cut at now
  int64_t from_ms() const { return static_cast<int64_t>(std::floor(start * 1000)) - 1; }
  int64_t through_ms() const { return static_cast<int64_t>(std::ceil(end * 1000)); }
};

std::vector<FetchRange> fetch_ranges(RefreshRun& run, double margin) {
  const double chunk = static_cast<double>(std::max<int64_t>(1, run.connection.settings().get_int("samples_chunk_seconds")));
  std::vector<FetchRange> ranges;
  Statement list(run.db, named_sql("refresh", "fetch_spans"));
  while (list.step()) {  // (by first second)
    const double first = list.column_double(2), end = std::min(run.now, list.column_double(3) + margin);
    if (!(end > first)) continue;
    if (ranges.empty() || first > ranges.back().end + chunk)
      ranges.push_back({first, end, {}, {}, {}, 0, 0});
    else
      ranges.back().end = std::max(ranges.back().end, end);
    FetchRange& r = ranges.back();
    r.uuids.insert(list.column_text(0));
    if (r.longest_job.empty() || end - first > r.longest_end - r.longest_start) {
      r.longest_uuid = list.column_text(0);
      r.longest_job = list.column_text(1);
      r.longest_start = first;
      r.longest_end = end;
      r.longest_last_event = list.column_double(3);
    }
  }
  return ranges;
}

// prom_samples refuses a range of more than max_requests_per_query chunks; the events behind
// such a range (a clock set years off, say) are named before anything is asked, by file, line
// and their own times: the failed refresh takes back its imports, so pp_events no longer holds
// them. The samples asked for may start later than the first event (an earlier refresh fetched
// up to there) and end sooner than the last (never past now): the message says so.
void check_requests(sqlite3* db, const Settings& settings, const FetchRange& r) {
  const double chunk = static_cast<double>(std::max<int64_t>(1, settings.get_int("samples_chunk_seconds")));
  const double requests = std::ceil((r.end - r.start + 0.001) / chunk);
  if (requests <= static_cast<double>(settings.get_int("max_requests_per_query"))) return;
  Statement ends(db, named_sql("refresh", "span_end_lines"));
  ends.bind(":job_id", r.longest_job);
  ends.bind(":uuid", r.longest_uuid);
  const bool found = ends.step();  // none where retention removed the job's events
  const double first_s = found ? ends.column_double(1) : r.longest_start;
  const double last_s = found ? ends.column_double(3) : r.longest_last_event;
  const auto where = [&](int column) { return found ? " (" + ends.column_text(column) + ")" : std::string(); };
  const bool clamped_to_now = last_s > r.longest_end;
  const std::string asked = r.longest_start > first_s + 1 || clamped_to_now
                                ? " (samples are asked for from " + utc_text(r.longest_start) + " to " +
                                      (clamped_to_now ? "now, " : "") + utc_text(r.longest_end) + ")"
                                : std::string();
  throw Error("the samples to fetch from " + utc_text(r.start) + " to " + utc_text(r.end) + " UTC need " +
              std::to_string(static_cast<long long>(requests)) + " requests of samples_chunk_seconds = " +
              settings.get("samples_chunk_seconds") + " (limit max_requests_per_query = " +
              settings.get("max_requests_per_query") + "); the longest job span in that time is job '" +
              r.longest_job + "' on GPU " + r.longest_uuid + ": its events run from " + utc_text(first_s) + where(0) +
              " to " + utc_text(last_s) + " UTC" + where(2) + asked +
              ": if a clock was off, correct or remove the line whose time is off in its file (no setting skips "
              "it); if the job did run that long, raise the limit or the chunk");
}

// UUIDs (or host names) of r's GPUs that still need samples in it (refresh.sql
// gpus_without_samples), without repeats; `partial`: also those whose samples cover only part of
// the time their events need (more than a few of their spacings and lag_ms missing at an end).
std::vector<std::string> gpus_without_samples(sqlite3* db, bool by_host, bool partial, int64_t lag_ms,
                                              const FetchRange& r) {
  Statement list(db, named_sql("refresh", "gpus_without_samples"));
  list.bind(":by_host", int64_t{by_host ? 1 : 0});
  list.bind(":partial", int64_t{partial ? 1 : 0});
  list.bind(":lag_ms", lag_ms);
  list.bind(":from_ms", r.from_ms());
  list.bind(":through_ms", r.through_ms());
  std::vector<std::string> names;
  while (list.step()) {
    if (!r.uuids.count(list.column_text(0))) continue;
    const std::string name = list.column_text(1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// Parent GPU UUIDs and GPU_I_IDs of the MIG devices that still need samples in r
// (refresh.sql instances_without_samples), each list without repeats.
void instances_without_samples(sqlite3* db, const FetchRange& r, std::vector<std::string>& parents,
                               std::vector<std::string>& instances) {
  parents.clear();
  instances.clear();
  Statement list(db, named_sql("refresh", "instances_without_samples"));
  list.bind(":from_ms", r.from_ms());
  list.bind(":through_ms", r.through_ms());
  while (list.step()) {
    if (!r.uuids.count(list.column_text(0))) continue;
    const std::string parent = list.column_text(1), instance = list.column_text(2);
    if (std::find(parents.begin(), parents.end(), parent) == parents.end()) parents.push_back(parent);
    if (std::find(instances.begin(), instances.end(), instance) == instances.end()) instances.push_back(instance);
  }
}

// The samples of range r: the GPUs by their UUID label, then `uuid` (dcgm-exporter's older
// spelling) for those the first found nothing for, or only part of their time for (an exporter
// that changed spelling mid-job: the passes' samples add up), then by host name (Hostname, then
// hostname) and index for those neither found anything for; then the MIG GPU instances.
long long fetch_range(RefreshRun& run, const FetchRange& r) {
  long long added = 0;
  struct Pass {
    const char* label;
    const char* insert;
    bool by_host;
  };
  const int64_t lag_ms = run.connection.settings().get_int("max_sample_lag_ms");
  for (const Pass& pass : {Pass{"UUID", "insert_samples_by_uuid", false}, Pass{"uuid", "insert_samples_by_uuid", false},
                           Pass{"Hostname", "insert_samples_by_host", true},
                           Pass{"hostname", "insert_samples_by_host", true}}) {
    const bool second_spelling = std::string(pass.label) == "uuid";
    const std::vector<std::string> missing = gpus_without_samples(run.db, pass.by_host, second_spelling, lag_ms, r);
    if (missing.empty()) {
      if (second_spelling) continue;  // (the passes by host are for GPUs with no samples at all)
      break;
    }
    SqlParameters parameters = {
        {":selector", selector_for(run.db, pass.label, missing)}, {":start", r.start}, {":end", r.end}};
    if (pass.by_host) parameters.insert(parameters.end(), {{":from_ms", r.from_ms()}, {":through_ms", r.through_ms()}});
    added += run_script(run.db, named_sql("refresh", pass.insert), parameters);
  }
  // MIG GPU instances: parents x instance IDs in one selector; the insert keeps the pairs asked for.
  std::vector<std::string> parents, instances;
  for (const char* label : {"UUID", "uuid"}) {
    instances_without_samples(run.db, r, parents, instances);
    if (parents.empty()) break;
    added += run_script(run.db, named_sql("refresh", "insert_samples_by_instance"),
                        {{":selector", selector_for(run.db, label, parents, instances)}, {":start", r.start}, {":end", r.end}});
  }
  return added;
}

}  // namespace

void fetch_samples(RefreshRun& run) {
  const int64_t lag_ms = run.connection.settings().get_int("max_sample_lag_ms");
  const double margin = query_double(run.db, named_sql("refresh", "fetch_margin"),
                                     {{":after_seconds", kSamplesAfterLastEventSeconds},
                                      {":lag_seconds", static_cast<double>(lag_ms) / 1e3}}, 60);
  const std::vector<FetchRange> ranges = fetch_ranges(run, margin);
  if (ranges.empty()) return;
  for (const FetchRange& r : ranges) check_requests(run.db, run.connection.settings(), r);
  run_script(run.db, named_sql("refresh", "fetch_gpus"),
             {{":after_ms", kSamplesAfterLastEventSeconds * 1000}, {":lag_ms", lag_ms}});
  double end = ranges.front().end;
  for (const FetchRange& r : ranges) {
    run.summary.samples_added += fetch_range(run, r);
    end = std::max(end, r.end);
  }
  run_script(run.db, named_sql("refresh", "record_fetch"),
             {{":end_ms", static_cast<int64_t>(std::floor(end * 1000))}});
}

}  // namespace pp
