// Times and durations as users write them in SQL: parse_rfc3339_ms and
// parse_prometheus_duration_ms on any text, plus round trips built from the input's bytes.
//
// Checked: accepted times lie within years 0000-9999 (give or take the zone offset and a
// normalized day); accepted durations equal their exact sum (computed in 128 bits, so an
// overflow cannot hide) and read back from format_promql_duration; any instant in 0000-9999
// written as RFC3339 with any offset and fraction reads back as the same millisecond.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>

#include "prometheus/time_parse.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

constexpr int64_t kMinMs = -62167219200000;  // 0000-01-01T00:00:00Z
constexpr int64_t kMaxMs = 253402300799999;  // 9999-12-31T23:59:59.999Z
constexpr int64_t kDayMs = 86400000;

// The duration grammar on its own: (digits unit)+, units ms s m h d w y, surrounding whitespace.
// Returns false when the text is not a duration; `exact` is the sum in 128 bits.
bool reference_duration(std::string_view s, __int128& exact) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  if (s.empty()) return false;
  exact = 0;
  size_t i = 0;
  while (i < s.size()) {
    __int128 n = 0;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      n = n * 10 + (s[i] - '0');
      if (n > (__int128{1} << 64)) n = __int128{1} << 64;  // large enough to be refused
      ++i;
    }
    if (i == start) return false;
    int64_t unit = 0;
    if (s.substr(i, 2) == "ms") unit = 1, i += 2;
    else if (i < s.size() && s[i] == 's') unit = 1000, ++i;
    else if (i < s.size() && s[i] == 'm') unit = 60000, ++i;
    else if (i < s.size() && s[i] == 'h') unit = 3600000, ++i;
    else if (i < s.size() && s[i] == 'd') unit = 86400000, ++i;
    else if (i < s.size() && s[i] == 'w') unit = 604800000, ++i;
    else if (i < s.size() && s[i] == 'y') unit = 31536000000, ++i;
    else return false;
    exact += n * unit;
    if (exact > (__int128{1} << 100)) exact = __int128{1} << 100;
  }
  return true;
}

uint64_t take(const uint8_t*& data, size_t& size, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes && size > 0; ++i, ++data, --size) v = (v << 8) | *data;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string shown = pp_fuzz::printable(text);

  int64_t ms = 0;
  if (pp::parse_rfc3339_ms(text, ms))
    PP_FUZZ_CHECK(ms >= kMinMs - 2 * kDayMs && ms <= kMaxMs + 2 * kDayMs,
                  "'%s' reads as %lld ms, outside years 0000-9999", shown.c_str(),
                  static_cast<long long>(ms));

  __int128 exact = 0;
  const bool reference_ok = reference_duration(text, exact);
  const bool ok = pp::parse_prometheus_duration_ms(text, ms);
  if (ok) {
    PP_FUZZ_CHECK(reference_ok && exact == ms, "'%s' reads as %lld ms, not its exact sum",
                  shown.c_str(), static_cast<long long>(ms));
    const std::string again = pp::format_promql_duration(ms);
    int64_t back = -1;
    PP_FUZZ_CHECK(pp::parse_prometheus_duration_ms(again, back) && back == ms,
                  "format_promql_duration(%lld) = '%s' does not read back",
                  static_cast<long long>(ms), again.c_str());
  } else {
    // Refusing a duration too long for int64 milliseconds is right (Prometheus: "out of range");
    // refusing any other duration is not.
    PP_FUZZ_CHECK(!reference_ok || exact > INT64_MAX,
                  "'%s' is a duration of %lld ms but was refused", shown.c_str(),
                  static_cast<long long>(exact));
  }

  // Round trip: an instant and an offset from the input's first bytes.
  const uint8_t* p = data;
  size_t left = size;
  const uint64_t raw = take(p, left, 8);
  const int64_t span = kMaxMs - kMinMs - 2 * kDayMs;
  const int64_t instant = kMinMs + kDayMs + static_cast<int64_t>(raw % static_cast<uint64_t>(span));
  const int offset_minutes = static_cast<int>(take(p, left, 2) % (2 * 24 * 60 - 1)) - (24 * 60 - 1);
  const int fraction_digits = static_cast<int>(take(p, left, 1) % 10);  // 0: none
  const int64_t local_ms = instant + int64_t{offset_minutes} * 60000;
  int64_t local_s = local_ms / 1000, local_frac = local_ms % 1000;
  if (local_frac < 0) local_frac += 1000, local_s -= 1;
  const time_t t = static_cast<time_t>(local_s);
  std::tm tm{};
  PP_FUZZ_CHECK(gmtime_r(&t, &tm) != nullptr, "gmtime_r(%lld)", static_cast<long long>(local_s));
  char when[80];
  std::snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string written = when;
  int64_t expected = instant;
  if (fraction_digits > 0) {
    char frac[16];
    std::snprintf(frac, sizeof frac, "%03lld", static_cast<long long>(local_frac));
    std::string digits = frac;
    digits.resize(static_cast<size_t>(fraction_digits), '7');  // digits past the ms are dropped
    written += "." + digits;
    if (fraction_digits < 3) {
      const int64_t kept = std::stoll(digits) * (fraction_digits == 1 ? 100 : 10);
      expected = instant - local_frac + kept;
    }
  } else {
    expected = instant - local_frac;
  }
  if (offset_minutes == 0 && (raw & 1)) {
    written += "Z";
  } else {
    const int a = offset_minutes < 0 ? -offset_minutes : offset_minutes;
    char zone[16];
    std::snprintf(zone, sizeof zone, "%c%02d:%02d", offset_minutes < 0 ? '-' : '+', a / 60, a % 60);
    written += zone;
  }
  int64_t back = 0;
  PP_FUZZ_CHECK(pp::parse_rfc3339_ms(written, back) && back == expected,
                "'%s' reads as %lld, expected %lld", written.c_str(), static_cast<long long>(back),
                static_cast<long long>(expected));
  return 0;
}
