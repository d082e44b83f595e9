// The events area's SQL objects, registered by events_objects.cpp.
#pragma once
#include "core/sqlite_api.hpp"

namespace pp {

extern const sqlite3_module kLayerEventsModule;  // layer_events.cpp
extern const sqlite3_module kLayerJobsModule;    // layer_jobs.cpp

}  // namespace pp
