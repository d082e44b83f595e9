// Push-down of constraints on the `metric` column (the series' __name__) into the series
// selector, only where the server's matcher means what SQL's comparison means:
//   metric = 'X'            __name__="X"        (BINARY collation only: not NOCASE and the like)
//   metric IN ('a', 'b')    __name__=~"a|b"     (one request for the whole list, values escaped)
//   metric REGEXP 'p'       __name__=~".*(?:p).*"  (REGEXP searches anywhere; PromQL anchors),
//                           when p reads the same in Go's regexp (promql_regex.hpp)
// SQLite still checks each row (omit = 0), so a selector or value that cannot take the matcher
// exactly simply goes unchanged: the server returns more, and SQLite filters.
#pragma once
#include <optional>
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

constexpr int kMetricEqualsBit = 1 << 8;
constexpr int kMetricRegexpBit = 1 << 9;
constexpr int kMetricInBit = 1 << 10;

// Call after plan_arguments: adds usable metric constraints as further xFilter arguments.
void plan_metric_pushdown(sqlite3_index_info* info, int metric_column);

// In xFilter: applies the pushed constraints to selector. nullopt means no series can match.
std::optional<std::string> apply_metric_pushdown(const std::string& selector, int idx_num, int argc,
                                                 sqlite3_value** argv);

}  // namespace pp
