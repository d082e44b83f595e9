#include "prometheus/metric_pushdown.hpp"

#include "prometheus/promql.hpp"

namespace pp {

void plan_metric_pushdown(sqlite3_index_info* info, int metric_column) {
  int next_argv = 1;
  for (int i = 0; i < info->nConstraint; ++i)
    if (info->aConstraintUsage[i].argvIndex >= next_argv) next_argv = info->aConstraintUsage[i].argvIndex + 1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn != metric_column) continue;
    int bit = 0;
    if (c.op == SQLITE_INDEX_CONSTRAINT_EQ) bit = kMetricEqualsBit;
    if (c.op == SQLITE_INDEX_CONSTRAINT_REGEXP) bit = kMetricRegexpBit;
    if (!bit || (info->idxNum & bit)) continue;
    info->idxNum |= bit;
    info->aConstraintUsage[i].argvIndex = next_argv++;
  }
  if (info->idxNum & (kMetricEqualsBit | kMetricRegexpBit)) info->estimatedRows /= 10;
}

std::optional<std::string> apply_metric_pushdown(const std::string& selector, int idx_num, int argc,
                                                 sqlite3_value** argv) {
  int next = __builtin_popcount(static_cast<unsigned>(idx_num & 0xff));
  std::string result = selector;
  auto apply = [&](int bit, const char* op, bool regexp) -> bool {
    if (!(idx_num & bit) || next >= argc) return true;
    sqlite3_value* value = argv[next++];
    if (sqlite3_value_type(value) == SQLITE_NULL) return false;  // metric = NULL matches nothing
    std::string text(reinterpret_cast<const char*>(sqlite3_value_text(value)));
    if (regexp) text = ".*(?:" + text + ").*";
    bool empty = false;
    if (auto pushed = add_metric_matcher(result, op, text, empty)) {
      if (empty) return false;
      result = *pushed;
    }
    return true;
  };
  if (!apply(kMetricEqualsBit, "=", false)) return std::nullopt;
  if (!apply(kMetricRegexpBit, "=~", true)) return std::nullopt;
  return result;
}

}  // namespace pp
