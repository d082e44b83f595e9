// pp_version(), pp_config(key [, value]), pp_last_warnings() and pp_http_stats().
#include <nlohmann/json.hpp>

#include "core/connection.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "core/sql_values.hpp"

namespace pp {
namespace {

void pp_version(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, PP_VERSION, -1, SQLITE_STATIC);
}

// pp_config(key) returns the setting as it may be shown (secrets masked);
// pp_config(key, value) validates and sets it for this connection and returns the new value.
void pp_config(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  guard_function(ctx, "pp_config", [&] {
    Connection& connection = connection_from(sqlite3_user_data(ctx));
    const std::string key = required_text(argv[0], "pp_config", "key");
    if (argc == 2) connection.settings().set(key, required_text(argv[1], "pp_config", "value"));
    result_text(ctx, connection.settings().display(key));
  });
}

// JSON array of the warnings of the latest statement that read from the extension's tables.
void pp_last_warnings(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_last_warnings", [&] {
    nlohmann::json warnings = connection_from(sqlite3_user_data(ctx)).warnings();
    result_text(ctx, warnings.dump());
  });
}

// JSON {"requests": N, "bytes": M}: HTTP requests this connection has sent (retries included)
// and response bytes received, so a user can see what a query cost.
void pp_http_stats(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_http_stats", [&] {
    HttpClient& http = connection_from(sqlite3_user_data(ctx)).http();
    nlohmann::json stats = {{"requests", http.requests_sent()}, {"bytes", http.bytes_received()}};
    result_text(ctx, stats.dump());
  });
}

}  // namespace

int register_core_functions(const Registration& r) {
  int rc = sqlite3_create_function_v2(r.db, "pp_version", 0, kPureFunction, nullptr, pp_version,
                                      nullptr, nullptr, nullptr);
  // pp_config and pp_last_warnings read per-connection state: neither deterministic nor
  // innocuous, and pp_config can redirect requests, so it is DIRECTONLY too.
  if (rc == SQLITE_OK) rc = create_connection_function(r, "pp_config", 1, kIoFunction, pp_config);
  if (rc == SQLITE_OK) rc = create_connection_function(r, "pp_config", 2, kIoFunction, pp_config);
  if (rc == SQLITE_OK)
    rc = create_connection_function(r, "pp_last_warnings", 0, SQLITE_UTF8, pp_last_warnings);
  if (rc == SQLITE_OK)
    rc = create_connection_function(r, "pp_http_stats", 0, SQLITE_UTF8, pp_http_stats);
  return rc;
}

}  // namespace pp
