// Entry point of the loadable extension: `.load build/precisionprobe` in the sqlite3 shell,
// conn.load_extension("build/precisionprobe") in Python.
//
// Each area of the extension has one register function; the table below is the whole surface.
#include "core/connection.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"

SQLITE_EXTENSION_INIT1

namespace {

using RegisterFunction = int (*)(const pp::Registration&);

constexpr RegisterFunction kAreas[] = {
    pp::register_core_functions,   // pp_version, pp_config, pp_last_warnings, pp_http_stats
    pp::register_settings_table,   // pp_settings
    pp::register_regex_functions,  // regexp, prom_match
    pp::register_prometheus_tables,  // prom_range, prom_samples, prom_series, prom_label_values
    pp::register_layer_events,       // layer_events
    pp::register_mean_functions,        // pp_mean, pp_mean_merge, pp_mean_value/count/stddev/min/max/json
    pp::register_similarity_functions,  // pp_similar, pp_novel
    pp::register_attribution,           // pp_install_views, pp_refresh
    pp::register_deconvolve_function,   // pp_deconvolve
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int sqlite3_precisionprobe_init(
    sqlite3* db, char** error_message, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  try {
    pp::Registration registration{db, std::make_shared<pp::Connection>(db)};
    for (RegisterFunction register_area : kAreas) {
      const int rc = register_area(registration);
      if (rc != SQLITE_OK) {
        *error_message = sqlite3_mprintf("precisionprobe: registration failed: %s", sqlite3_errmsg(db));
        return rc;
      }
    }
  } catch (const std::exception& e) {
    *error_message = sqlite3_mprintf("precisionprobe: %s", e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}
