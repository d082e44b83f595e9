// Registration of the Prometheus table-valued functions (one module per file in vtab/).
#include "ext/registry.hpp"

namespace pp {

int register_prometheus_tables(const Registration&) { return SQLITE_OK; }

}  // namespace pp
