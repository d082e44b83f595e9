#include "prometheus/time_parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "core/errors.hpp"
#include "core/number_text.hpp"
#include "core/sql_values.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

// Whether seconds are a whole number of ms, up to the product's rounding (1.001 s is).
bool is_whole_ms(double seconds) {
  const double ms = seconds * 1000.0;
  return std::fabs(ms - std::round(ms)) <= 4 * std::numeric_limits<double>::epsilon() * std::fabs(ms);
}

// The times and durations Prometheus' engine can hold: it counts them in nanoseconds in 64 bits
// (from 1677-09-21 to 2262-04-11), and wraps past that, answering about another time.
constexpr int64_t kMostSeconds = 9'223'372'036;
constexpr int64_t kMaxDurationMs = kMostSeconds * 1000;

// The reason a time outside that range is refused; a number of seconds that reads as a time in
// ms gets a hint (the usual mistake: Prometheus and SQL take seconds).
std::string time_range_reason(double seconds = std::numeric_limits<double>::quiet_NaN()) {
  std::string reason = "Prometheus holds unix seconds between -" + std::to_string(kMostSeconds) + " and " +
                       std::to_string(kMostSeconds) + ", the years 1677 to 2262, in 64-bit nanoseconds";
  // (From 1e11, a time in ms is one from 1973 on; the seconds just past the range are not one.)
  if (std::isfinite(seconds) && std::fabs(seconds) >= 1e11 && std::fabs(seconds / 1000) <= static_cast<double>(kMostSeconds))
    reason += "; in milliseconds? divide by 1000";
  return reason;
}

// Seconds (finite, within that range) -> ms, rounding to the nearest millisecond.
bool seconds_to_ms(double seconds, int64_t& out, MsRounding rounding = MsRounding::kNearest) {
  if (!std::isfinite(seconds) || std::fabs(seconds) > static_cast<double>(kMostSeconds)) return false;
  const double ms = seconds * 1000.0;
  // (A whole ms that the product misses by a rounding error is that ms: 1.001 s is 1001 ms.)
  const double nearest = std::round(ms);
  const bool whole = is_whole_ms(seconds);
  out = static_cast<int64_t>(rounding == MsRounding::kNearest || whole ? nearest
                             : rounding == MsRounding::kUp           ? std::ceil(ms)
                                                                     : std::floor(ms));
  return true;
}

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

bool leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap_year(year) ? 29 : days[month - 1];
}

Error too_long(const char* argument, const std::string& shown) {
  return argument_error(argument, "must be at most " + std::to_string(kMostSeconds) +
                                      " seconds (about 292 years, the most Prometheus can hold), got '" + shown + "'");
}

}  // namespace

bool parse_rfc3339_ms(std::string_view s, int64_t& out_ms, MsRounding rounding) {
  s = trim(s);
  int year, month, day, hour, minute, second;
  if (!digits(s, 0, 4, year) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, month) ||
      s[7] != '-' || !digits(s, 8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second))
    return false;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 || minute > 59 ||
      second > 59)
    return false;
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int scale = 100;
    size_t first = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (scale == 0 && s[pos] != '0' && rounding == MsRounding::kUp) {
        scale = -1;  // (a fraction of a ms past the digits kept: up once, then dropped)
        ++millis;
      }
      if (scale > 0) millis += (s[pos] - '0') * scale;  // digits past the millisecond are dropped
      if (scale > 0) scale /= 10;
      ++pos;
    }
    if (pos == first) return false;
  }
  int64_t offset_minutes = 0;
  if (pos == s.size()) {
    if (s[10] != ' ') return false;  // RFC3339 needs a zone; SQLite's "YYYY-MM-DD HH:MM:SS" is UTC
  } else if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(s, pos + 4, 2, om) || oh > 23 || om > 59)
      return false;
    offset_minutes = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
    pos += 6;
  } else {
    return false;
  }
  if (pos != s.size()) return false;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t seconds = timegm(&tm);
  out_ms = (static_cast<int64_t>(seconds) - offset_minutes * 60) * 1000 + millis;
  return true;
}

bool parse_relative_time_ms(std::string_view text, int64_t now_ms, int64_t& out_ms) {
  std::string_view rest = text;
  if (rest.size() >= 3 && (rest[0] == 'n' || rest[0] == 'N') && (rest[1] == 'o' || rest[1] == 'O') &&
      (rest[2] == 'w' || rest[2] == 'W')) {
    rest.remove_prefix(3);
    if (rest.empty()) {
      out_ms = now_ms;
      return true;
    }
  }
  if (rest.size() < 2 || (rest[0] != '-' && rest[0] != '+')) return false;
  int64_t offset = 0;
  if (!parse_prometheus_duration_ms(rest.substr(1), offset)) return false;
  // Past the range either way (as for numbers), a time is refused by its caller: the offset
  // is capped first, so that now plus it cannot overflow.
  offset = std::min(offset, 2 * kMaxDurationMs);
  out_ms = rest[0] == '-' ? now_ms - offset : now_ms + offset;
  return true;
}

