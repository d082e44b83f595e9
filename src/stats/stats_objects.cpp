// The stats area's SQL functions: the paper's storage rules (mergeable means, similarity dedup)
// and the estimator.
#include "core/registration.hpp"
#include "stats/stats_functions.hpp"

namespace pp {

SqlObjects stats_objects() {
  SqlObjects objects;
  objects.functions = mean_functions();
  for (SqlFunction& f : similarity_functions()) objects.functions.push_back(f);
  for (int arguments : {4, 6})
    objects.functions.push_back(
        aggregate("pp_deconvolve", arguments, kPureFunction, pp_deconvolve_step, pp_deconvolve_final));
  return objects;
}

}  // namespace pp
