// Running the extension's own SQL (sql/*.sql, embedded at build time) on a connection.
#pragma once
#include <string>
#include <vector>

#include "core/sqlite_api.hpp"

namespace pp {

// The text of sql/NAME.sql as built into the extension, or nullptr.
const char* embedded_sql(const char* name);

// A bound parameter: ?1, ?2, ... in every statement of the script that uses them.
struct SqlParameter {
  enum Kind { kNull, kReal, kText } kind = kNull;
  double real = 0;
  std::string text;
  static SqlParameter of(double v) { SqlParameter p; p.kind = kReal; p.real = v; return p; }
  static SqlParameter of(const std::string& v) { SqlParameter p; p.kind = kText; p.text = v; return p; }
};

// Runs every statement of script; returns the total of sqlite3_changes() of its statements.
// Throws pp::Error("FUNCTION: ...") with SQLite's message on the first failure.
long long run_sql_script(sqlite3* db, const std::string& script, const std::vector<SqlParameter>& params,
                         const char* function);

// Runs one query and returns the first column of its first row as a double (NULL -> fallback).
double query_double(sqlite3* db, const std::string& sql, const std::vector<SqlParameter>& params,
                    const char* function, double fallback);

// Creates the attribution tables and views (idempotent): what pp_install_views() does.
void install_attribution_schema(sqlite3* db, const char* function);
// "tables: a, b, ...; views: c, ...": what install_attribution_schema creates, read from its SQL.
std::string attribution_objects();

}  // namespace pp
