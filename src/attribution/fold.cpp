// Refresh steps 5 to 7: the fold of sample windows into layer_state (sql/fold.sql, around the
// interval join of overlap_tables.cpp), the paper's dedup rule into layer_history
// (sql/history.sql), and the plain result tables (sql/report.sql), the last two for the jobs
// in pp_report_pending (schema.sql).
#include <string>
#include <utility>
#include <vector>

#include "attribution/event_store.hpp"
#include "attribution/refresh.hpp"
#include "core/embedded_sql.hpp"
#include "core/statement.hpp"

namespace pp {

void fold(RefreshRun& run) {
  const int64_t margin = run.connection.settings().get_int("attribution_margin_seconds");
  run_script(run.db, named_sql("refresh", "fold_windows"),
             {{":final", int64_t{run.final ? 1 : 0}}, {":now", run.now}, {":margin", margin},
              {":revisable", kRevisableStretches}});
  const auto impossible = static_cast<long long>(query_double(run.db, named_sql("refresh", "impossible_events"), {}, 0));
  if (impossible > 0)
    run.warn(std::to_string(impossible) + (impossible == 1 ? " event" : " events") +
             " in pp_events end before they start or lie outside 1970-2116; they are not folded");
  std::vector<std::pair<std::string, int64_t>> windows;
  {
    Statement list(run.db, named_sql("refresh", "fold_windows_list"));
    while (list.step()) windows.emplace_back(list.column_text(0), list.column_int64(1));
  }
  // Each job's span of the events this fold counts: those not folded yet that start by their
  // GPU's fold point.
  run_script(run.db, named_sql("refresh", "fold_spans_table"));
  {
    LayerNames layers(run.db, "main");
    Statement add(run.db, named_sql("refresh", "add_fold_span"));
    for (const auto& [uuid, through_ms] : windows)
      for (const JobSpan& s : unfolded_spans(run.db, uuid, through_ms * int64_t{1000000}, layers)) {
        add.bind(":job_id", s.job_id);
        add.bind(":uuid", uuid);
        add.bind(":first_ns", s.first_ns);
        add.bind(":last_ns", s.last_ns);
        add.bind(":events", s.events);
        add.bind(":longest_ns", s.longest_ns);
        add.run();
      }
  }
  run_script(run.db, embedded_sql("fold"));
  // The events whose durations the fold counted: up to each GPU's fold point, one index range
  // per GPU (a single UPDATE would look the GPU's window up for every row).
  Statement mark(run.db, named_sql("refresh", "mark_folded"));
  for (const auto& [uuid, through_ms] : windows) {
    mark.bind(":uuid", uuid);
    mark.bind(":through_ms", through_ms);
    mark.run();
  }
  run.summary.windows_folded = static_cast<long long>(query_double(run.db, named_sql("refresh", "windows_folded"), {}, 0));
}

namespace {

// The jobs whose data changed since the last refresh (schema.sql's triggers keep the list), as
// stored: a job id merged in as a BLOB matches only a BLOB.
std::vector<SqlValue> pending_report_jobs(sqlite3* db) {
  std::vector<SqlValue> jobs;
  Statement list(db, "SELECT job_id FROM main.pp_report_pending ORDER BY job_id");
  while (list.step())
    jobs.push_back(list.column_type(0) == SQLITE_BLOB ? SqlValue(SqlBlob{std::string(list.column_blob(0))})
                                                       : SqlValue(list.column_text(0)));
  return jobs;
}

}  // namespace

// Both run for the jobs whose data changed only: the views read one job's rows for them, so a
// refresh costs the jobs it touched, not every job the database has seen.
void keep_history(RefreshRun& run) {
  const double tolerance = run.connection.settings().get_real("dedup_rel_tol");
  for (const SqlValue& job : pending_report_jobs(run.db))
    run.summary.history_kept +=
        run_script(run.db, embedded_sql("history"),
                   {{":job_id", job}, {":dedup_rel_tol", tolerance}, {":refreshed_at", run.now}});
}

void write_report_tables(RefreshRun& run) {
  for (const SqlValue& job : pending_report_jobs(run.db))
    run_script(run.db, embedded_sql("report"), {{":job_id", job}, {":refreshed_at", run.now}});
  run_script(run.db, "DELETE FROM main.pp_report_pending");
}

}  // namespace pp
