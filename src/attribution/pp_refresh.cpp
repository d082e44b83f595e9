// pp_refresh: brings the attribution tables up to date for a job, in one statement.
//
//   SELECT pp_install_views();                      -- once per database (pp_refresh does it too)
//   SELECT * FROM pp_refresh('runs/job1');          -- events path in, result tables out
//   SELECT * FROM layer_metrics WHERE job_id = 'job1';
//
// Arguments (hidden columns path, final):
//   path   events written by the hook client: a file, a directory or a glob (as layer_events);
//          NULL skips the import and the fetch: it folds what pp_events and pp_samples already
//          hold (events and samples inserted by other means; bench/attribution_bench.py times it)
//   final  optional 0 or 1 (FALSE or TRUE; 1.0 is 1); 1 folds every sample window now, including
//          the last one of a job that is still running. Without it (or NULL, or 0) a job is
//          complete once its last event is older than attribution_margin_seconds. Anything else
//          (2, 'yes') is an error.
// One row: events_added, samples_added, windows_folded, history_kept, http_requests,
// events_waiting (not folded yet: the count pp_refresh's warning gives) and waiting_end_time
// (when the last of them ended, unix seconds; NULL when none wait).
//
// The steps are refresh.hpp's. Refreshing again after more events folds only what is new, and
// gives the same layer_state as one refresh over everything; refreshing twice with nothing new
// changes nothing.
//
// In WAL mode, refresh inside BEGIN IMMEDIATE ... COMMIT (or run PRAGMA wal_checkpoint after
// it): SQLite cannot checkpoint from inside the SELECT that refreshes, and a warning says so
// once the -wal file has grown past several times its automatic checkpoint size.
//
// Several connections may refresh one WAL database. The SELECT that calls pp_refresh already
// holds a read transaction, so SQLite cannot wait for another connection's write (busy_timeout
// does not apply): a refresh that meets one fails at once with SQLITE_BUSY, having changed
// nothing, and can be run again. Inside BEGIN IMMEDIATE ... COMMIT it waits its turn instead.
#include "attribution/attribution_tables.hpp"
#include "attribution/refresh.hpp"
#include "core/errors.hpp"
#include "core/sql_values.hpp"
#include "core/text.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kRefreshArguments = {{"path", true}, {"final", false}};

// 0 or 1 (SQL's FALSE and TRUE, or the text '0', '1', 'false', 'true'); NULL or absent is 0. Anything else, 'yes' included, is refused
// rather than read as whatever number SQLite would make of it.
bool final_argument(sqlite3_value* value) {
  if (!value || sqlite3_value_type(value) == SQLITE_NULL) return false;
  const int type = sqlite3_value_type(value);
  const double number = sqlite3_value_double(value);
  if ((type == SQLITE_INTEGER || type == SQLITE_FLOAT) && (number == 0 || number == 1)) return number == 1;
  const unsigned char* text = sqlite3_value_text(value);
  if (!text) throw std::bad_alloc();
  const std::string word = to_lower(trim(reinterpret_cast<const char*>(text)));
  if (type == SQLITE_TEXT && (word == "0" || word == "false")) return false;
  if (type == SQLITE_TEXT && (word == "1" || word == "true")) return true;
  std::string shown = type == SQLITE_BLOB ? "a BLOB" : "'" + std::string(reinterpret_cast<const char*>(text)) + "'";
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw argument_error("final", "needs 0 or 1 (FALSE or TRUE), got " + shown);
}

struct RefreshCursor : RowsCursor {
  static constexpr const char* kName = "pp_refresh";
  static constexpr const char* kSchema =
      "CREATE TABLE x(events_added INTEGER, samples_added INTEGER, windows_folded INTEGER, history_kept INTEGER, "
      "http_requests INTEGER, events_waiting INTEGER, waiting_end_time REAL, path HIDDEN, final HIDDEN)";
  static constexpr int kFirstArgument = 7;
  static constexpr bool kDirectOnly = true;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kRefreshArguments, /*arguments_only=*/true);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 1;
    info->estimatedCost = 1e7;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kRefreshArguments.size());
    // A plan that runs the same call again for each row of another table (the right side of a
    // LEFT JOIN): each run would commit a refresh while the statement reads that table. A call
    // per row with that row's arguments (FROM dirs AS d, pp_refresh(d.path)) is a refresh each,
    // once each.
    std::vector<std::string> called;
    for (sqlite3_value* arg : args) {
      const void* bytes = arg ? sqlite3_value_blob(arg) : nullptr;  // (NULL for NULL and for empty values)
      called.push_back(!arg ? std::string("absent")
                            : std::to_string(sqlite3_value_type(arg)) + ":" +
                                  (bytes ? std::string(static_cast<const char*>(bytes),
                                                       static_cast<size_t>(sqlite3_value_bytes(arg)))
                                         : std::string()));
    }
    if (!connection->first_refresh_call(called))
      throw Error("runs each call once per statement, but this plan runs the same call again (for each row of "
                  "another table: the right side of a LEFT JOIN, or a table that lists the call twice); the first "
                  "refresh is committed. Run SELECT * FROM pp_refresh(...) as a statement of its own, then read "
                  "the tables");
    keep_arguments(args);
    const bool final = final_argument(args[1]);
    const RefreshSummary s = refresh(*connection, optional_text(args[0], "path"), final);
    set_rows({{s.events_added, s.samples_added, s.windows_folded, s.history_kept, int64_t{s.http_requests},
               s.events_waiting,
               s.waiting_end_time ? SqlValue{*s.waiting_end_time} : SqlValue{std::monostate{}}}});
  }
};

}  // namespace

const sqlite3_module kRefreshModule = table_function_module<RefreshCursor>();

}  // namespace pp