int64_t parse_time_ms(sqlite3_value* value, const char* argument, int64_t now_ms, MsRounding rounding) {
  int64_t ms = 0;
  switch (sqlite3_value_type(value)) {
    case SQLITE_NULL:
      throw argument_error(argument, "is NULL");
    case SQLITE_BLOB:
      throw argument_error(argument, "is a BLOB; it needs unix seconds, RFC3339 text or a time relative to now");
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      if (!seconds_to_ms(sqlite3_value_double(value), ms, rounding))
        throw argument_error(argument, "is not a usable unix time: " + number_text(sqlite3_value_double(value)) +
                                           " (" + time_range_reason(sqlite3_value_double(value)) + ")");
      return ms;
    default: {
      const std::string text = required_text(value, argument);
      double seconds = 0;
      if (parse_double(text, seconds)) {
        if (seconds_to_ms(seconds, ms, rounding)) return ms;
        throw argument_error(argument,
                             "is not a usable unix time: '" + text + "' (" + time_range_reason(seconds) + ")");
      }
      const bool dated = parse_rfc3339_ms(text, ms, rounding == MsRounding::kUp ? MsRounding::kUp : MsRounding::kDown);
      if (dated || parse_relative_time_ms(text, now_ms, ms)) {
        if (ms < -kMaxDurationMs || ms > kMaxDurationMs)
          throw argument_error(argument, "is not a usable unix time: '" + text + "' (" + time_range_reason() + ")");
        return ms;
      }
      throw argument_error(argument,
                           "is not a time: '" + text +
                               "' (use unix seconds, RFC3339 such as 2024-05-01T12:00:00Z, or a time relative "
                               "to now such as 'now', '-1h' or 'now-15m')");
    }
  }
}

TimeRange parse_time_range(sqlite3_value* start, sqlite3_value* end, int64_t now_ms, bool into_range) {
  TimeRange range{parse_time_ms(start, "start", now_ms), parse_time_ms(end, "end", now_ms)};
  if (into_range && range.end_ms >= range.start_ms) {
    range = {parse_time_ms(start, "start", now_ms, MsRounding::kUp),
             parse_time_ms(end, "end", now_ms, MsRounding::kDown)};
    if (range.end_ms < range.start_ms) range.empty = true;  // no whole ms between them
    return range;
  }
  if (range.end_ms < range.start_ms)
    throw Error("argument 'end' (" + format_seconds(range.end_ms) +
                ") is before 'start' (" + format_seconds(range.start_ms) + ")");
  return range;
}

bool parse_prometheus_duration_ms(std::string_view text, int64_t& out_ms) {
  text = trim(text);
  if (text.empty()) return false;
  struct Unit { const char* name; int64_t ms; };
  // Longest names first so "ms" is not read as "m" followed by "s".
  static const Unit units[] = {{"ms", 1},         {"s", 1000},          {"m", 60000},
                               {"h", 3600000},    {"d", 86400000},      {"w", 604800000},
                               {"y", 31536000000}};
  int64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    int64_t n = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      const int digit = text[pos] - '0';
      if (n > (INT64_MAX - digit) / 10) return false;  // out of range, as in Prometheus
      n = n * 10 + digit;
      ++pos;
    }
    if (pos == start) return false;
    const Unit* unit = nullptr;
    for (const Unit& u : units) {
      const std::string_view name(u.name);
      if (text.substr(pos, name.size()) == name) {
        unit = &u;
        pos += name.size();
        break;
      }
    }
    if (!unit || n > (INT64_MAX - total) / unit->ms) return false;
    total += n * unit->ms;
  }
  out_ms = total;
  return true;
}

int64_t parse_duration_ms(sqlite3_value* value, const char* argument) {
  int64_t ms = 0;
  bool ok = false, in_seconds = false;
  double in_seconds_value = 0;
  std::string shown;
  switch (sqlite3_value_type(value)) {
    case SQLITE_NULL:
      throw argument_error(argument, "is NULL");
    case SQLITE_BLOB:
      throw argument_error(argument, "is a BLOB; it needs seconds or a duration such as '15s'");
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: {
      const double seconds = sqlite3_value_double(value);
      shown = number_text(seconds);
      // Too long is said as such, not as "not a duration".
      if (std::isfinite(seconds) && seconds > static_cast<double>(kMostSeconds)) throw too_long(argument, shown);
      ok = in_seconds = seconds_to_ms(seconds, ms);
      in_seconds_value = seconds;
      break;
    }
    default: {
      shown = required_text(value, argument);
      double seconds = 0;
      in_seconds = parse_double(shown, seconds) && seconds_to_ms(seconds, ms);
      in_seconds_value = seconds;
      ok = in_seconds || parse_prometheus_duration_ms(shown, ms);
    }
  }
  if (!ok)
    throw argument_error(argument,
                         "is not a duration: '" + shown + "' (use seconds or e.g. '15s', '1m30s')");
  // Prometheus evaluates a range at whole ms: 1.5 ms would be a step of 1 there, 2 here.
  if (in_seconds && !is_whole_ms(in_seconds_value))
    throw argument_error(argument, "must be a whole number of milliseconds, got '" + shown + "'");
  if (ms <= 0) throw argument_error(argument, "must be at least 1ms, got '" + shown + "'");
  if (ms > kMaxDurationMs) throw too_long(argument, shown);
  return ms;
}

std::string format_seconds(int64_t ms) {
  char buffer[40];
  const int64_t whole = ms / 1000, frac = ms % 1000;
  if (frac == 0) {
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(whole));
  } else if (ms < 0) {
    std::snprintf(buffer, sizeof buffer, "-%lld.%03lld", static_cast<long long>(-ms / 1000),
                  static_cast<long long>(-ms % 1000));
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld.%03lld", static_cast<long long>(whole),
                  static_cast<long long>(frac));
  }
  return buffer;
}

std::string format_promql_duration(int64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace pp
