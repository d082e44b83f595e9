// The core area's SQL objects, registered by core_objects.cpp.
#pragma once
#include "core/sqlite_api.hpp"

namespace pp {

void pp_version_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void pp_config_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void pp_last_warnings_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void pp_http_stats_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);

extern const sqlite3_module kSettingsModule;  // pp_settings (settings_table.cpp)

}  // namespace pp
