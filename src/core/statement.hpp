// A prepared statement of the extension's own SQL, finalized when it goes out of scope.
//
//   Statement select(db, "SELECT ts_ms FROM main.pp_samples WHERE uuid = ?1", "pp_refresh");
//   select.bind(1, uuid);
//   while (select.step()) use(sqlite3_column_int64(select.stmt, 0));
//
// step() throws pp::Error("FUNCTION: <SQLite's message>") on failure and resets the statement
// when it is done, so it can be bound and run again.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const char* function) : db_(db), function_(function) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) fail();
  }
  ~Statement() { sqlite3_finalize(stmt); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // True with a row to read; false when done (the statement is reset).
  bool step() {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) return true;
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) fail();
    return false;
  }
  // Runs a statement that returns no rows.
  void run() {
    while (step()) {
    }
  }

  // Values are copied (SQLITE_TRANSIENT): the caller's buffers may change before step().
  void bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(stmt, index, value); }
  void bind_null(int index) { sqlite3_bind_null(stmt, index); }
  template <class T>
  void bind(int index, const std::optional<T>& value) {
    if (value)
      bind(index, *value);
    else
      bind_null(index);
  }

  sqlite3_stmt* stmt = nullptr;

 private:
  [[noreturn]] void fail() { throw Error(std::string(function_) + ": " + sqlite3_errmsg(db_)); }

  sqlite3* db_;
  const char* function_;
};

}  // namespace pp
