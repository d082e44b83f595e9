// Running SQL from C++: one prepared statement, or a script of several, with parameters bound
// by name. The only way the extension runs its own SQL.
//
//   Statement select(db, "SELECT ts_ms FROM main.pp_samples WHERE uuid = :uuid");
//   select.bind(":uuid", uuid);
//   while (select.step()) use(select.column_int64(0));
//
//   run_script(db, named_sql("refresh", "fold_windows"), {{":final", 1}, {":now", now}});
//
// Failures throw pp::Error with SQLite's message (the SQL boundary names the function).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/sql_values.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

// Named parameters (":name" as written in the SQL) and their values. A name the SQL does not
// use is ignored; a parameter the SQL uses and the list lacks is NULL.
using SqlParameters = std::vector<std::pair<std::string, SqlValue>>;

class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql);
  // The next statement of a script that starts at *script, which moves past it; empty() when
  // only whitespace or comments were left.
  Statement(sqlite3* db, std::string_view* script);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // True with a row to read; false when done (the statement is then reset, so it can be bound
  // and run again).
  bool step();
  // Runs a statement that returns no rows; returns sqlite3_changes().
  long long run();

  // Values are copied (SQLITE_TRANSIENT): the caller's buffers may change before step().
  void bind(int index, const SqlValue& value);
  void bind(int index, std::string_view text);
  void bind(int index, const std::string& text) { bind(index, std::string_view(text)); }
  void bind(int index, const char* text) { bind(index, std::string_view(text)); }
  void bind(int index, int value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  template <class T>
  void bind(int index, const std::optional<T>& value) {
    if (value)
      bind(index, *value);
    else
      sqlite3_bind_null(stmt_, index);
  }
  // By name (":uuid"); throws pp::Error when the SQL has no such parameter.
  template <class T>
  void bind(const char* name, const T& value) {
    bind(parameter_index(name), value);
  }
  void bind_all(const SqlParameters& parameters);
  // A BLOB (bind(index, text) binds TEXT).
  void bind_blob(const char* name, std::string_view bytes);

  int column_type(int column) const { return sqlite3_column_type(stmt_, column); }
  bool column_null(int column) const { return column_type(column) == SQLITE_NULL; }
  int64_t column_int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  double column_double(int column) const { return sqlite3_column_double(stmt_, column); }
  // TEXT as a string ("" for NULL); the view form is valid until the next step.
  std::string column_text(int column) const { return std::string(column_view(column)); }
  std::string_view column_view(int column) const;
  // BLOB bytes ("" for NULL), valid until the next step.
  std::string_view column_blob(int column) const;

  sqlite3_stmt* handle() const { return stmt_; }
  bool empty() const { return stmt_ == nullptr; }

 private:
  int parameter_index(const char* name) const;
  [[noreturn]] void fail() const;

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs every statement of script in order, each with the parameters it names; returns the
// total of sqlite3_changes() of its statements.
long long run_script(sqlite3* db, std::string_view script, const SqlParameters& parameters = {});

// The first column of the first row of a query (fallback when it has no row or it is NULL).
double query_double(sqlite3* db, std::string_view sql, const SqlParameters& parameters, double fallback);

}  // namespace pp
