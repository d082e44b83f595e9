// pp_refresh: brings the attribution tables up to date for a job, in one statement.
//
//   SELECT pp_install_views();                      -- once per database (pp_refresh does it too)
//   SELECT * FROM pp_refresh('runs/job1');          -- events path in, result tables out
//   SELECT * FROM layer_metrics WHERE job_id = 'job1';
//
// Arguments (hidden columns path, final):
//   path   events written by the hook client: a file, a directory or a glob (as layer_events);
//          NULL skips steps 1 and 2: it folds what pp_events and pp_samples already hold
//          (events and samples inserted by other means; bench/attribution_bench.py times it)
//   final  optional; 1 folds every sample window now, including the last one of a job that is
//          still running. Without it a job is complete once its last event is older than
//          attribution_margin_seconds.
// One row: events_added, samples_added, windows_folded, history_kept, http_requests.
//
// Steps, in one savepoint (a failure leaves the tables as they were):
//   1. new lines of the event files go into pp_events, their job headers into pp_jobs (a line
//      is never imported twice; each file is read on from where the last refresh stopped, as
//      pp_event_files records, so a refresh reads only what was written since);
//   2. raw samples of the six Table I metrics for the GPUs of unfolded events, over their time
//      span, go into pp_samples: one prom_samples call for all GPUs, so one request per chunk,
//      never one per event. Series are matched by the UUID label, then `uuid`, then Hostname +
//      gpu index;
//   3. each series' collection interval (median spacing, or the sample_interval_ms setting);
//   4. sample windows whose events are all known are folded into layer_state (src/attribution/sql/fold.sql);
//   5. the paper's dedup rule appends changed layers to layer_history (src/attribution/sql/history.sql).
// Refreshing again after more events folds only what is new, and gives the same layer_state
// as one refresh over everything; refreshing twice with nothing new changes nothing.
//
// In WAL mode, refresh inside BEGIN IMMEDIATE ... COMMIT (or run PRAGMA wal_checkpoint after
// it): SQLite cannot checkpoint from inside the SELECT that refreshes, and a warning says so
// once the -wal file has grown past several times its automatic checkpoint size.
//
// Several connections may refresh one WAL database. The SELECT that calls pp_refresh already
// holds a read transaction, so SQLite cannot wait for another connection's write (busy_timeout
// does not apply): a refresh that meets one fails at once with SQLITE_BUSY, having changed
// nothing, and can be run again. Inside BEGIN IMMEDIATE ... COMMIT it waits its turn instead.
#include <re2/re2.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "attribution/event_import.hpp"
#include "prometheus/promql.hpp"
#include "core/registry.hpp"
#include "core/settings.hpp"
#include "core/sql_script.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/text_rows_cursor.hpp"

namespace pp {
namespace {

constexpr const char* kName = "pp_refresh";
const std::vector<ArgumentSpec> kArguments = {{"path", true}, {"final", false}};
constexpr const char* kMetricsRegex =
    "DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_PROF_DRAM_ACTIVE|"
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE|DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_PROF_SM_OCCUPANCY";

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Summary {
  long long events_added = 0, samples_added = 0, windows_folded = 0, history_kept = 0;
  long requests = 0;
};

// A selector for the six metrics of the GPUs whose `label` is one of values.
std::string selector_for(const std::string& label, const std::vector<std::string>& values) {
  std::string alternatives;
  for (const auto& v : values) alternatives += (alternatives.empty() ? "" : "|") + RE2::QuoteMeta(v);
  return "{__name__=~" + promql_quote(kMetricsRegex) + "," + label + "=~" + promql_quote(alternatives) + "}";
}

class Refresh {
 public:
  Refresh(Connection& connection, std::optional<std::string> path, bool final)
      : connection_(connection), db_(connection.db()), path_(std::move(path)), final_(final) {}

