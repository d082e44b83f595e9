// The one kit for the extension's table-valued functions: eponymous virtual tables whose
// arguments are HIDDEN columns, as in SQLite's ext/misc/series.c. A table is one cursor type:
//
//   struct RangeCursor : TableCursor {
//     static constexpr const char* kName = "prom_range";        // names its errors
//     static constexpr const char* kSchema =                     // visible columns, then arguments
//         "CREATE TABLE x(metric TEXT, labels TEXT, ts REAL, value REAL, query HIDDEN, ...)";
//     static constexpr int kFirstArgument = 4;                   // first HIDDEN column
//     static constexpr bool kDirectOnly = true;                  // DIRECTONLY; else INNOCUOUS
//     static int plan(sqlite3_index_info* info);                 // xBestIndex (plan_arguments...)
//     using TableCursor::TableCursor;
//     void filter(int idx_num, int argc, sqlite3_value** argv);  // starts; sets eof
//     void next();                                               // moves on; sets eof at the end
//     void column(sqlite3_context* ctx, int column) const;       // a visible column
//   };
//   const sqlite3_module kRangeModule = table_function_module<RangeCursor>();
//
// The kit does the rest: connecting (declaring kSchema, DIRECTONLY or INNOCUOUS), the cursor's
// life and rowid (1, 2, ... in row order; see first_rowid, and part_rowid_base for a table whose
// push-downs skip rows), and the hidden columns, which echo the arguments
// that filter() passed to keep_arguments(). Every callback runs inside guard_vtab: nothing
// thrown reaches SQLite, and messages get kName in front.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "core/connection.hpp"
#include "core/guard.hpp"
#include "core/sql_values.hpp"

namespace pp {

struct ArgumentSpec {
  const char* name;
  bool required;
};

// The xBestIndex half of the arguments: hands each usable `=` or `IS` constraint on an
// argument column to xFilter (in argument order), marks it omitted (the hidden column echoes the
// value, so SQLite's own check would pass) and records which arguments are present as bits of
// idxNum. SQLite asks about several plans of one query, some with fewer constraints than the
// query has (one branch of an OR, a join order where another table is read later): a plan that
// lacks a required argument, or that would drop an argument given from another table (present,
// but not usable in this plan), must not run instead of a plan that has it. Such a plan gets an
// enormous cost and returns kPlanCannotRun: the table's plan() returns at once, and should SQLite
// run it after all (no other plan exists), its xFilter fails with the reason ("missing required
// argument 'path'", "argument 'final' comes from a table read after ...").
// With arguments_only (a table whose call has side effects), a constraint on an argument column
// by any other operator is refused the same way: SQLite would check it against the row of a
// call that ran all the same (`pp_refresh(p) WHERE final > 0` refreshing, then returning nothing).
constexpr int kPlanCannotRun = SQLITE_OK + 1000;
int plan_arguments(sqlite3_index_info* info, int first_argument_column, const std::vector<ArgumentSpec>& arguments,
                   bool arguments_only = false);
// In xFilter: throws the reason of a plan that cannot run (the kit calls it).
void check_plan_arguments(const char* idx_str);
// A second usable `=` on an argument (`layer_events('a') WHERE path = 'b'`, or `path IN (...)`
// beside the call's own argument) is not dropped: the kit passes its value to xFilter after
// every other (place_extra_arguments, after the table's plan()), and the call runs only where it
// equals the argument's own value (extra_arguments_agree, which also takes those values off
// argc); otherwise it gives no row, as `path = 'a' AND path = 'b'` says.
void place_extra_arguments(sqlite3_index_info* info);
bool extra_arguments_agree(int idx_num, const char* idx_str, std::vector<sqlite3_value*>& argv);
// After plan(): a plan where an argument has a usable `=` and one from a table read later costs
// a millionfold, so that SQLite reads that table first where it can (the call then runs only
// where both agree; otherwise it runs with one value and SQLite drops the rows after).
void penalize_unusable_extra_arguments(sqlite3_index_info* info, int first_argument_column);
// After plan(): a plan without an argument whose column the statement reads (colUsed) costs a
// millionfold, so that a plan that gives it wins where one exists. SQLite takes the `=` that
// every branch of an OR has out of it: in `(uuid = 'a' AND after_ms = 1) OR (uuid = 'a' AND
// after_ms = 2)` it would run the call once without after_ms and compare the echoed NULL with 1
// and 2, keeping no row, where the OR's plan runs each branch's call and keeps its rows, as
// `uuid = 'a' AND after_ms IN (1, 2)` does. A statement that only reads the column (`SELECT
// after_ms FROM pp_overlaps('a')`) has no other plan, and runs this one.
void penalize_absent_arguments_read(sqlite3_index_info* info, int first_argument_column);

// Maps xFilter's argv (present arguments first, in order) back to argument positions:
// result[i] is the value of argument i, or nullptr when it was not given.
std::vector<sqlite3_value*> filter_arguments(int idx_num, int argc, sqlite3_value** argv, size_t argument_count);

// A table of the extension: it keeps its connection's shared state.
struct ConnectionTable : sqlite3_vtab {
  ConnectionPtr connection;
};

// Base of every cursor. While one is open a statement is running (Connection::cursor_opened).
class TableCursor : public sqlite3_vtab_cursor {
 public:
  explicit TableCursor(ConnectionTable* table) : connection(table->connection), serial(connection->cursor_opened()) {}
  virtual ~TableCursor();
  TableCursor(const TableCursor&) = delete;
  TableCursor& operator=(const TableCursor&) = delete;

