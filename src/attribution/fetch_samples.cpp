// Refresh step 2: raw samples of the metrics of pp_metrics (the six of Table I, and any a user
// added) for the GPUs of unfolded events, over their time span, into pp_samples. One prom_samples call covers all GPUs (one request per
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

// One regex alternative per value, each quoted: "a|b\\.c".
std::string alternatives(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : "|") + RE2::QuoteMeta(v);
  return out;
}

// A selector for the metrics of pp_metrics on the GPUs whose `label` is one of values.
std::string selector_for(sqlite3* db, const std::string& label, const std::vector<std::string>& values) {
  std::vector<std::string> metrics;
  Statement list(db, "SELECT metric FROM main.pp_metrics ORDER BY metric");
  while (list.step()) metrics.push_back(list.column_text(0));
  return "{__name__=~" + promql_quote(alternatives(metrics)) + "," + label + "=~" + promql_quote(alternatives(values)) +
         "}";
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
        {{":selector", selector_for(run.db, pass.label, missing)}, {":start", start}, {":end", end}});
  }
}

}  // namespace pp
