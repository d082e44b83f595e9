#include <cmath>
#include <optional>
#include <string>

#include "attribution/event_columns.hpp"
#include "core/errors.hpp"
#include "core/sql_values.hpp"

namespace pp {
namespace {

using namespace event_columns;

// An integer column value with INTEGER affinity applied: text that reads as a number becomes
// one, a REAL with an integer value its integer; anything else is an error naming the column.
std::optional<int64_t> integer_value(sqlite3_value* v, const char* column, bool required) {
  switch (sqlite3_value_numeric_type(v)) {
    case SQLITE_NULL:
      if (required) throw Error(std::string(column) + " may not be NULL");
      return std::nullopt;
    case SQLITE_INTEGER: return sqlite3_value_int64(v);
    case SQLITE_FLOAT: {
      const double d = sqlite3_value_double(v);
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
      break;
    }
    default: break;
  }
  throw Error(std::string(column) + " must be an integer");
}

std::optional<std::string> text_value(sqlite3_value* v, const char* column, bool required) {
  if (sqlite3_value_type(v) == SQLITE_NULL) {
    if (required) throw Error(std::string(column) + " may not be NULL");
    return std::nullopt;
  }
  return std::string(reinterpret_cast<const char*>(sqlite3_value_text(v)), sqlite3_value_bytes(v));
}

}  // namespace

StoredEvent inserted_event(sqlite3_value** col, bool& folded) {
  StoredEvent e;
  e.key.resize(kBlockKeyColumnCount);
  for (int c = 0; c < kColumnCount; ++c) {
    if (c == kBlock) continue;
    if (sqlite3_value_type(col[c]) == SQLITE_BLOB)
      throw Error(std::string(kColumnNames[c]) + " may not be a BLOB");
    if (kKeyOf[c] >= 0) e.key[kKeyOf[c]] = held_value(col[c]);
  }
  if (std::holds_alternative<std::monostate>(e.key[kKeyJobId])) throw Error("job_id may not be NULL");
  if (std::holds_alternative<std::monostate>(e.key[kKeyGpuUuid])) throw Error("gpu_uuid may not be NULL");
  if (std::holds_alternative<std::monostate>(e.key[kKeySourceFile])) throw Error("source_file may not be NULL");
  for (const auto& [c, key] : {std::pair{kJobId, kKeyJobId}, std::pair{kGpuUuid, kKeyGpuUuid}})
    if (const auto* text = std::get_if<std::string>(&e.key[key]); text && text->empty())
      throw Error(std::string(kColumnNames[c]) + " may not be empty");
  e.layer = *text_value(col[kLayer], "layer", true);
  if (e.layer.empty()) throw Error("layer may not be empty");
  e.layer_type = text_value(col[kLayerType], "layer_type", true);
  const int64_t forward = *integer_value(col[kForward], "forward", true);
  if (forward != 0 && forward != 1) throw Error("forward must be 1 (forward) or 0 (backward), got " + std::to_string(forward));
  e.event.forward = forward == 1;
  const auto epoch = integer_value(col[kEpoch], "epoch", false);
  const auto batch = integer_value(col[kBatch], "batch", false);
  e.event.epoch_null = !epoch;
  e.event.epoch = epoch.value_or(0);
  e.event.batch_null = !batch;
  e.event.batch = batch.value_or(0);
  e.event.t_start_ns = *integer_value(col[kStartNs], "t_start_ns", true);
  e.event.t_end_ns = *integer_value(col[kEndNs], "t_end_ns", true);
  e.event.line = *integer_value(col[kLine], "line", true);
  folded = integer_value(col[kFolded], "folded", false).value_or(0) != 0;
  return e;
}

}  // namespace pp
