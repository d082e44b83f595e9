// Refresh step 8: retention (sql/retention.sql). With event_retention_minutes = M > 0, the events,
// samples and windows that the fold has put into layer_state and that lie more than M minutes
// before their GPU's fold point are removed, so the database grows with the folded results, not
// with the event rate. The event files stay the source of truth: pp_dropped_events counts what
// went per file, and the file's position is kept, so nothing is read twice. The overlap means
// (layer_state, layer_history, the report tables) keep everything folded, and the estimator the
// windows' rows as sums (estimator_state.hpp); what reads pp_events, pp_samples or pp_windows
// directly (step_timeline, layer_attribution) sees the last M minutes of each GPU.
#include <optional>
#include <string>
#include <vector>

#include "attribution/estimator_state.hpp"
#include "attribution/gpu_timeline.hpp"
#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/sql_relay.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

// Without retention, pp_refresh says once the database holds this many events that it could keep
// fewer (some 120 MB of event blocks, at 11-13 bytes an event; one GPU writes about 3.6 million an hour).
constexpr long long kManyStoredEvents = 10'000'000;

struct RetentionCut {
  std::string uuid;
  std::optional<int64_t> samples_through_ms;
  int64_t events_before_ns;
};

}  // namespace

void drop_old_data(RefreshRun& run) {
  const int64_t minutes = run.connection.settings().get_int("event_retention_minutes");
  if (minutes <= 0) {
    const auto stored = static_cast<long long>(query_double(run.db, named_sql("retention", "stored_events"), {}, 0));
    if (stored > kManyStoredEvents && run.summary.windows_folded > 0)
      run.warn("pp_events holds " + std::to_string(stored) +
               " folded events; set event_retention_minutes (pp_config) to keep only recent ones: the "
               "overlap means keep everything folded, the estimator the sums of every window");
    return;
  }
  run_script(run.db, named_sql("retention", "cuts"),
             {{":keep_ms", minutes * 60000}, {":lag_ms", run.connection.settings().get_int("max_sample_lag_ms")}});
  std::vector<RetentionCut> cuts;
  {
    Statement list(run.db, named_sql("retention", "cuts_list"));
    while (list.step())
      cuts.push_back({list.column_text(0),
                      list.column_null(1) ? std::nullopt : std::optional<int64_t>(list.column_int64(1)),
                      list.column_int64(2)});
  }
  // The windows that go stay in the estimator as sums, read while their events are still here
  // (GPUs on two threads: each reads its own events and writes its own states).
  const int64_t horizon_ms = timing_horizon_ms(minutes);
  for_each_in_parallel(cuts.size(), [&](size_t i, SqlRelay& sql) {
    if (cuts[i].samples_through_ms)
      keep_estimator_state(run.db, cuts[i].uuid, *cuts[i].samples_through_ms, horizon_ms, sql);
  });
  // One index range per GPU (a single DELETE would look each row's GPU up in the cuts).
  for (const RetentionCut& cut : cuts) {
    run_script(run.db, named_sql("retention", "drop_events"), {{":uuid", cut.uuid}, {":before_ns", cut.events_before_ns}});
    if (cut.samples_through_ms)
      run_script(run.db, named_sql("retention", "drop_samples"),
                 {{":uuid", cut.uuid}, {":through_ms", *cut.samples_through_ms}});
  }
}

}  // namespace pp
