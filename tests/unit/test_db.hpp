// An in-process SQLite connection with the extension loaded, for tests that run SQL.
//
//   pp_test::TestDb db;                                   // ":memory:", or a file name
//   auto rows = db.query("SELECT layer, forward FROM layer_events(?)", {"runs/x.jsonl"});
//   EXPECT_EQ(rows[0][0].text, "top_l.2");
//   EXPECT_EQ(db.error("SELECT * FROM layer_events('nope')"), "layer_events: no such ...");
//
// The extension is registered with sqlite3_auto_extension, exactly as a host application
// that links it statically would, so every connection opened afterwards has it.
//
// A test that includes this header must not include the extension's src/core/sqlite_api.hpp (or
// any header that does, such as src/core/errors.hpp): sqlite3ext.h redirects every sqlite3_*
// call through the extension's routine table, which is unset in the host program.
#pragma once
#ifdef SQLITE_EXTENSION_INIT1
#error "test_db.hpp calls the host's SQLite; include it in files that do not include sqlite3ext.h"
#endif
#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" int sqlite3_precisionprobe_init(sqlite3*, char**, const sqlite3_api_routines*);

namespace pp_test {

// One column value of a result row, with its SQLite storage class.
struct Value {
  int type = SQLITE_NULL;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL
  int64_t integer = 0;
  double real = 0;
  std::string text;  // TEXT and BLOB bytes; also the text form of numbers

  bool is_null() const { return type == SQLITE_NULL; }
};

inline constexpr int64_t kNsPerMs = 1000000;

using Row = std::vector<Value>;
using Rows = std::vector<Row>;

class TestDb {
 public:
  explicit TestDb(const std::string& filename = ":memory:", int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {
    static const int registered = sqlite3_auto_extension(
        reinterpret_cast<void (*)(void)>(sqlite3_precisionprobe_init));
    if (registered != SQLITE_OK) throw std::runtime_error("sqlite3_auto_extension failed");
    if (sqlite3_open_v2(filename.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + filename + ": " + message);
    }
  }
  ~TestDb() { sqlite3_close(db_); }
  TestDb(const TestDb&) = delete;
  TestDb& operator=(const TestDb&) = delete;

  sqlite3* get() const { return db_; }

  // Runs one statement with text parameters bound to ?1, ?2, ...; throws std::runtime_error
  // with SQLite's message when it fails.
  Rows query(const std::string& sql, const std::vector<std::string>& parameters = {}) {
    Rows rows;
    std::string message;
    if (run(sql, parameters, rows, message) != SQLITE_OK) throw std::runtime_error(message);
    return rows;
  }

  // Runs statements that return nothing (several allowed, separated by ';').
  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string text = message ? message : "unknown error";
      sqlite3_free(message);
      throw std::runtime_error(text);
    }
  }

  // The first column of the first row (throws when there is no row).
  Value scalar(const std::string& sql, const std::vector<std::string>& parameters = {}) {
    Rows rows = query(sql, parameters);
    if (rows.empty() || rows[0].empty()) throw std::runtime_error("no rows: " + sql);
    return rows[0][0];
  }

  // The error message of a statement that must fail ("" when it succeeds).
  std::string error(const std::string& sql, const std::vector<std::string>& parameters = {}) {
    Rows rows;
    std::string message;
    return run(sql, parameters, rows, message) == SQLITE_OK ? std::string() : message;
  }

 private:
  int run(const std::string& sql, const std::vector<std::string>& parameters, Rows& rows,
          std::string& message) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      message = sqlite3_errmsg(db_);
      return rc;
    }
    for (size_t i = 0; i < parameters.size(); ++i)
      sqlite3_bind_text(stmt, static_cast<int>(i + 1), parameters[i].c_str(), -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      Row row;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        Value v;
        v.type = sqlite3_column_type(stmt, c);
        v.integer = sqlite3_column_int64(stmt, c);
        v.real = sqlite3_column_double(stmt, c);
        if (v.type != SQLITE_NULL) {
          const void* bytes = v.type == SQLITE_BLOB ? sqlite3_column_blob(stmt, c)
                                                    : sqlite3_column_text(stmt, c);
          if (bytes) v.text.assign(static_cast<const char*>(bytes), sqlite3_column_bytes(stmt, c));
        }
        row.push_back(std::move(v));
      }
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) message = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  sqlite3* db_ = nullptr;
};

}  // namespace pp_test
