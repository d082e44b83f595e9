// Refresh step 2: raw samples of the metrics of pp_metrics (the six of Table I, and any a user
// added) for the GPUs of unfolded events, over their time span, into pp_samples. One prom_samples
// call covers all GPUs (one request per chunk, never one per event). Series of whole GPUs are
// matched by the UUID label, then `uuid` (older exporters), then Hostname + gpu index, and never
// a series with a GPU_I_ID label (a MIG GPU instance's). Events on a MIG device ("MIG-..."
// gpu_uuid) get the series of their GPU instance: the parent's UUID (or uuid) label and GPU_I_ID,
// from pp_mig_devices, stored under the MIG UUID, so each instance is a GPU of its own to every
// later step.
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/statement.hpp"
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

// UUIDs (or host names) of the GPUs that still need samples (refresh.sql gpus_without_samples).
std::vector<std::string> gpus_without_samples(sqlite3* db, bool by_host) {
  Statement list(db, named_sql("refresh", "gpus_without_samples"));
  list.bind(":by_host", int64_t{by_host ? 1 : 0});
  std::vector<std::string> names;
  while (list.step()) names.push_back(list.column_text(0));
  return names;
}

// Parent GPU UUIDs and GPU_I_IDs of the MIG devices that still need samples
// (refresh.sql instances_without_samples), each list without repeats.
void instances_without_samples(sqlite3* db, std::vector<std::string>& parents, std::vector<std::string>& instances) {
  parents.clear();
  instances.clear();
  Statement list(db, named_sql("refresh", "instances_without_samples"));
  while (list.step()) {
    const std::string parent = list.column_text(0), instance = list.column_text(1);
    if (std::find(parents.begin(), parents.end(), parent) == parents.end()) parents.push_back(parent);
    if (std::find(instances.begin(), instances.end(), instance) == instances.end()) instances.push_back(instance);
  }
}

}  // namespace

void fetch_samples(RefreshRun& run) {
  const int64_t lag_ms = run.connection.settings().get_int("max_sample_lag_ms");
  const double margin = query_double(run.db, named_sql("refresh", "fetch_margin"),
                                     {{":after_seconds", kSamplesAfterLastEventSeconds},
                                      {":lag_seconds", static_cast<double>(lag_ms) / 1e3}}, 60);
  const double start = query_double(run.db, named_sql("refresh", "fetch_start"), {}, NAN);
  if (std::isnan(start)) return;
  const double last_end = query_double(run.db, named_sql("refresh", "fetch_last_end"), {}, start);
  const double end = std::min(run.now, last_end + margin);
  if (end <= start) return;

  run_script(run.db, named_sql("refresh", "fetch_gpus"),
             {{":after_ms", kSamplesAfterLastEventSeconds * 1000}, {":lag_ms", lag_ms}});
  struct Pass {
    const char* label;
    const char* insert;
    bool by_host;
  };
  for (const Pass& pass : {Pass{"UUID", "insert_samples_by_uuid", false}, Pass{"uuid", "insert_samples_by_uuid", false},
                           Pass{"Hostname", "insert_samples_by_host", true}}) {
    const std::vector<std::string> missing = gpus_without_samples(run.db, pass.by_host);
    if (missing.empty()) break;
    run.summary.samples_added += run_script(
        run.db, named_sql("refresh", pass.insert),
        {{":selector", selector_for(run.db, pass.label, missing)}, {":start", start}, {":end", end}});
  }
  // MIG GPU instances: parents x instance IDs in one selector; the insert keeps the pairs asked for.
  std::vector<std::string> parents, instances;
  for (const char* label : {"UUID", "uuid"}) {
    instances_without_samples(run.db, parents, instances);
    if (parents.empty()) break;
    run.summary.samples_added +=
        run_script(run.db, named_sql("refresh", "insert_samples_by_instance"),
                   {{":selector", selector_for(run.db, label, parents, instances)}, {":start", start}, {":end", end}});
  }
  run_script(run.db, named_sql("refresh", "record_fetch"),
             {{":end_ms", static_cast<int64_t>(std::floor(end * 1000))}});
}

}  // namespace pp
