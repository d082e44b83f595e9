// The attribution area's SQL objects, registered by attribution_objects.cpp.
#pragma once
#include "core/sqlite_api.hpp"

namespace pp {

extern const sqlite3_module kRefreshModule;       // pp_refresh.cpp
extern const sqlite3_module kOverlapsModule;      // overlap_tables.cpp: pp_overlaps
extern const sqlite3_module kOverlapMeansModule;  // overlap_tables.cpp: pp_overlap_means
extern const sqlite3_module kFractionsModule;     // fraction_table.cpp: pp_fractions
extern const sqlite3_module kEstimatesModule;     // estimate_table.cpp: pp_estimates
extern const sqlite3_module kEventStoreModule;      // events_table.cpp: pp_events
extern const sqlite3_module kEstimatorStatesModule;  // estimator_state_table.cpp: pp_estimator_states
extern const sqlite3_module kGpuSamplesModule;       // gpu_samples_table.cpp: pp_gpu_samples
void pp_install_views_function(sqlite3_context* ctx, int argc, sqlite3_value** argv);  // install_views.cpp

}  // namespace pp
