#include "core/table_function.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>

#include "core/keyed_digest.hpp"
#include "core/text.hpp"

namespace pp {

namespace {

// idxStr of a plan that cannot run: the marker, then the reason xFilter reports.
constexpr const char kCannotRun[] = "cannot run: ";
// idxStr of a plan that has a second `=` on an argument (a WHERE condition beside the call's own
// argument, or an IN list): the marker, then, from plan_arguments, "CONSTRAINT:ARGUMENT ..."; once
// placed (place_extra_arguments), the argv position of the first extra value and the argument
// of each: "FIRST ARGUMENT ...".
constexpr const char kExtraArguments[] = "extra arguments: ";

bool starts_with(const char* text, const char* prefix) {
  return text && std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

void set_idx_str(sqlite3_index_info* info, const std::string& text) {
  if (info->needToFreeIdxStr) sqlite3_free(info->idxStr);
  info->idxStr = sqlite3_mprintf("%s", text.c_str());
  if (!info->idxStr) throw std::bad_alloc();
  info->needToFreeIdxStr = 1;
}

bool numeric(sqlite3_value* v) {
  const int type = sqlite3_value_type(v);
  return type == SQLITE_INTEGER || type == SQLITE_FLOAT;
}

// Whether two values of one argument can both equal the hidden column, whatever affinity the
// other side of each `=` applies (a TEXT column's '1700000000' is the number 1700000000 to
// SQLite when the hidden column holds that number): numbers by value, a number and text by the
// text's number, text and blobs by their bytes, NULL only with NULL.
bool same_argument(sqlite3_value* a, sqlite3_value* b) {
  const int ta = sqlite3_value_type(a), tb = sqlite3_value_type(b);
  if (numeric(a) && numeric(b)) {
    if (ta == SQLITE_INTEGER && tb == SQLITE_INTEGER) return sqlite3_value_int64(a) == sqlite3_value_int64(b);
    return sqlite3_value_double(a) == sqlite3_value_double(b);
  }
  if (numeric(a) != numeric(b)) {
    sqlite3_value* text = numeric(a) ? b : a;
    double number = 0;
    return sqlite3_value_type(text) == SQLITE_TEXT &&
           parse_double(reinterpret_cast<const char*>(sqlite3_value_text(text)), number) &&
           number == sqlite3_value_double(numeric(a) ? a : b);
  }
  if (ta != tb) return false;
  if (ta == SQLITE_NULL) return true;
  const void* pa = ta == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(a)) : sqlite3_value_blob(a);
  const void* pb = tb == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(b)) : sqlite3_value_blob(b);
  const int na = sqlite3_value_bytes(a), nb = sqlite3_value_bytes(b);
  return na == nb && (na == 0 || std::memcmp(pa, pb, static_cast<size_t>(na)) == 0);
}

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
  std::string extras;  // "CONSTRAINT:ARGUMENT " of each further usable `=` on an argument
  // The argument's value comes from its first usable `=` under binary collation, if it has one;
  // the others of that collation are compared with it in xFilter, and those of another collation
  // (`path = 'A' COLLATE NOCASE`) are SQLite's to check against the echoed value.
  std::vector<bool> binary(n, false);
  std::vector<std::pair<int, int>> more;  // (constraint, argument) of further usable `=`
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    const int argument = c.iColumn - first_argument_column;
    if (argument < 0 || argument >= n) continue;
    if (!is_argument_operator(c.op)) {
      const std::string name = arguments[static_cast<size_t>(argument)].name;
      // IS NULL reaches a table as a test without a value, so it cannot give the argument.
      if (arguments_only && c.op == SQLITE_INDEX_CONSTRAINT_ISNULL)
        return cannot_run(info, "argument '" + name + "' is tested with IS NULL, which gives the call no value: write " +
                                    name + " = NULL, or pass NULL in its place between the parentheses");
      if (arguments_only)
        return cannot_run(info, "argument '" + name +
                                    "' must be given with = (or IS); a filter on it such as >, LIKE or != would drop "
                                    "the row of a call that ran all the same");
      continue;
    }
    if (!c.usable) {
      unusable[argument] = true;
      continue;
    }
    const bool is_binary = sqlite3_stricmp(sqlite3_vtab_collation(info, i), "BINARY") == 0;
    if (usable[argument] < 0 || (is_binary && !binary[argument])) {
      if (usable[argument] >= 0) more.emplace_back(usable[argument], argument);
      usable[argument] = i;
      binary[argument] = is_binary;
    } else {
      more.emplace_back(i, argument);
    }
  }
  for (const auto& [constraint, argument] : more)
    if (binary[argument] && sqlite3_stricmp(sqlite3_vtab_collation(info, constraint), "BINARY") == 0)
      extras += std::to_string(constraint) + ":" + std::to_string(argument) + " ";
  for (int a = 0; a < n; ++a) {
    if (usable[a] >= 0) {
      // A call with side effects runs only where every `=` on its arguments agrees: not before
      // a table that gives one of them is read.
      if (arguments_only && unusable[a])
        return cannot_run(info, std::string("argument '") + arguments[a].name +
                                    "' is also compared with a table that this join order reads later (name that "
                                    "table first, and do not CROSS JOIN it after this one)");
      continue;
    }
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
  if (!extras.empty()) set_idx_str(info, kExtraArguments + extras);
  return SQLITE_OK;
}

