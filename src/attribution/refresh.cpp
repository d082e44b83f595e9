#include "attribution/refresh.hpp"

#include <sys/stat.h>

#include <chrono>

#include "attribution/event_import.hpp"
#include "attribution/schema.hpp"
#include "attribution/window_lengths.hpp"
#include "core/embedded_sql.hpp"
#include "core/errors.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void run_steps(RefreshRun& run, const std::optional<std::string>& path) {
  const long requests_before = run.connection.http().requests_sent();
  install_attribution_schema(run.db);
  check_window_lengths(run.db);  // (the fetch's margin reads them first)
  if (path) {
    run.summary.events_added = import_event_files(run.db, *path, run.final, run.warn);
    fetch_samples(run);
  }
  set_intervals(run);
  align_samples(run);
  count_late_events(run);
  fold(run);
  warn_about_unattributed(run);
  warn_about_missing_metrics(run);
  warn_about_unnamed_gpus(run);
  warn_about_shared_gpus(run);
  keep_history(run);
  write_report_tables(run);
  drop_old_data(run);
  run_script(run.db, named_sql("refresh", "empty_work_tables"));
  run.summary.http_requests = run.connection.http().requests_sent() - requests_before;
}

// The size of the main database's -wal file, or -1 when there is none (not in WAL mode).
// stat() only: opening and closing the file would drop the process's POSIX locks on it.
long long wal_file_bytes(sqlite3* db) {
  const char* db_file = sqlite3_db_filename(db, "main");
  if (!db_file || !*db_file) return -1;
  const char* wal_file = sqlite3_filename_wal(db_file);
  struct stat st;
  if (!wal_file || ::stat(wal_file, &st) != 0) return -1;
  return static_cast<long long>(st.st_size);
}

// In WAL mode, a refresh that commits on its own (no BEGIN around it) commits while its
// SELECT still holds a read transaction, so SQLite's automatic checkpoint cannot run (it
// fails with SQLITE_LOCKED and waits for the next commit, which is again a refresh's): a
// loop of refreshes alone grows the -wal file without end. Say so once it is several times
// what the automatic checkpoint would allow and this refresh made it longer: after a
// checkpoint SQLite writes the log from its start again, so a file that keeps its size (a
// checkpoint does not shrink it) is not growing.
void warn_about_unchecked_wal(RefreshRun& run, long long bytes_before) {
  const double autocheckpoint_pages = query_double(run.db, "PRAGMA main.wal_autocheckpoint", {}, 0);
  const long long bytes = wal_file_bytes(run.db);
  if (autocheckpoint_pages <= 0 || bytes < 0 || bytes <= bytes_before) return;
  const double page_size = query_double(run.db, "PRAGMA main.page_size", {}, 4096);
  const double limit = 4 * autocheckpoint_pages * page_size;  // 16 MiB by default
  if (static_cast<double>(bytes) <= limit) return;
  run.warn(std::string("the write-ahead log ") + sqlite3_filename_wal(sqlite3_db_filename(run.db, "main")) +
           " holds " + std::to_string(bytes >> 20) +
           " MiB and grows with each refresh: SQLite cannot checkpoint it from inside the SELECT that refreshes; run "
           "PRAGMA wal_checkpoint after refreshing, or refresh inside BEGIN IMMEDIATE ... COMMIT");
}

// Whether a statement of the connection that writes is running (an INSERT ... SELECT or a
// trigger around the calling SELECT): SQLite then refuses the savepoint a refresh needs.
bool write_in_progress(sqlite3* db) {
  for (sqlite3_stmt* s = sqlite3_next_stmt(db, nullptr); s; s = sqlite3_next_stmt(db, s))
    if (sqlite3_stmt_busy(s) && !sqlite3_stmt_readonly(s)) return true;
  return false;
}

}  // namespace

