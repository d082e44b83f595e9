#include "core/table_function.hpp"

#include <cstring>

namespace pp {

int plan_arguments(sqlite3_index_info* info, int first_argument_column, const std::vector<ArgumentSpec>& arguments) {
  const int n = static_cast<int>(arguments.size());
  std::vector<int> usable(n, -1);
  unsigned seen_unusable = 0;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    const int argument = c.iColumn - first_argument_column;
    if (argument < 0 || argument >= n) continue;
    if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!c.usable) {
      seen_unusable |= 1u << argument;
      continue;
    }
    usable[argument] = i;
  }
  int idx_num = 0;
  int next_argv = 1;
  const char* missing = nullptr;
  for (int a = 0; a < n; ++a) {
    if (usable[a] >= 0) {
      idx_num |= 1 << a;
      info->aConstraintUsage[usable[a]].argvIndex = next_argv++;
      info->aConstraintUsage[usable[a]].omit = 1;
    } else if (arguments[a].required) {
      if (seen_unusable & (1u << a)) return SQLITE_CONSTRAINT;
      if (!missing) missing = arguments[a].name;
    }
  }
  info->idxNum = idx_num;
  if (missing) {
    // SQLite also asks about plans with fewer constraints than the query has (an OR, a join):
    // such a plan is costed out, not an error. Only if no plan can supply the argument is this
    // one run, and its xFilter says what is missing.
    info->idxStr = sqlite3_mprintf("%s%s'", kMissingArgument, missing);
    if (!info->idxStr) throw std::bad_alloc();
    info->needToFreeIdxStr = 1;
    info->estimatedCost = 1e300;
    info->estimatedRows = 1;
    return kPlanLacksArgument;
  }
  return SQLITE_OK;
}

void check_plan_arguments(const char* idx_str) {
  if (idx_str && std::strncmp(idx_str, kMissingArgument, std::strlen(kMissingArgument)) == 0) throw Error(idx_str);
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