  // Copies of the call's argument values (nullptr: absent), echoed by the hidden columns.
  void keep_arguments(const std::vector<sqlite3_value*>& arguments);
  void result_argument(sqlite3_context* ctx, size_t argument) const;

  // The rowid of the first row of a call. SQLite's MULTI-INDEX OR runs one call per branch (a
  // cursor each) and drops a row whose rowid an earlier branch gave: the rows of calls that
  // differ (in arguments or pushed-down values) are other rows, so each such call counts from
  // its own 2^32 * k + 1 (k: how many differing calls the statement ran before it, so its
  // first call's rows are 1, 2, ...; a statement is known by its address and run count, so one
  // prepared where an earlier one ran may go on from that one's k: rowids stay distinct within
  // the statement, which is what the plans need), and a call repeated as it was counts as it did. argv
  // holds the call's values without the extra arguments (a second `=` that agrees with an
  // argument gives the call it agrees with).
  sqlite3_int64 first_rowid(const char* table, int idx_num, const std::vector<sqlite3_value*>& argv);
  // A table whose pushed-down filters skip rows of its source would give a row that two
  // branches both keep two rowids under first_rowid (their pushed-down values differ). It
  // numbers its rows by where they lie in the source instead: each part of the source (a file)
  // counts from its own 2^32 * k (k as above, for this table, these arguments and this part),
  // and a row's rowid is that plus its place in the part (a file's line number), whatever the
  // filters skipped: the same row has one rowid in every branch, and two rows never share one.
  // The part is named by part_key, whose digest keeps it short: a response of 50,000 series,
  // named by their labels, took two thirds more memory where the names themselves were kept.
  sqlite3_int64 part_rowid_base(const std::string& part_key);
  // The key of a part of table's source for these arguments (those given to keep_arguments()):
  // a keyed digest (core/keyed_digest.hpp) of the three.
  std::string part_key(const char* table, std::string_view part) const;

  ConnectionPtr connection;
  const uint64_t serial;  // Connection::cursor_opened's: the answers of the cache it may use
  bool eof = true;
  sqlite3_int64 rowid = 0;

 private:
  std::vector<sqlite3_value*> arguments_;
};

// A cursor over a result computed whole in filter(): rows of SQL values.
class RowsCursor : public TableCursor {
 public:
  using TableCursor::TableCursor;
  void set_rows(std::vector<std::vector<SqlValue>> rows);
  void next() { eof = ++row_ >= rows_.size(); }
  void column(sqlite3_context* ctx, int column) const;

 private:
  std::vector<std::vector<SqlValue>> rows_;
  size_t row_ = 0;
};

// xConnect and xDisconnect of every table.
int connect_table(sqlite3* db, void* client_data, const char* schema, bool direct_only, sqlite3_vtab** out,
                  char** error);
int disconnect_table(sqlite3_vtab* vtab);

template <class Cursor>
sqlite3_module table_function_module() {
  sqlite3_module m{};  // eponymous (no xCreate/xDestroy) and read-only (no xUpdate)
  m.xConnect = [](sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
    return connect_table(db, aux, Cursor::kSchema, Cursor::kDirectOnly, out, error);
  };
  m.xBestIndex = [](sqlite3_vtab* vtab, sqlite3_index_info* info) {
    return guard_vtab(vtab, Cursor::kName, [&] {
      const int rc = Cursor::plan(info);
      if (rc == SQLITE_OK) {
        place_extra_arguments(info);
        penalize_unusable_extra_arguments(info, Cursor::kFirstArgument);
        penalize_absent_arguments_read(info, Cursor::kFirstArgument);
      }
      return rc == kPlanCannotRun ? SQLITE_OK : rc;
    });
  };
  m.xDisconnect = disconnect_table;
  m.xOpen = [](sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
    return guard_vtab(vtab, Cursor::kName, [&] {
      *out = new Cursor(static_cast<ConnectionTable*>(vtab));
      return SQLITE_OK;
    });
  };
  m.xClose = [](sqlite3_vtab_cursor* cursor) {
    delete static_cast<Cursor*>(cursor);
    return SQLITE_OK;
  };
  m.xFilter = [](sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
    return guard_vtab(base->pVtab, Cursor::kName, [&] {
      check_plan_arguments(idx_str);
      auto* cursor = static_cast<Cursor*>(base);
      cursor->eof = true;
      std::vector<sqlite3_value*> arguments(argv, argv + argc);
      const bool agree = extra_arguments_agree(idx_num, idx_str, arguments);
      cursor->rowid = cursor->first_rowid(Cursor::kName, idx_num, arguments);
      if (agree) cursor->filter(idx_num, static_cast<int>(arguments.size()), arguments.data());
      return SQLITE_OK;
    });
  };
  m.xNext = [](sqlite3_vtab_cursor* base) {
    return guard_vtab(base->pVtab, Cursor::kName, [&] {
      auto* cursor = static_cast<Cursor*>(base);
      ++cursor->rowid;
      cursor->next();
      return SQLITE_OK;
    });
  };
  m.xEof = [](sqlite3_vtab_cursor* cursor) { return static_cast<Cursor*>(cursor)->eof ? 1 : 0; };
  m.xColumn = [](sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
    return guard_vtab(base->pVtab, Cursor::kName, [&] {
      const auto* cursor = static_cast<const Cursor*>(base);
      if (column >= Cursor::kFirstArgument)
        cursor->result_argument(ctx, static_cast<size_t>(column - Cursor::kFirstArgument));
      else
        cursor->column(ctx, column);
      return SQLITE_OK;
    });
  };
  m.xRowid = [](sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
    *rowid = static_cast<Cursor*>(cursor)->rowid;
    return SQLITE_OK;
  };
  return m;
}

}  // namespace pp
