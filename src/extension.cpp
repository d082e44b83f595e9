// Entry point of the loadable extension: `.load build/precisionprobe` in the sqlite3 shell,
// conn.load_extension("build/precisionprobe") in Python.
//
// The extension is five areas, one folder each under src/; kAreas is the whole surface, and
// each area's <area>_objects.cpp lists its SQL functions and tables. docs/architecture.md shows
// how they fit together.
#include "core/errors.hpp"
#include "core/registration.hpp"

SQLITE_EXTENSION_INIT1

namespace {

struct Area {
  const char* name;
  pp::SqlObjects (*objects)();
};

constexpr Area kAreas[] = {
    {"core", pp::core_objects},                // pp_version, pp_config, pp_settings, pp_last_warnings, pp_http_stats
    {"prometheus", pp::prometheus_objects},    // prom_range, prom_samples, prom_series, prom_label_values, regexp, prom_match
    {"events", pp::events_objects},            // layer_events, layer_jobs
    {"stats", pp::stats_objects},              // pp_mean*, pp_similar, pp_novel, pp_deconvolve
    {"attribution", pp::attribution_objects},  // pp_refresh, pp_install_views, pp_overlaps, pp_overlap_means,
                                               // pp_fractions, pp_estimates, pp_estimator_states, pp_gpu_samples,
                                               // pp_event_store
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int sqlite3_precisionprobe_init(
    sqlite3* db, char** error_message, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  // IN lists are handed to the tables whole (sqlite3_vtab_in, SQLite 3.38): an older SQLite's
  // routine table lacks those entries.
  if (sqlite3_libversion_number() < 3038000) {
    *error_message = sqlite3_mprintf("precisionprobe: needs SQLite 3.38.0 or later; this is %s", sqlite3_libversion());
    return SQLITE_ERROR;
  }
  const char* area_name = "";
  try {
    const pp::Registration registration{db, pp::connection_of(db)};
    for (const Area& area : kAreas) {
      area_name = area.name;
      pp::register_objects(registration, area.objects());
    }
  } catch (const std::exception& e) {
    *error_message = sqlite3_mprintf("precisionprobe: %s area: %s", area_name, e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}
