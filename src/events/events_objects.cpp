// The events area's SQL objects: the hook client's files as tables.
#include "core/registration.hpp"
#include "events/events_tables.hpp"

namespace pp {

SqlObjects events_objects() {
  return {{}, {{"layer_events", &kLayerEventsModule}, {"layer_jobs", &kLayerJobsModule}}};
}

}  // namespace pp
