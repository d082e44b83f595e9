// The core area's SQL objects: version, settings, warnings and HTTP cost.
#include "core/core_functions.hpp"
#include "core/registration.hpp"

namespace pp {

SqlObjects core_objects() {
  // pp_config, pp_last_warnings and pp_http_stats read per-connection state (settings, the
  // servers' warnings with the paths of event files, request counts): DIRECTONLY, so that a
  // database file's schema cannot copy them into the file or into what a user is shown, and
  // pp_config can redirect requests. SQLite enforces DIRECTONLY in CHECK constraints only for
  // functions marked deterministic, so all four are marked so (the value a statement reads is
  // then the one it started with): no schema object of a database file (view, trigger, CHECK,
  // DEFAULT, index, generated column) may call them; only SQL the user runs, and TEMP objects.
  // (Unmarked, a CHECK on a table of the file let a trigger's INSERT OR IGNORE keep the rows
  // whose CHECK compared one character of pp_last_warnings() with a guess: the warnings, spelled
  // out in the file.)
  constexpr int kStateFunction = kIoFunction | SQLITE_DETERMINISTIC;
  return {{scalar("pp_version", 0, kPureFunction, pp_version_function),
           scalar("pp_config", 1, kStateFunction, pp_config_function, /*uses_connection=*/true),
           scalar("pp_config", 2, kStateFunction, pp_config_function, /*uses_connection=*/true),
           scalar("pp_last_warnings", 0, kStateFunction, pp_last_warnings_function, /*uses_connection=*/true),
           scalar("pp_http_stats", 0, kStateFunction, pp_http_stats_function, /*uses_connection=*/true)},
          {{"pp_settings", &kSettingsModule}}};
}

}  // namespace pp
