// Registration of the Prometheus table-valued functions, one module per file in vtab/.
#include "core/registry.hpp"

namespace pp {

int register_prom_range(const Registration& r);         // src/prometheus/prom_range.cpp
int register_prom_samples(const Registration& r);       // src/prometheus/prom_samples.cpp
int register_prom_series(const Registration& r);        // src/prometheus/prom_series.cpp
int register_prom_label_values(const Registration& r);  // src/prometheus/prom_label_values.cpp

int register_prometheus_tables(const Registration& r) {
  for (auto register_table : {register_prom_range, register_prom_samples, register_prom_series,
                              register_prom_label_values}) {
    const int rc = register_table(r);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

}  // namespace pp