void place_extra_arguments(sqlite3_index_info* info) {
  if (!starts_with(info->idxStr, kExtraArguments)) return;
  int next_argv = 1;
  for (int i = 0; i < info->nConstraint; ++i) next_argv = std::max(next_argv, info->aConstraintUsage[i].argvIndex + 1);
  std::string placed = kExtraArguments + std::to_string(next_argv);
  std::istringstream pairs(info->idxStr + std::strlen(kExtraArguments));
  int constraint = 0, argument = 0;
  char colon = 0;
  while (pairs >> constraint >> colon >> argument) {
    info->aConstraintUsage[constraint].argvIndex = next_argv++;
    info->aConstraintUsage[constraint].omit = 0;
    placed += " " + std::to_string(argument);
  }
  set_idx_str(info, placed);
}

bool extra_arguments_agree(int idx_num, const char* idx_str, std::vector<sqlite3_value*>& argv) {
  if (!starts_with(idx_str, kExtraArguments)) return true;
  std::istringstream placed(idx_str + std::strlen(kExtraArguments));
  int first = 0, argument = 0;
  placed >> first;
  std::vector<sqlite3_value*> extra(argv.begin() + (first - 1), argv.end());
  argv.resize(static_cast<size_t>(first - 1));  // (the table's own arguments are those before)
  for (size_t k = 0; placed >> argument; ++k) {
    // The argument's own value: after those of the present arguments before it.
    size_t position = 0;
    for (int a = 0; a < argument; ++a) position += (idx_num >> a) & 1;
    if (!same_argument(argv[position], extra[k])) return false;
    // A number and its text agree: the number is the argument, so that the hidden column
    // equals both under any affinity SQLite applies.
    if (numeric(extra[k]) && !numeric(argv[position])) argv[position] = extra[k];
  }
  return true;
}

void penalize_unusable_extra_arguments(sqlite3_index_info* info, int first_argument_column) {
  std::vector<int> usable, unusable;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.iColumn < first_argument_column || !is_argument_operator(c.op)) continue;
    (c.usable ? usable : unusable).push_back(c.iColumn);
  }
  for (int column : unusable)
    if (std::find(usable.begin(), usable.end(), column) != usable.end()) {
      // The call would run with one value before SQLite compares it with the other: a plan
      // that has both first is preferred (it runs only where they agree).
      info->estimatedCost *= 1e6;
      return;
    }
}

void penalize_absent_arguments_read(sqlite3_index_info* info, int first_argument_column) {
  // (colUsed has a bit per column below 63, and bit 63 for every column after.)
  for (int column = first_argument_column; column < 64; ++column) {
    if (!(info->colUsed & (sqlite3_uint64{1} << column))) continue;
    bool given = false;
    for (int i = 0; i < info->nConstraint; ++i)
      given = given || (info->aConstraint[i].iColumn == column && info->aConstraintUsage[i].argvIndex > 0);
    if (!given) {
      info->estimatedCost *= 1e6;
      return;
    }
  }
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

namespace {

// Appends a value to a call's key: its type, then its bytes (an IN list handed over whole, its
// values in turn), so that two keys are equal only for values that are the same.
void append_key_value(std::string& key, sqlite3_value* value) {
  const int type = sqlite3_value_type(value);
  key += static_cast<char>('0' + type);
  if (type == SQLITE_INTEGER) {
    key += std::to_string(sqlite3_value_int64(value));
  } else if (type == SQLITE_FLOAT) {
    const double number = sqlite3_value_double(value);
    key.append(reinterpret_cast<const char*>(&number), sizeof number);
  } else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
    const void* bytes =
        type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_value_text(value)) : sqlite3_value_blob(value);
    const int size = sqlite3_value_bytes(value);
    key += std::to_string(size) + ":";
    if (size > 0) key.append(static_cast<const char*>(bytes), static_cast<size_t>(size));
  } else {
    sqlite3_value* item = nullptr;
    int rc = sqlite3_vtab_in_first(value, &item);  // an error code for a plain NULL
    if (rc != SQLITE_OK && rc != SQLITE_DONE) return;
    key += "(";
    for (; rc == SQLITE_OK; rc = sqlite3_vtab_in_next(value, &item)) append_key_value(key, item);
    if (rc == SQLITE_NOMEM) throw std::bad_alloc();
    if (rc != SQLITE_DONE)
      throw Error("cannot read the values of an IN list (SQLite error " + std::to_string(rc) + ")");
    key += ")";
  }
  key += ";";
}

}  // namespace

sqlite3_int64 TableCursor::first_rowid(const char* table, int idx_num, const std::vector<sqlite3_value*>& argv) {
  std::string key = std::string(table) + ";" + std::to_string(idx_num) + ";";
  for (sqlite3_value* value : argv) append_key_value(key, value);
  return static_cast<sqlite3_int64>((connection->call_number(key) << 32) + 1);
}

std::string TableCursor::part_key(const char* table, std::string_view part) const {
  std::string key = std::string(table) + ";";
  for (sqlite3_value* value : arguments_) {
    if (value)
      append_key_value(key, value);
    else
      key += "absent;";
  }
  key.append(part.data(), part.size());
  // (A digest begins with a NUL, a first_rowid key with the table's name: they never meet.)
  return keyed_digest(key);
}

sqlite3_int64 TableCursor::part_rowid_base(const std::string& part_key) {
  return static_cast<sqlite3_int64>(connection->call_number(part_key) << 32);
}

TableCursor::~TableCursor() {
  for (sqlite3_value* v : arguments_) sqlite3_value_free(v);
  connection->cursor_closed(serial);
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

int connect_table(sqlite3* db, void* client_data, const char* schema, bool direct_only, sqlite3_vtab** out,
                  char** error) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) {
    *error = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
  }
  // Tables that reach the network or files, or show the connection's state, must not run from
  // a database file's views or triggers; pure tables are innocuous.
  sqlite3_vtab_config(db, direct_only ? SQLITE_VTAB_DIRECTONLY : SQLITE_VTAB_INNOCUOUS);
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
