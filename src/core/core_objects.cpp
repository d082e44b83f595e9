// The core area's SQL objects: version, settings, warnings and HTTP cost.
#include "core/core_functions.hpp"
#include "core/registration.hpp"

namespace pp {

SqlObjects core_objects() {
  // pp_config, pp_last_warnings and pp_http_stats read per-connection state (settings, the
  // servers' warnings, request counts): DIRECTONLY, so that a database file's view cannot copy
  // them into what a user is shown, and pp_config can redirect requests. SQLite enforces
  // DIRECTONLY in CHECK constraints only for functions marked deterministic, so both of
  // pp_config's forms are marked so (the value a statement reads is then the one it started
  // with): no schema object of a database file (view, trigger, CHECK, DEFAULT, index, generated
  // column) may call it; only SQL the user runs, and TEMP objects.
  return {{scalar("pp_version", 0, kPureFunction, pp_version_function),
           scalar("pp_config", 1, kIoFunction | SQLITE_DETERMINISTIC, pp_config_function, /*uses_connection=*/true),
           scalar("pp_config", 2, kIoFunction | SQLITE_DETERMINISTIC, pp_config_function, /*uses_connection=*/true),
           scalar("pp_last_warnings", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, pp_last_warnings_function, /*uses_connection=*/true),
           scalar("pp_http_stats", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, pp_http_stats_function, /*uses_connection=*/true)},
          {{"pp_settings", &kSettingsModule}}};
}

}  // namespace pp
