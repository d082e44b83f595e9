#include "prometheus/metric_pushdown.hpp"

#include <vector>

#include "core/errors.hpp"
#include "core/sql_values.hpp"
#include "prometheus/promql.hpp"
#include "prometheus/promql_regex.hpp"

namespace pp {
namespace {

constexpr int kBits[] = {kMetricEqualsBit, kMetricRegexpBit, kMetricInBit};  // argv order

// The text a TEXT column is compared with: numbers take the column's affinity (1 becomes '1');
// a BLOB never equals TEXT. NULL and BLOB give nullopt (no match), and so does text with a NUL
// byte, which no metric name holds.
std::optional<std::string> compared_text(sqlite3_value* value) {
  const int type = sqlite3_value_type(value);
  if (type == SQLITE_NULL || type == SQLITE_BLOB) return std::nullopt;
  std::string text = compared_bytes(value);
  if (text.find('\0') != std::string::npos) return std::nullopt;
  return text;
}

// The values of `metric IN (...)` that a metric name can equal (no NULL, BLOB or empty text).
std::vector<std::string> in_list_names(sqlite3_value* list) {
  std::vector<std::string> names;
  sqlite3_value* value = nullptr;
  int rc = sqlite3_vtab_in_first(list, &value);
  for (; rc == SQLITE_OK; rc = sqlite3_vtab_in_next(list, &value))
    if (auto text = compared_text(value); text && !text->empty()) names.push_back(std::move(*text));
  if (rc == SQLITE_NOMEM) throw std::bad_alloc();
  if (rc != SQLITE_DONE) throw Error("cannot read the values of metric IN (...) (SQLite error " + std::to_string(rc) + ")");
  return names;
}

}  // namespace

void plan_metric_pushdown(sqlite3_index_info* info, int metric_column) {
  int next_argv = 1;
  for (int i = 0; i < info->nConstraint; ++i)
    if (info->aConstraintUsage[i].argvIndex >= next_argv) next_argv = info->aConstraintUsage[i].argvIndex + 1;
  int chosen[3] = {-1, -1, -1};
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn != metric_column) continue;
    if (c.op == SQLITE_INDEX_CONSTRAINT_EQ) {
      // Under NOCASE (or any collation but BINARY) 'dcgm_x' equals 'DCGM_X'; Prometheus' = does not.
      const char* collation = sqlite3_vtab_collation(info, i);
      if (collation && sqlite3_stricmp(collation, "BINARY") != 0) continue;
      const int k = sqlite3_vtab_in(info, i, -1) ? 2 : 0;
      if (chosen[k] < 0) chosen[k] = i;
    } else if (c.op == SQLITE_INDEX_CONSTRAINT_REGEXP && chosen[1] < 0) {
      chosen[1] = i;
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (chosen[k] < 0) continue;
    info->idxNum |= kBits[k];
    info->aConstraintUsage[chosen[k]].argvIndex = next_argv++;
    if (kBits[k] == kMetricInBit) sqlite3_vtab_in(info, chosen[k], 1);  // the whole list in one xFilter
  }
  if (info->idxNum & (kMetricEqualsBit | kMetricRegexpBit | kMetricInBit)) {
    info->estimatedRows /= 10;
    info->estimatedCost /= 2;  // fewer series to fetch; and one request beats one per IN value
  }
}

std::optional<std::string> apply_metric_pushdown(const std::string& selector, int idx_num, int argc,
                                                 sqlite3_value** argv) {
  int next = __builtin_popcount(static_cast<unsigned>(idx_num & 0xff));
  std::string result = selector;
  // Adds one matcher; false when no series can match.
  auto add = [&](const char* op, const std::string& value) {
    bool empty = false;
    if (auto pushed = add_metric_matcher(result, op, value, empty)) {
      if (empty) return false;
      result = *pushed;
    }
    return true;
  };
  for (int bit : kBits) {
    if (!(idx_num & bit) || next >= argc) continue;
    sqlite3_value* value = argv[next++];
    if (bit == kMetricEqualsBit) {
      const auto text = compared_text(value);
      if (!text || !add("=", *text)) return std::nullopt;
    } else if (bit == kMetricRegexpBit) {
      if (sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;  // REGEXP NULL is never true
      const auto pattern = required_text(value, "metric REGEXP pattern");
      if (regex_means_the_same_in_go(pattern) && !add("=~", ".*(?:" + pattern + ").*")) return std::nullopt;
    } else {
      const std::vector<std::string> names = in_list_names(value);
      if (names.empty()) return std::nullopt;
      if (names.size() == 1) {
        if (!add("=", names[0])) return std::nullopt;
      } else if (const auto regex = regex_matching_exactly(names)) {
        if (!add("=~", *regex)) return std::nullopt;
      }
    }
  }
  return result;
}

}  // namespace pp