  Summary run() {
    const long requests_before = connection_.http().requests_sent();
    install_attribution_schema(db_, kName);
    if (path_) {
      summary_.events_added =
          import_event_files(db_, *path_, kName, final_, [this](const std::string& w) { connection_.add_warning(w); });
      fetch_samples();
    }
    set_intervals();
    count_late_events();
    fold();
    warn_about_unattributed();
    summary_.history_kept = run_sql_script(
        db_, embedded_sql("history"),
        {SqlParameter::of(connection_.settings().get_real("dedup_rel_tol")), SqlParameter::of(now_)}, kName);
    summary_.requests = connection_.http().requests_sent() - requests_before;
    return summary_;
  }

 private:
  // Before folding: unfolded events that start before their GPU's fold point arrived after
  // (some of) their sample windows were folded, so those overlaps are lost (an index range).
  void count_late_events() {
    late_events_ = query_double(
        db_,
        "SELECT count(*) FROM main.pp_fold_state AS f CROSS JOIN main.pp_events AS e "
        "WHERE e.gpu_uuid = f.uuid AND e.t_start_ns < f.folded_through_ms * 1000000 AND e.folded = 0",
        {}, kName, 0);
  }

  // Events that cannot be attributed are said so in pp_last_warnings(), never dropped silently.
  void warn_about_unattributed() {
    // Both counts read only what can match, not every event: the GPUs of the events one index
    // seek each, then the events of GPUs without samples.
    const double no_samples = query_double(
        db_,
        "WITH RECURSIVE gpus(uuid) AS ("
        "  SELECT min(gpu_uuid) FROM main.pp_events"
        "  UNION ALL SELECT (SELECT min(gpu_uuid) FROM main.pp_events WHERE gpu_uuid > g.uuid)"
        "    FROM gpus AS g WHERE g.uuid IS NOT NULL) "
        "SELECT count(*) FROM gpus AS g WHERE g.uuid IS NOT NULL AND g.uuid <> 'cpu' "
        "AND NOT EXISTS (SELECT 1 FROM main.pp_samples s WHERE s.uuid = g.uuid) "
        "AND EXISTS (SELECT 1 FROM main.pp_events e WHERE e.gpu_uuid = g.uuid AND e.folded = 0)",
        {}, kName, 0);
    if (no_samples > 0)
      connection_.add_warning(std::string(kName) + ": " + std::to_string(static_cast<long>(no_samples)) +
                              " GPU(s) of the events have no DCGM samples at " +
                              redact_url(connection_.settings().get("prometheus_url")) +
                              " (check prometheus_url and that dcgm-exporter's series carry the events' "
                              "UUID label); their events are not attributed");
    if (late_events_ > 0)
      connection_.add_warning(std::string(kName) + ": " + std::to_string(static_cast<long>(late_events_)) +
                              " events arrived after their sample windows were folded and are not "
                              "attributed; refresh a job with all of its event files before final = 1");
  }

