// Push-down of constraints on the `metric` column (the series' __name__) into the series
// selector, where that is exact: `metric = 'X'` becomes __name__="X" and `metric REGEXP 'p'`
// becomes __name__=~".*(?:p).*" (REGEXP searches anywhere; PromQL anchors). SQLite still checks
// each row, so a selector that cannot take the matcher simply goes unchanged.
#pragma once
#include <optional>
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

constexpr int kMetricEqualsBit = 1 << 8;
constexpr int kMetricRegexpBit = 1 << 9;

// Call after plan_arguments: adds usable metric constraints as further xFilter arguments.
void plan_metric_pushdown(sqlite3_index_info* info, int metric_column);

// In xFilter: applies the pushed constraints to selector. nullopt means no series can match.
std::optional<std::string> apply_metric_pushdown(const std::string& selector, int idx_num, int argc,
                                                 sqlite3_value** argv);

}  // namespace pp
