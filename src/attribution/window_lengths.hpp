// The window lengths a user may write by hand (pp_intervals.interval_ms, pp_metrics.window_ms;
// the tables' CHECKs ask only for more than 0), refused before anything reads them when they are
// no length a sample can average over: an infinite or out-of-range length made windows in ns
// by rounding or casts whose result is undefined.
#pragma once
#include <string>

#include "core/sqlite_api.hpp"
#include "core/statement.hpp"

namespace pp {

// The longest window accepted, in ms: a day, far above any DCGM collection interval (the
// setting sample_interval_ms takes at most an hour).
constexpr double kMostWindowMs = 86400000;

// Column `column` of read, pp_intervals.interval_ms of GPU uuid's series metric, checked.
double checked_interval_ms(const Statement& read, int column, const std::string& uuid, const std::string& metric);

// Every row of pp_intervals and every window_ms of pp_metrics checked (pp_refresh, before its
// steps read them).
void check_window_lengths(sqlite3* db);

}  // namespace pp