  // GPUs with unfolded events and no samples yet over their span; one request per chunk for
  // all of them, then the label fallbacks for GPUs that the UUID label did not find.
  void fetch_samples() {
    // The sample covering an event's end arrives up to one collection interval later (30 s by
    // dcgm-exporter's default): fetch that far past the last event, with room to spare.
    const double margin = std::max(60.0, 2 * query_double(db_, "SELECT max(interval_ms) / 1e3 FROM main.pp_intervals",
                                                           {}, kName, 0));
    // From the first event of each job with unfolded events (its untracked time needs every
    // window of its span, also those between events far apart), or the GPU's last sample.
    const double start = query_double(
        db_,
        "SELECT min(max(j.t_first, coalesce((SELECT max(ts_ms) / 1e3 FROM main.pp_samples s WHERE s.uuid = j.uuid), 0))) "
        "FROM main.pp_job_spans AS j WHERE j.uuid <> 'cpu' AND EXISTS (SELECT 1 FROM main.pp_events e "
        "  WHERE e.folded = 0 AND e.gpu_uuid = j.uuid AND e.job_id = j.job_id)",
        {}, kName, NAN);
    if (std::isnan(start)) return;
    const double last_end = query_double(
        db_, "SELECT max(t_end) FROM main.pp_events WHERE folded = 0 AND gpu_uuid <> 'cpu'", {}, kName, start);
    const double end = std::min(now_, last_end + margin);
    if (end <= start) return;

    const char* insert_by_uuid =
        "INSERT OR IGNORE INTO main.pp_samples(uuid, metric, ts_ms, value, host, gpu) "
        "SELECT uuid, metric, ts_ms, value, host, gpu FROM ("
        "  SELECT coalesce(json_extract(labels, '$.UUID'), json_extract(labels, '$.uuid')) AS uuid, metric,"
        "         CAST(round(ts * 1000) AS INTEGER) AS ts_ms, value,"
        "         coalesce(json_extract(labels, '$.Hostname'), json_extract(labels, '$.hostname')) AS host,"
        "         json_extract(labels, '$.gpu') AS gpu"
        "    FROM prom_samples(?1, ?2, ?3)) "
        "WHERE uuid IN (SELECT gpu_uuid FROM main.pp_events WHERE folded = 0)";
    const char* insert_by_host =
        "INSERT OR IGNORE INTO main.pp_samples(uuid, metric, ts_ms, value, host, gpu) "
        "SELECT (SELECT gpu_uuid FROM main.pp_events e WHERE e.host_name = p.host AND e.gpu = CAST(p.gpu AS INTEGER) LIMIT 1),"
        "       metric, CAST(round(ts * 1000) AS INTEGER), value, host, gpu FROM ("
        "  SELECT coalesce(json_extract(labels, '$.Hostname'), json_extract(labels, '$.hostname')) AS host,"
        "         json_extract(labels, '$.gpu') AS gpu, metric, ts, value FROM prom_samples(?1, ?2, ?3)) AS p "
        "WHERE EXISTS (SELECT 1 FROM main.pp_events e WHERE e.folded = 0 AND e.host_name = p.host AND e.gpu = CAST(p.gpu AS INTEGER))";

    // Each GPU with unfolded events and its last sample before this refresh (see
    // gpus_without_samples).
    run_sql_script(db_,
                   "CREATE TEMP TABLE IF NOT EXISTS pp_fetch_gpus(uuid TEXT PRIMARY KEY, host_name TEXT,"
                   " last_end_ms INTEGER, last_sample_ms INTEGER);"
                   "DELETE FROM temp.pp_fetch_gpus;"
                   "INSERT INTO temp.pp_fetch_gpus "
                   "SELECT gpu_uuid, max(host_name), max(t_end_ns) / 1000000,"
                   "       (SELECT max(ts_ms) FROM main.pp_samples AS s WHERE s.uuid = e.gpu_uuid)"
                   "  FROM main.pp_events AS e WHERE folded = 0 AND gpu_uuid <> 'cpu' GROUP BY gpu_uuid",
                   {}, kName);
    struct Pass { const char* label; const char* insert; bool by_host; };
    for (const Pass& pass : {Pass{"UUID", insert_by_uuid, false}, Pass{"uuid", insert_by_uuid, false},
                             Pass{"Hostname", insert_by_host, true}}) {
      const std::vector<std::string> missing = gpus_without_samples(pass.by_host);
      if (missing.empty()) break;
      summary_.samples_added += run_sql_script(
          db_, pass.insert,
          {SqlParameter::of(selector_for(pass.label, missing)), SqlParameter::of(start), SqlParameter::of(end)},
          kName);
    }
  }

