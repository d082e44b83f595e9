// The Prometheus area's SQL objects, one file each, registered by prometheus_objects.cpp.
#pragma once
#include "core/sqlite_api.hpp"

namespace pp {

extern const sqlite3_module kPromRangeModule;        // prom_range.cpp
extern const sqlite3_module kPromSamplesModule;      // prom_samples.cpp
extern const sqlite3_module kPromSeriesModule;       // prom_series.cpp
extern const sqlite3_module kPromLabelValuesModule;  // prom_label_values.cpp

void regexp_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);      // regex_functions.cpp
void prom_match_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);  // regex_functions.cpp

}  // namespace pp
