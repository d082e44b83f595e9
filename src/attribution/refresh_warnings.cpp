// What pp_refresh says in pp_last_warnings() about events it cannot attribute: never dropped
// silently.
#include <string>

#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/settings.hpp"
#include "core/statement.hpp"

namespace pp {

// Before folding: unfolded events that start before their GPU's fold point arrived after (some
// of) their sample windows were folded, so those overlaps are lost.
void count_late_events(RefreshRun& run) {
  run.late_events = static_cast<long long>(query_double(run.db, named_sql("refresh", "late_events"), {}, 0));
}

void warn_about_unattributed(RefreshRun& run) {
  const auto no_samples = static_cast<long long>(query_double(run.db, named_sql("refresh", "gpus_never_sampled"), {}, 0));
  if (no_samples > 0)
    run.warn(std::to_string(no_samples) + " GPU(s) of the events have no DCGM samples at " +
             redact_url(run.connection.settings().get("prometheus_url")) +
             " (check prometheus_url and that dcgm-exporter's series carry the events' UUID label); their "
             "events are not attributed");
  if (run.late_events > 0)
    run.warn(std::to_string(run.late_events) +
             " events arrived after their sample windows were folded and are not attributed; refresh a job "
             "with all of its event files before final = 1");
}

}  // namespace pp