  // UUIDs (or host names, for the last fallback) of GPUs whose unfolded events reach past
  // their last sample (none yet, or a job still running: later refreshes must fetch again) and
  // that no pass of this refresh has brought samples for yet.
  std::vector<std::string> gpus_without_samples(bool host_names) {
    const std::string column = host_names ? "host_name" : "uuid";
    const std::string sql =
        "SELECT DISTINCT " + column + " FROM temp.pp_fetch_gpus AS g WHERE " + column + " IS NOT NULL"
        " AND last_end_ms > coalesce(last_sample_ms, -1)"
        " AND NOT EXISTS (SELECT 1 FROM main.pp_metrics AS m JOIN main.pp_samples AS s"
        "                  ON s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > coalesce(g.last_sample_ms, -1))";
    std::vector<std::string> out;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw Error(std::string(kName) + ": " + sqlite3_errmsg(db_));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) throw Error(std::string(kName) + ": " + sqlite3_errmsg(db_));
    return out;
  }

  // temp.pp_series: each series (uuid, metric) of pp_samples and its last ts_ms, found by
  // seeking through the primary key from one series to the next (a skip scan), so a refresh
  // never reads every stored sample to learn which series there are.
  void list_series() {
    run_sql_script(db_,
                   "CREATE TEMP TABLE IF NOT EXISTS pp_series(uuid TEXT, metric TEXT, last_ms INTEGER,"
                   " PRIMARY KEY (uuid, metric));"
                   "DELETE FROM temp.pp_series;",
                   {}, kName);
    // Two seeks per step: the next metric of this GPU, else the first of the next GPU (a row
    // value (uuid, metric) > (?, ?) would seek on uuid alone and scan the rest).
    Statement first(db_, "SELECT uuid, metric FROM main.pp_samples ORDER BY uuid, metric LIMIT 1", kName);
    Statement next_metric(db_,
                          "SELECT uuid, metric FROM main.pp_samples WHERE uuid = ?1 AND metric > ?2 "
                          "ORDER BY metric LIMIT 1", kName);
    Statement next_gpu(db_, "SELECT uuid, metric FROM main.pp_samples WHERE uuid > ?1 ORDER BY uuid, metric LIMIT 1", kName);
    Statement insert(db_,
                     "INSERT INTO temp.pp_series(uuid, metric, last_ms) VALUES (?1, ?2, "
                     "(SELECT max(ts_ms) FROM main.pp_samples WHERE uuid = ?1 AND metric = ?2))", kName);
    std::string uuid, metric;
    auto found = [&](Statement& seek) {
      if (!seek.step()) return false;
      uuid.assign(reinterpret_cast<const char*>(sqlite3_column_text(seek.stmt, 0)),
                  static_cast<size_t>(sqlite3_column_bytes(seek.stmt, 0)));
      metric.assign(reinterpret_cast<const char*>(sqlite3_column_text(seek.stmt, 1)),
                    static_cast<size_t>(sqlite3_column_bytes(seek.stmt, 1)));
      sqlite3_reset(seek.stmt);
      return true;
    };
    auto bind = [&](Statement& s) {
      sqlite3_bind_text(s.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_TRANSIENT);
      sqlite3_bind_text(s.stmt, 2, metric.data(), static_cast<int>(metric.size()), SQLITE_TRANSIENT);
    };
    bool more = found(first);
    while (more) {
      bind(insert);
      while (insert.step()) {
      }
      bind(next_metric);
      sqlite3_bind_text(next_gpu.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_TRANSIENT);
      more = found(next_metric) || found(next_gpu);
    }
  }

