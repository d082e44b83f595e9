// Sample values as the Prometheus API writes them ("0.5", "1e-07", "NaN", "+Inf", "-Inf"):
// parse_sample_value on any text.
//
// Checked: NULL exactly for NaN; infinities only from the three spellings Prometheus uses;
// finite values only from text that is a decimal number (surrounding whitespace allowed), each
// read back from its shortest spelling; and agreement with strtod in the C locale for plain
// decimal text whose value is a normal double or zero.
#include <cerrno>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "prometheus/response_parser.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// [+-]?digits[.digits]([eE][+-]?digits)? with at least one digit before or after the point.
bool plain_decimal(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exponent = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exponent;
    if (exponent == 0) return false;
  }
  return i == s.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  double value = 0;
  bool is_null = false;
  const bool ok = pp::parse_sample_value(text, value, is_null);
  const std::string shown = pp_fuzz::printable(text);
  if (ok) {
    PP_FUZZ_CHECK(is_null == std::isnan(value), "is_null %d for %g from '%s'", is_null, value,
                  shown.c_str());
    if (std::isinf(value))
      PP_FUZZ_CHECK(text == "+Inf" || text == "Inf" || text == "-Inf",
                    "infinity from '%s'", shown.c_str());
    if (std::isfinite(value)) {
      PP_FUZZ_CHECK(plain_decimal(trimmed(text)), "'%s' is not a number but reads as %.17g",
                    shown.c_str(), value);
      char buffer[64];
      const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
      PP_FUZZ_CHECK(ec == std::errc(), "to_chars failed");
      double again = 0;
      bool again_null = true;
      const std::string spelled(buffer, end);
      PP_FUZZ_CHECK(pp::parse_sample_value(spelled, again, again_null) && !again_null &&
                        again == value && std::signbit(again) == std::signbit(value),
                    "'%s' (from '%s') does not read back as %.17g", spelled.c_str(),
                    shown.c_str(), value);
    }
  }
  const std::string_view core = trimmed(text);
  if (std::memchr(text.data(), '\0', text.size()) == nullptr && plain_decimal(core)) {
    errno = 0;
    char* end = nullptr;
    const std::string core_text(core);
    const double expected = std::strtod(core_text.c_str(), &end);
    const bool range_error = errno == ERANGE;
    const int cls = std::fpclassify(expected);
    if (!range_error && (cls == FP_NORMAL || cls == FP_ZERO)) {
      PP_FUZZ_CHECK(ok && !is_null && value == expected,
                    "'%s': strtod reads %.17g, parse_sample_value %s %.17g", shown.c_str(),
                    expected, ok ? "reads" : "rejects it", value);
    } else if (range_error && std::isinf(expected)) {
      PP_FUZZ_CHECK(!ok, "'%s' overflows a double but was accepted as %.17g", shown.c_str(), value);
    }
  }
  return 0;
}
