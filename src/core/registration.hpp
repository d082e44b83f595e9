// What each area of the extension registers, as tables of SQL objects. src/extension.cpp
// lists the areas (kAreas); each area's <area>_objects.cpp returns its table:
//
//   SqlObjects prometheus_objects() {
//     return {{scalar("regexp", 2, kPureFunction, regexp_function), ...},
//             {{"prom_range", &kPromRangeModule}, ...}};
//   }
#pragma once
#include <string>
#include <vector>

#include "core/connection.hpp"

namespace pp {

using ScalarCallback = void (*)(sqlite3_context*, int, sqlite3_value**);
using FinalCallback = void (*)(sqlite3_context*);

// Flags of the two kinds of function: network and file access is DIRECTONLY, so a view or
// trigger stored in a database file cannot make requests as whoever opens it; pure functions
// are DETERMINISTIC and INNOCUOUS.
constexpr int kPureFunction = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
constexpr int kIoFunction = SQLITE_UTF8 | SQLITE_DIRECTONLY;

// A scalar, aggregate or window function for one number of arguments.
struct SqlFunction {
  const char* name;
  int arguments;
  int flags;
  bool uses_connection;  // its user data is the connection's shared state (connection_from)
  ScalarCallback scalar;
  ScalarCallback step;
  FinalCallback final;
  FinalCallback value;     // window functions
  ScalarCallback inverse;  // window functions
};

inline SqlFunction scalar(const char* name, int arguments, int flags, ScalarCallback callback,
                          bool uses_connection = false) {
  return {name, arguments, flags, uses_connection, callback, nullptr, nullptr, nullptr, nullptr};
}
inline SqlFunction aggregate(const char* name, int arguments, int flags, ScalarCallback step, FinalCallback final) {
  return {name, arguments, flags, false, nullptr, step, final, nullptr, nullptr};
}
inline SqlFunction window(const char* name, int arguments, int flags, ScalarCallback step, FinalCallback final,
                          FinalCallback value, ScalarCallback inverse) {
  return {name, arguments, flags, false, nullptr, step, final, value, inverse};
}

// A table-valued function (an eponymous module); its client data is the connection's state.
struct SqlModule {
  const char* name;
  const sqlite3_module* module;
};

struct SqlObjects {
  std::vector<SqlFunction> functions;
  std::vector<SqlModule> modules;
};

// What the extension's init hands every area: the database and the connection's shared state.
struct Registration {
  sqlite3* db;
  ConnectionPtr connection;
};

// Registers every object; on failure throws pp::Error "registering NAME: <SQLite's message>".
void register_objects(const Registration& r, const SqlObjects& objects);

// Each area's table (src/<area>/<area>_objects.cpp).
SqlObjects core_objects();
SqlObjects prometheus_objects();
SqlObjects events_objects();
SqlObjects stats_objects();
SqlObjects attribution_objects();

}  // namespace pp