  // Intervals are fixed once known, so every later fold uses the same windows.
  void set_intervals() {
    list_series();
    const int64_t setting_ms = connection_.settings().get_int("sample_interval_ms");
    if (setting_ms > 0) {
      run_sql_script(db_,
                     "INSERT INTO main.pp_intervals(uuid, metric, interval_ms, source) "
                     "SELECT uuid, metric, ?1, 'setting' FROM temp.pp_series WHERE true "
                     "ON CONFLICT (uuid, metric) DO UPDATE SET interval_ms = excluded.interval_ms, "
                     "source = 'setting' WHERE source <> 'user'",
                     {SqlParameter::of(static_cast<double>(setting_ms))}, kName);
      return;
    }
    // The median spacing of each series that has no interval yet: the lower median (the k-th
    // smallest, k = (n + 1) / 2) of the n > 1 gaps between its consecutive samples, read as one
    // index range per series (window functions over the samples took seconds per million).
    std::vector<std::pair<std::string, std::string>> missing;
    {
      Statement list(db_,
                     "SELECT uuid, metric FROM temp.pp_series AS n WHERE NOT EXISTS "
                     "(SELECT 1 FROM main.pp_intervals i WHERE i.uuid = n.uuid AND i.metric = n.metric)", kName);
      while (list.step())
        missing.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list.stmt, 0)),
                             reinterpret_cast<const char*>(sqlite3_column_text(list.stmt, 1)));
    }
    Statement times(db_, "SELECT ts_ms FROM main.pp_samples WHERE uuid = ?1 AND metric = ?2 ORDER BY ts_ms", kName);
    Statement insert(db_,
                     "INSERT OR IGNORE INTO main.pp_intervals(uuid, metric, interval_ms, source) "
                     "VALUES (?1, ?2, ?3, 'median')", kName);
    std::vector<int64_t> gaps;
    for (const auto& [uuid, metric] : missing) {
      for (Statement* s : {&times, &insert}) {
        sqlite3_bind_text(s->stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_TRANSIENT);
        sqlite3_bind_text(s->stmt, 2, metric.data(), static_cast<int>(metric.size()), SQLITE_TRANSIENT);
      }
      gaps.clear();
      bool first = true;
      int64_t last = 0;
      while (times.step()) {
        const int64_t ts = sqlite3_column_int64(times.stmt, 0);
        if (!first && ts > last) gaps.push_back(ts - last);
        last = ts;
        first = false;
      }
      if (gaps.size() < 2) continue;
      const auto median = gaps.begin() + static_cast<std::ptrdiff_t>((gaps.size() + 1) / 2 - 1);
      std::nth_element(gaps.begin(), median, gaps.end());
      sqlite3_bind_int64(insert.stmt, 3, *median);
      while (insert.step()) {
      }
    }
  }

  // Fold windows per GPU: up to the last sample, or, while the job may still write events
  // into the last windows, up to the start of its last known event. Each value is an index
  // seek (temp.pp_series from set_intervals, max(t_start_ns) of pp_events_by_gpu_time); the
  // last event's end is read only when it decides (not final).
  void fold() {
    const double margin = static_cast<double>(connection_.settings().get_int("attribution_margin_seconds"));
    run_sql_script(db_,
                   "CREATE TEMP TABLE IF NOT EXISTS pp_fold_window(uuid TEXT PRIMARY KEY, after_ms INTEGER, through_ms INTEGER);"
                   "DELETE FROM temp.pp_fold_window;"
                   "INSERT INTO temp.pp_fold_window(uuid, after_ms, through_ms) "
                   "SELECT s.uuid, coalesce(f.folded_through_ms, 0),"
                   "       CASE WHEN ?1 OR ?2 - (SELECT max(t_end) FROM main.pp_events WHERE gpu_uuid = s.uuid) > ?3"
                   "            THEN s.last_ms"
                   "            ELSE min(s.last_ms, (SELECT max(t_start_ns) FROM main.pp_events WHERE gpu_uuid = s.uuid) / 1000000) END"
                   "  FROM (SELECT uuid, max(last_ms) AS last_ms FROM temp.pp_series GROUP BY uuid) AS s"
                   "  LEFT JOIN main.pp_fold_state AS f ON f.uuid = s.uuid"
                   " WHERE EXISTS (SELECT 1 FROM main.pp_events WHERE gpu_uuid = s.uuid)"
                   "   AND EXISTS (SELECT 1 FROM main.pp_intervals i WHERE i.uuid = s.uuid);"
                   // CPU events have no samples: their durations fold at once.
                   "INSERT INTO temp.pp_fold_window(uuid, after_ms, through_ms) "
                   "SELECT 'cpu', 0, 4102444800000 WHERE EXISTS (SELECT 1 FROM main.pp_events WHERE gpu_uuid = 'cpu' AND folded = 0);"
                   "DELETE FROM temp.pp_fold_window WHERE through_ms <= after_ms;",
                   {SqlParameter::of(final_ ? 1.0 : 0.0), SqlParameter::of(now_), SqlParameter::of(margin)},
                   kName);
    run_sql_script(db_, embedded_sql("fold"), {}, kName);
    // The events whose durations the fold counted: up to each GPU's fold point, one index
    // range per GPU (a single UPDATE would look the GPU's window up for every row).
    {
      std::vector<std::pair<std::string, int64_t>> windows;
      Statement list(db_, "SELECT uuid, through_ms FROM temp.pp_fold_window", kName);
      while (list.step())
        windows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list.stmt, 0)),
                             sqlite3_column_int64(list.stmt, 1));
      Statement mark(db_,
                     "UPDATE main.pp_events SET folded = 1 "
                     "WHERE gpu_uuid = ?1 AND t_start_ns <= ?2 * 1000000 AND folded = 0", kName);
      for (const auto& [uuid, through_ms] : windows) {
        sqlite3_bind_text(mark.stmt, 1, uuid.data(), static_cast<int>(uuid.size()), SQLITE_TRANSIENT);
        sqlite3_bind_int64(mark.stmt, 2, through_ms);
        while (mark.step()) {
        }
      }
    }
    // Distinct (GPU, ts_ms) windows folded: pp_overlap_means counts them for each GPU it
    // returned rows for; the others (no event in their windows) are counted here.
    summary_.windows_folded = static_cast<long long>(query_double(
        db_,
        "SELECT coalesce(sum(coalesce("
        "  (SELECT max(windows) FROM temp.pp_fold_means AS m WHERE m.uuid = w.uuid),"
        "  (SELECT count(DISTINCT s.ts_ms) FROM main.pp_samples AS s"
        "    JOIN main.pp_intervals AS i ON i.uuid = s.uuid AND i.metric = s.metric"
        "   WHERE s.uuid = w.uuid AND s.ts_ms > w.after_ms AND s.ts_ms <= w.through_ms))), 0)"
        "  FROM temp.pp_fold_window AS w",
        {}, kName, 0));
  }

  Connection& connection_;
  sqlite3* db_;
  std::optional<std::string> path_;
  bool final_;
  double now_ = now_seconds();
  double late_events_ = 0;
  Summary summary_;
};

