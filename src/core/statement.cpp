#include "core/statement.hpp"

#include <climits>
#include <cstring>

#include "core/errors.hpp"

namespace pp {

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
  if (sql.size() > static_cast<size_t>(INT_MAX)) throw Error("SQL text too long");
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK) fail();
}

Statement::Statement(sqlite3* db, std::string_view* script) : db_(db) {
  if (script->size() > static_cast<size_t>(INT_MAX)) throw Error("SQL text too long");
  const char* next = nullptr;
  if (sqlite3_prepare_v2(db, script->data(), static_cast<int>(script->size()), &stmt_, &next) != SQLITE_OK) fail();
  script->remove_prefix(static_cast<size_t>(next - script->data()));
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  sqlite3_reset(stmt_);
  if (rc != SQLITE_DONE) fail();
  return false;
}

long long Statement::run() {
  while (step()) {
  }
  return sqlite3_changes(db_);
}

void Statement::bind(int index, const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    bind(index, *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    bind(index, *d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    bind(index, std::string_view(*s));
  } else if (const auto* b = std::get_if<SqlBlob>(&value)) {
    sqlite3_bind_blob64(stmt_, index, b->bytes.data(), b->bytes.size(), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(stmt_, index);
  }
}

void Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void Statement::bind_all(const SqlParameters& parameters) {
  for (const auto& [name, value] : parameters) {
    const int index = sqlite3_bind_parameter_index(stmt_, name.c_str());
    if (index > 0) bind(index, value);
  }
}

std::string_view Statement::column_view(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (!text) return {};
  return std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string_view Statement::column_blob(int column) const {
  const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (!bytes) return {};
  return std::string_view(bytes, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

void Statement::bind_blob(const char* name, std::string_view bytes) {
  if (sqlite3_bind_blob64(stmt_, parameter_index(name), bytes.data(), bytes.size(), SQLITE_TRANSIENT) != SQLITE_OK)
    fail();
}

int Statement::parameter_index(const char* name) const {
  const int index = sqlite3_bind_parameter_index(stmt_, name);
  if (index == 0) throw Error(std::string("internal: the statement has no parameter ") + name);
  return index;
}

void Statement::fail() const {
  if (sqlite3_errcode(db_) == SQLITE_INTERRUPT) throw InterruptedError();
  if ((sqlite3_extended_errcode(db_) & 0xFF) == SQLITE_BUSY)
    throw BusyError(std::string(sqlite3_errmsg(db_)) +
                        ": another connection holds this database's write lock; nothing was written by this "
                        "statement (run it again, or set PRAGMA busy_timeout so that SQLite waits for the lock)",
                    sqlite3_extended_errcode(db_) == SQLITE_BUSY_SNAPSHOT);
  std::string message = sqlite3_errmsg(db_);
  // SQLite says "disk I/O error" alone, whatever the system said: a file-size limit (EFBIG), a
  // quota, a device gone. The system's reason is what the user can act on.
  if ((sqlite3_extended_errcode(db_) & 0xFF) == SQLITE_IOERR && sqlite3_system_errno(db_) != 0)
    message += std::string(" (") + std::strerror(sqlite3_system_errno(db_)) + ")";
  // The extension's own tables, read before anything made them (a fresh database).
  if (message.rfind("no such table: main.pp_", 0) == 0)
    throw Error(message + " (this database has no attribution tables yet: SELECT pp_install_views() creates "
                          "them, and pp_refresh(...) fills them)");
  throw Error(message);
}

long long run_script(sqlite3* db, std::string_view script, const SqlParameters& parameters) {
  long long changes = 0;
  while (!script.empty()) {
    Statement statement(db, &script);
    if (statement.empty()) continue;  // whitespace or a comment
    statement.bind_all(parameters);
    changes += statement.run();
  }
  return changes;
}

double query_double(sqlite3* db, std::string_view sql, const SqlParameters& parameters, double fallback) {
  Statement query(db, sql);
  query.bind_all(parameters);
  if (!query.step()) return fallback;
  const double value = query.column_null(0) ? fallback : query.column_double(0);
  sqlite3_reset(query.handle());
  return value;
}

}  // namespace pp
