// Refresh step 2: raw samples of the six Table I metrics for the GPUs of unfolded events, over
// their time span, into pp_samples. One prom_samples call covers all GPUs (one request per
// chunk, never one per event). Series are matched by the UUID label, then `uuid` (older
// exporters), then Hostname + gpu index.
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

constexpr const char* kMetricsRegex =
    "DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_DRAM_ACTIVE|"
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE|DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_PROF_SM_OCCUPANCY";

// A selector for the six metrics of the GPUs whose `label` is one of values.
std::string selector_for(const std::string& label, const std::vector<std::string>& values) {
  std::string alternatives;
  for (const auto& v : values) alternatives += (alternatives.empty() ? "" : "|") + RE2::QuoteMeta(v);
  return "{__name__=~" + promql_quote(kMetricsRegex) + "," + label + "=~" + promql_quote(alternatives) + "}";
}

// UUIDs (or host names) of the GPUs that still need samples (refresh.sql gpus_without_samples).
std::vector<std::string> gpus_without_samples(sqlite3* db, bool by_host) {
  Statement list(db, named_sql("refresh", "gpus_without_samples"));
  list.bind(":by_host", int64_t{by_host ? 1 : 0});
  std::vector<std::string> names;
  while (list.step()) names.push_back(list.column_text(0));
  return names;
}

}  // namespace

void fetch_samples(RefreshRun& run) {
  const double margin = query_double(run.db, named_sql("refresh", "fetch_margin"), {}, 60);
  const double start = query_double(run.db, named_sql("refresh", "fetch_start"), {}, NAN);
  if (std::isnan(start)) return;
  const double last_end = query_double(run.db, named_sql("refresh", "fetch_last_end"), {}, start);
  const double end = std::min(run.now, last_end + margin);
  if (end <= start) return;

  run_script(run.db, named_sql("refresh", "fetch_gpus"));
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
        {{":selector", selector_for(pass.label, missing)}, {":start", start}, {":end", end}});
  }
}

}  // namespace pp