// The refresh met another connection's write lock; xFilter returns SQLITE_BUSY, so callers
// that retry on SQLITE_BUSY retry pp_refresh too.
struct Busy : Error {
  using Error::Error;
};

// In WAL mode, a refresh that commits on its own (no BEGIN around it) commits while its
// SELECT still holds a read transaction, so SQLite's automatic checkpoint cannot run (it
// fails with SQLITE_LOCKED and waits for the next commit, which is again a refresh's): a
// loop of refreshes alone grows the -wal file without end. Say so once it is several times
// what the automatic checkpoint would allow.
void warn_about_unchecked_wal(Connection& connection) {
  sqlite3* db = connection.db();
  const double autocheckpoint_pages = query_double(db, "PRAGMA main.wal_autocheckpoint", {}, kName, 0);
  const char* db_file = sqlite3_db_filename(db, "main");
  if (autocheckpoint_pages <= 0 || !db_file || !*db_file) return;
  const char* wal_file = sqlite3_filename_wal(db_file);
  struct stat st;
  if (!wal_file || ::stat(wal_file, &st) != 0) return;  // not in WAL mode
  const double page_size = query_double(db, "PRAGMA main.page_size", {}, kName, 4096);
  const double limit = 4 * autocheckpoint_pages * page_size;  // 16 MiB by default
  if (static_cast<double>(st.st_size) <= limit) return;
  connection.add_warning(std::string(kName) + ": the write-ahead log " + wal_file + " holds " +
                         std::to_string(static_cast<long long>(st.st_size >> 20)) +
                         " MiB: SQLite cannot checkpoint it from inside the SELECT that refreshes; run "
                         "PRAGMA wal_checkpoint after refreshing, or refresh inside BEGIN IMMEDIATE ... COMMIT");
}

