// The attribution area's SQL objects: refreshing the attribution tables, installing them and
// their views, and the interval join the fold uses.
#include "attribution/attribution_tables.hpp"
#include "core/registration.hpp"

namespace pp {

SqlObjects attribution_objects() {
  // pp_install_views writes the schema: DIRECTONLY, and marked deterministic (it is idempotent)
  // because SQLite enforces DIRECTONLY in a CHECK constraint only for such functions.
  return {{scalar("pp_install_views", 0, kIoFunction | SQLITE_DETERMINISTIC, pp_install_views_function)},
          {{"pp_refresh", &kRefreshModule},
           {"pp_event_store", &kEventStoreModule},
           {"pp_overlaps", &kOverlapsModule},
           {"pp_overlap_means", &kOverlapMeansModule},
           {"pp_fractions", &kFractionsModule},
           {"pp_estimates", &kEstimatesModule},
           {"pp_estimator_states", &kEstimatorStatesModule},
           {"pp_gpu_samples", &kGpuSamplesModule}}};
}

}  // namespace pp
