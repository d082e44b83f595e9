// The register function of each area, called in order by sqlite3_precisionprobe_init.
// Each returns an SQLite result code; on failure sqlite3_errmsg(db) says why.
#pragma once
#include "core/connection.hpp"

namespace pp {

int register_core_functions(const Registration& r);      // src/core/core_functions.cpp
int register_settings_table(const Registration& r);      // src/core/pp_settings.cpp
int register_regex_functions(const Registration& r);     // src/prometheus/regex_functions.cpp
int register_prometheus_tables(const Registration& r);   // vtab/prom_*.cpp
int register_layer_events(const Registration& r);  // src/events/layer_events.cpp
int register_mean_functions(const Registration& r);        // src/stats/mean_functions.cpp
int register_similarity_functions(const Registration& r);  // src/stats/similarity_functions.cpp
int register_attribution(const Registration& r);          // src/attribution/pp_refresh.cpp
int register_deconvolve_function(const Registration& r);  // src/stats/deconvolve_function.cpp

}  // namespace pp

namespace pp {

using ScalarCallback = void (*)(sqlite3_context*, int, sqlite3_value**);

// A scalar function whose user data is the connection's shared state.
inline int create_connection_function(const Registration& r, const char* name, int arguments,
                                      int flags, ScalarCallback callback) {
  return sqlite3_create_function_v2(r.db, name, arguments, flags, share_connection(r.connection),
                                    callback, nullptr, nullptr, release_connection);
}

// An eponymous (table-valued) module whose client data is the connection's shared state.
inline int create_connection_module(const Registration& r, const char* name,
                                    const sqlite3_module* module) {
  return sqlite3_create_module_v2(r.db, name, module, share_connection(r.connection),
                                  release_connection);
}

}  // namespace pp
