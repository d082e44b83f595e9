#include "attribution/window_lengths.hpp"

#include <optional>

#include "core/number_text.hpp"
#include "core/stored_numbers.hpp"

namespace pp {
namespace {

constexpr const char* kWanted = "a window length of more than 0 ms and at most 86400000, a day";

// The column's length in ms, or the error naming its row (row: how the error names it).
double checked_length_ms(const Statement& read, int column, const std::string& table, const std::string& row_name,
                         const char* wanted) {
  StoredRow row(read, table);
  row.name_row("", row_name);
  const std::optional<double> value = stored_double(read, column);
  if (!value || !(*value > 0 && *value <= kMostWindowMs))
    throw row.refused(column, value ? number_text(*value) : row.shown(column), wanted);
  return *value;
}

}  // namespace

double checked_interval_ms(const Statement& read, int column, const std::string& uuid, const std::string& metric) {
  return checked_length_ms(read, column, "pp_intervals", "of GPU " + uuid + " for metric " + metric,
                           "a window length of more than 0 ms and at most 86400000, a day; pp_metrics' window_ms, "
                           "where set, is copied there");
}

void check_window_lengths(sqlite3* db) {
  // (Only rows that may be refused are read: those SQLite does not hold as a number in range.)
  Statement intervals(db, "SELECT uuid, metric, interval_ms FROM main.pp_intervals "
                          "WHERE NOT (typeof(interval_ms) IN ('real', 'integer') AND interval_ms > 0 AND interval_ms <= :most) "
                          "ORDER BY uuid, metric");
  intervals.bind(":most", kMostWindowMs);
  while (intervals.step()) checked_interval_ms(intervals, 2, intervals.column_text(0), intervals.column_text(1));
  Statement declared(db, "SELECT metric, window_ms FROM main.pp_metrics WHERE window_ms IS NOT NULL "
                         "AND NOT (typeof(window_ms) IN ('real', 'integer') AND window_ms > 0 AND window_ms <= :most) "
                         "ORDER BY metric");
  declared.bind(":most", kMostWindowMs);
  while (declared.step()) checked_length_ms(declared, 1, "pp_metrics", "of metric " + declared.column_text(0), kWanted);
}

}  // namespace pp