// Runs the refresh inside a savepoint: all of it lands, or none of it.
Summary refresh(Connection& connection, const std::optional<std::string>& path, bool final) {
  sqlite3* db = connection.db();
  const bool commits_itself = sqlite3_get_autocommit(db) != 0;
  run_sql_script(db, "SAVEPOINT pp_refresh", {}, kName);
  try {
    Summary summary = Refresh(connection, path, final).run();
    run_sql_script(db, "RELEASE pp_refresh", {}, kName);
    if (commits_itself) warn_about_unchecked_wal(connection);
    return summary;
  } catch (...) {
    // SQLITE_BUSY or SQLITE_BUSY_SNAPSHOT: another connection writes or has written since the
    // calling SELECT began. SQLite cannot wait here (the SELECT holds a read transaction, so
    // busy_timeout does not apply), and the code must survive the rollback below.
    const bool busy = (sqlite3_extended_errcode(db) & 0xFF) == SQLITE_BUSY;
    sqlite3_exec(db, "ROLLBACK TO pp_refresh; RELEASE pp_refresh", nullptr, nullptr, nullptr);
    if (busy)
      throw Busy(std::string(kName) + ": database is locked by another connection's write; nothing was "
                 "changed (run pp_refresh again, or inside BEGIN IMMEDIATE ... COMMIT, where busy_timeout applies)");
    throw;
  }
}

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  return connect_table(db, aux,
                       "CREATE TABLE x(events_added INTEGER, samples_added INTEGER, windows_folded INTEGER, "
                       "history_kept INTEGER, http_requests INTEGER, path HIDDEN, final HIDDEN)",
                       /*does_io=*/true, out, error);
}

int xBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const int rc = plan_arguments(vtab, info, kName, /*first_argument_column=*/5, kArguments);
  info->estimatedRows = 1;
  info->estimatedCost = 1e7;
  return rc;
}

int xFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<TextRowsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    const std::optional<std::string> path = optional_text(args[0]);
    const bool final = args[1] && sqlite3_value_int(args[1]) != 0;
    Summary s;
    try {
      s = refresh(*cursor->connection, path, final);
    } catch (const Busy& e) {
      set_vtab_error(base->pVtab, e.what());
      return SQLITE_BUSY;
    }
    cursor->integer_columns = true;
    cursor->start({{std::to_string(s.events_added), std::to_string(s.samples_added),
                    std::to_string(s.windows_folded), std::to_string(s.history_kept),
                    std::to_string(s.requests)}},
                  args);
    return SQLITE_OK;
  });
}

sqlite3_module make_module() {
  sqlite3_module m{};
  fill_text_rows_module<5>(m);
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xFilter = xFilter;
  return m;
}

const sqlite3_module kModule = make_module();

// pp_install_views(): creates the attribution tables and views; returns what it installed.
void pp_install_views(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_install_views", [&] {
    install_attribution_schema(sqlite3_context_db_handle(ctx), "pp_install_views");
    result_text(ctx, attribution_objects());
  });
}

}  // namespace

int register_interval_join(const Registration& r);  // src/attribution/interval_join.cpp: pp_overlaps, used by the fold

int register_attribution(const Registration& r) {
  int rc = create_connection_module(r, kName, &kModule);
  if (rc == SQLITE_OK) rc = register_interval_join(r);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(r.db, "pp_install_views", 0, kIoFunction, nullptr, pp_install_views,
                                    nullptr, nullptr, nullptr);
  return rc;
}

}  // namespace pp
