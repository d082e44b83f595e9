// The Prometheus area's SQL objects: the HTTP API as tables, and PromQL's regex dialect.
#include "core/registration.hpp"
#include "prometheus/prometheus_tables.hpp"

namespace pp {

SqlObjects prometheus_objects() {
  return {{scalar("regexp", 2, kPureFunction, regexp_function),
           scalar("prom_match", 2, kPureFunction, prom_match_function)},
          {{"prom_range", &kPromRangeModule},
           {"prom_samples", &kPromSamplesModule},
           {"prom_series", &kPromSeriesModule},
           {"prom_label_values", &kPromLabelValuesModule}}};
}

}  // namespace pp