RefreshSummary refresh(Connection& connection, const std::optional<std::string>& path, bool final) {
  sqlite3* db = connection.db();
  RefreshRun run{connection, db, final, now_seconds(), connection.warner("pp_refresh"), {}, 0};
  if (connection.refresh_left_open()) {
    // An interrupted refresh could not roll back its changes (see below); undo them now, unless
    // ROLLBACK did already.
    connection.refresh_closed();
    if (sqlite3_exec(db, "ROLLBACK TO pp_refresh; RELEASE pp_refresh", nullptr, nullptr, nullptr) == SQLITE_OK)
      run.warn("the changes of the refresh interrupted before were rolled back");
  }
  const bool commits_itself = sqlite3_get_autocommit(db) != 0;
  // Said before SQLite's bare "attempt to write a readonly database" from the first step that writes.
  if (sqlite3_db_readonly(db, "main") == 1)
    throw Error(
        "the database is read-only (opened with -readonly or mode=ro, on a read-only mount, or a file this user "
        "may not write): a refresh writes the events, samples and results into it. Open it writable, or read its "
        "views as they are without refreshing");
  if (write_in_progress(db))
    throw Error(
        "cannot run inside a statement that writes (INSERT ... SELECT, CREATE TABLE ... AS, a trigger): SQLite "
        "refuses the savepoint that undoes a failed refresh there; run SELECT * FROM pp_refresh(...) as a "
        "statement of its own and store its row afterwards");
  const Connection::WriteScope settings_fixed(connection);
  const long long wal_bytes_before = commits_itself ? wal_file_bytes(db) : -1;
  bool committing = false;
  const sqlite3_int64 changes_before = sqlite3_total_changes64(db);
  try {
    run_script(db, "SAVEPOINT pp_refresh");
    run_steps(run, path);
    committing = true;
    run_script(db, "RELEASE pp_refresh");
  } catch (...) {
    // SQLITE_BUSY or SQLITE_BUSY_SNAPSHOT: another connection writes or has written since the
    // calling SELECT began, or (in rollback-journal mode) reads, so that the commit cannot
    // happen. SQLite cannot wait here (the SELECT holds a read transaction, so busy_timeout
    // does not apply), and the code must survive the rollback below.
    const int code = sqlite3_extended_errcode(db);
    bool busy = (code & 0xFF) == SQLITE_BUSY;
    bool stale_snapshot = code == SQLITE_BUSY_SNAPSHOT;
    try {
      throw;
    } catch (const BusyError& e) {
      busy = true;  // a step met the lock, and later SQL (a statement's cleanup) reset the code
      stale_snapshot = stale_snapshot || e.stale_snapshot;
    } catch (...) {
    }
    // A refresh that began the transaction ends it: ROLLBACK TO and RELEASE would commit an
    // empty transaction, which a reader blocks in rollback-journal mode (the commit that failed
    // may be just that), leaving the transaction and its lock open: every other connection
    // would be kept out, and the next refresh would run inside it and never commit.
    const char* undo = commits_itself ? "ROLLBACK" : "ROLLBACK TO pp_refresh; RELEASE pp_refresh";
    // SQLite answers some failed writes (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) by rolling back
    // the whole transaction, the application's own writes before the refresh too: say so, or
    // its COMMIT would say only that no transaction is active.
    const bool transaction_lost = !commits_itself && sqlite3_get_autocommit(db) != 0;
    if (sqlite3_exec(db, undo, nullptr, nullptr, nullptr) == SQLITE_INTERRUPT) {
      // sqlite3_interrupt() stops every statement of the connection until the calling one ends.
      // (Stopped before its first row, it left nothing a COMMIT could store.)
      if (sqlite3_total_changes64(db) != changes_before) connection.hold_refresh_open();
      throw InterruptedError(
          "interrupted; nothing was committed, but SQLite cannot roll back while the interrupt is in force: "
          "the next pp_refresh on this connection undoes this one's changes first (or run ROLLBACK); until "
          "then a COMMIT on it rolls back instead of storing part of a refresh");
    }
    if (stale_snapshot && commits_itself)
      throw BusyError(
          "another connection committed since this statement began reading the database, so it cannot write "
          "(SQLITE_BUSY_SNAPSHOT); nothing was changed: run pp_refresh again, as a statement of its own",
          true);
    if (stale_snapshot)
      throw BusyError(
          "this connection's transaction reads the database as it was before another connection's last commit, "
          "so it cannot write (SQLITE_BUSY_SNAPSHOT); nothing was changed: end the transaction (COMMIT or "
          "ROLLBACK), then run pp_refresh again",
          true);
    if (busy && committing) {
      const bool waited = query_double(db, "PRAGMA busy_timeout", {}, 0) > 0;
      throw BusyError(std::string("could not commit: another connection is reading the database, and in "
                                  "rollback-journal mode a reader blocks a commit (") +
                      (waited ? "busy_timeout ran out" : "no busy_timeout is set, so the refresh did not wait") +
                      "); nothing was changed: run pp_refresh again once it is done, or use WAL mode (PRAGMA "
                      "journal_mode = WAL), where readers do not block a refresh");
    }
    if (busy)
      throw BusyError(
          "database is locked by another connection's write; nothing was changed (run pp_refresh again, "
          "or inside BEGIN IMMEDIATE ... COMMIT, where busy_timeout applies)");
    if (transaction_lost) {
      try {
        throw;
      } catch (const InterruptedError&) {
        throw;
      } catch (const std::exception& e) {
        throw Error(std::string(e.what()) +
                    "; SQLite rolled back the whole transaction this refresh ran in, its writes before the refresh "
                    "included: nothing of it was stored (once the cause is dealt with, run what it did again, and "
                    "pp_refresh)");
      }
    }
    throw;
  }
  // The refresh has committed: an interrupt now (the calling statement may still report it)
  // changes nothing, and the warnings say so; nor does a failure of the warning's own check.
  try {
    if (commits_itself) warn_about_unchecked_wal(run, wal_bytes_before);
  } catch (const InterruptedError&) {
    run.warn("interrupted after the refresh committed: its changes are in the database");
  } catch (const std::exception&) {
  }
  return run.summary;
}

}  // namespace pp
