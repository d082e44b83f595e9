// Times and durations as users write them in SQL and as the Prometheus API takes them.
// Everything is integer milliseconds inside, the precision Prometheus stores.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/sqlite_api.hpp"

namespace pp {

// A time argument: unix seconds (INTEGER, REAL or numeric text, fractions kept to the ms),
// RFC3339 text ("2023-11-14T22:13:20.5Z", "...+02:00"), SQLite's own UTC datetime text
// ("2023-11-14 22:13:20"), or a time relative to now_ms as Grafana and PromQL users type it:
// "now", "now-1h", "now+5m", "-15m" (any Prometheus duration). Throws pp::Error naming the
// argument otherwise. The table functions take now_ms from Connection::statement_now_ms.
// Numbers with a fraction of a millisecond round to the nearest ms, or (range ends) into the range.
enum class MsRounding { kNearest, kUp, kDown };
int64_t parse_time_ms(sqlite3_value* value, const char* argument, int64_t now_ms,
                      MsRounding rounding = MsRounding::kNearest);
bool parse_rfc3339_ms(std::string_view text, int64_t& out_ms, MsRounding rounding = MsRounding::kDown);
// "now", "now-1h", "now+5m", "-15m", "+1h" relative to now_ms (case-insensitive "now").
bool parse_relative_time_ms(std::string_view text, int64_t now_ms, int64_t& out_ms);

// start and end arguments together: both parsed, end not before start (error names both).
// into_range (raw samples, both ends inclusive): a fraction of a millisecond rounds start up and
// end down, so that no sample outside [start, end] is asked for; a range that holds no whole
// millisecond is `empty`. Otherwise each rounds to the nearest ms (evaluation times).
struct TimeRange {
  int64_t start_ms;
  int64_t end_ms;
  bool empty = false;
};
TimeRange parse_time_range(sqlite3_value* start, sqlite3_value* end, int64_t now_ms, bool into_range = false);

// A step or range: seconds (number or numeric text) or a Prometheus duration ("15s", "1m30s",
// "250ms", "1h", "2d", "1w", "1y"). Throws pp::Error unless the result is > 0.
int64_t parse_duration_ms(sqlite3_value* value, const char* argument);
bool parse_prometheus_duration_ms(std::string_view text, int64_t& out_ms);

// 1700000000123 -> "1700000000.123"; whole seconds print without a fraction.
std::string format_seconds(int64_t ms);
// A duration for PromQL range selectors: "3600000ms" style, exact to the millisecond.
std::string format_promql_duration(int64_t ms);

}  // namespace pp
