// pp_version(), pp_config(key [, value]), pp_last_warnings() and pp_http_stats()
// (docs/reference/settings.md).
#include "core/core_functions.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "core/connection.hpp"
#include "core/guard.hpp"
#include "core/number_text.hpp"
#include "core/sql_values.hpp"

namespace pp {

void pp_version_function(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, PP_VERSION, -1, SQLITE_STATIC);
}

// pp_config(key) returns the setting as it may be shown (secrets masked);
// pp_config(key, value) validates and sets it for this connection and returns the new value.
namespace {

}  // namespace

void pp_config_function(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, "pp_config", [&] {
    Connection& connection = connection_from(sqlite3_user_data(ctx));
    // Bytes are not a setting: read as text they would pass for whatever they spell (x'3530', 50).
    for (int i = 0; i < argc; ++i)
      if (sqlite3_value_type(argv[i]) == SQLITE_BLOB)
        throw argument_error(i == 0 ? "key" : "value", "is a BLOB; it needs text or a number");
    const std::string key = required_text(argv[0], "key");
    if (argc == 2) {
      if (connection.engine_writing())
        throw Error("settings cannot change while pp_refresh writes the attribution tables (was pp_config "
                    "called by a constraint or trigger stored in the database?)");
      connection.settings().set(key, sqlite3_value_type(argv[1]) == SQLITE_FLOAT
                                         ? number_text(sqlite3_value_double(argv[1]))
                                         : required_text(argv[1], "value"));
    }
    connection.settings().get(key);  // a value refused from the environment is an error here too
    result_text(ctx, connection.settings().display(key));
  });
}

// JSON array of the warnings of the latest statement that read from the extension's tables.
void pp_last_warnings_function(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_last_warnings", [&] {
    nlohmann::json warnings = connection_from(sqlite3_user_data(ctx)).warnings();
    result_text(ctx, warnings.dump());
  });
}

// JSON {"requests": N, "bytes": M}: HTTP requests this connection has sent (retries included)
// and response bytes received, so a user can see what a query cost.
void pp_http_stats_function(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_http_stats", [&] {
    HttpClient& http = connection_from(sqlite3_user_data(ctx)).http();
    nlohmann::json stats = {{"requests", http.requests_sent()}, {"bytes", http.bytes_received()}};
    result_text(ctx, stats.dump());
  });
}

}  // namespace pp
