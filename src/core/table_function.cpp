#include "core/table_function.hpp"

#include <cstring>
#include <string>

namespace pp {

namespace {

// idxStr of a plan that cannot run: the marker, then the reason xFilter reports.
constexpr const char kCannotRun[] = "cannot run: ";

bool is_argument_operator(unsigned char op) {
  return op == SQLITE_INDEX_CONSTRAINT_EQ || op == SQLITE_INDEX_CONSTRAINT_IS;
}

int cannot_run(sqlite3_index_info* info, const std::string& reason) {
  info->idxStr = sqlite3_mprintf("%s%s", kCannotRun, reason.c_str());
  if (!info->idxStr) throw std::bad_alloc();
  info->needToFreeIdxStr = 1;
  info->estimatedCost = 1e300;
  info->estimatedRows = 1;
  for (int i = 0; i < info->nConstraint; ++i) info->aConstraintUsage[i] = {0, 0};
  info->idxNum = 0;
  return kPlanCannotRun;
}

}  // namespace

int plan_arguments(sqlite3_index_info* info, int first_argument_column, const std::vector<ArgumentSpec>& arguments,
                   bool arguments_only) {
  const int n = static_cast<int>(arguments.size());
  std::vector<int> usable(n, -1);
  std::vector<bool> unusable(n, false);
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    const int argument = c.iColumn - first_argument_column;
    if (argument < 0 || argument >= n) continue;
    if (!is_argument_operator(c.op)) {
      if (arguments_only)
        return cannot_run(info, std::string("argument '") + arguments[static_cast<size_t>(argument)].name +
                                    "' is given with = (or IS); a filter on it such as >, LIKE or != would drop the "
                                    "row of a call that ran all the same");
      continue;
    }
    if (!c.usable)
      unusable[argument] = true;
    else if (usable[argument] < 0)
      usable[argument] = i;  // a second one is checked by SQLite against the echoed value
  }
  for (int a = 0; a < n; ++a) {
    if (usable[a] >= 0) continue;
    // A value from a table that this plan reads later would be dropped, and SQLite's check of
    // it against the hidden column (NULL) would then give zero rows, or a side effect would run
    // without it.
    if (unusable[a])
      return cannot_run(info, std::string("argument '") + arguments[a].name +
                                  "' is taken from a table that this join order reads later (name that table "
                                  "first, and do not CROSS JOIN it after this one)");
    // One branch of an OR is planned without the constraints outside the OR: costed out, and
    // only if no plan can supply the argument is this one run.
    if (arguments[a].required)
      return cannot_run(info, std::string("missing required argument '") + arguments[a].name + "'");
  }
  int idx_num = 0;
  int next_argv = 1;
  for (int a = 0; a < n; ++a) {
    if (usable[a] < 0) continue;
    idx_num |= 1 << a;
    info->aConstraintUsage[usable[a]].argvIndex = next_argv++;
    info->aConstraintUsage[usable[a]].omit = 1;
  }
  info->idxNum = idx_num;
  return SQLITE_OK;
}

void check_plan_arguments(const char* idx_str) {
  constexpr size_t kMarker = sizeof kCannotRun - 1;
  if (idx_str && std::strncmp(idx_str, kCannotRun, kMarker) == 0) throw Error(idx_str + kMarker);
}

std::vector<sqlite3_value*> filter_arguments(int idx_num, int argc, sqlite3_value** argv, size_t argument_count) {
  std::vector<sqlite3_value*> values(argument_count, nullptr);
  int next = 0;
  for (size_t a = 0; a < argument_count && next < argc; ++a)
    if (idx_num & (1 << a)) values[a] = argv[next++];
  return values;
}

TableCursor::~TableCursor() {
  for (sqlite3_value* v : arguments_) sqlite3_value_free(v);
  connection->cursor_closed();
}

void TableCursor::keep_arguments(const std::vector<sqlite3_value*>& arguments) {
  for (sqlite3_value* v : arguments_) sqlite3_value_free(v);
  arguments_.clear();
  for (sqlite3_value* v : arguments) {
    sqlite3_value* copy = nullptr;
    if (v && !(copy = sqlite3_value_dup(v))) throw std::bad_alloc();
    arguments_.push_back(copy);
  }
}

void TableCursor::result_argument(sqlite3_context* ctx, size_t argument) const {
  if (argument < arguments_.size() && arguments_[argument])
    sqlite3_result_value(ctx, arguments_[argument]);
  else
    sqlite3_result_null(ctx);
}

void RowsCursor::set_rows(std::vector<std::vector<SqlValue>> rows) {
  rows_ = std::move(rows);
  row_ = 0;
  eof = rows_.empty();
}

void RowsCursor::column(sqlite3_context* ctx, int column) const {
  const auto& row = rows_[row_];
  if (static_cast<size_t>(column) < row.size())
    result_value(ctx, row[static_cast<size_t>(column)]);
  else
    sqlite3_result_null(ctx);
}

int connect_table(sqlite3* db, void* client_data, const char* schema, bool does_io, sqlite3_vtab** out,
                  char** error) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) {
    *error = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
  }
  // Tables that reach the network or files must not run from a database file's views or
  // triggers; pure tables are innocuous.
  sqlite3_vtab_config(db, does_io ? SQLITE_VTAB_DIRECTONLY : SQLITE_VTAB_INNOCUOUS);
  auto* table = new (std::nothrow) ConnectionTable();
  if (!table) return SQLITE_NOMEM;
  table->connection = *static_cast<ConnectionPtr*>(client_data);
  *out = table;
  return SQLITE_OK;
}

int disconnect_table(sqlite3_vtab* vtab) {
  delete static_cast<ConnectionTable*>(vtab);
  return SQLITE_OK;
}

}  // namespace pp
