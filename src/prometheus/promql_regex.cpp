#include "prometheus/promql_regex.hpp"

#include <re2/re2.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace pp {
namespace {

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

bool is_word(unsigned char c) { return std::isalnum(c) || c == '_'; }

}  // namespace

std::optional<std::string> regex_matching_exactly(const std::vector<std::string>& values) {
  if (values.empty()) return std::nullopt;
  std::string out;
  for (const std::string& value : values) {
    if (!is_valid_utf8(value)) return std::nullopt;
    if (!out.empty()) out += '|';
    for (char ch : value) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x80 || is_word(c)) {
        out += ch;
      } else if (c < 0x20 || c == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
      } else {
        out += '\\';  // Go: an escaped ASCII character that is not a letter or digit is itself
        out += ch;
      }
    }
  }
  return out;
}

bool regex_means_the_same_in_go(const std::string& pattern) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    const auto c = static_cast<unsigned char>(pattern[i]);
    if (c < 0x20 || c > 0x7e || c == '{' || c == '}') return false;
    if (c == '\\') {
      if (++i == pattern.size()) return false;
      const auto e = static_cast<unsigned char>(pattern[i]);
      if (e < 0x20 || e > 0x7e) return false;
      if (std::isalnum(e) && !std::strchr("dDsSwWbBAzaftnrv", e)) return false;
    } else if (c == '(' && i + 1 < pattern.size() && pattern[i + 1] == '?') {
      size_t j = i + 2;
      while (j < pattern.size() && pattern[j] != '\0' && std::strchr("imsU-", pattern[j])) ++j;
      if (j == pattern.size() || (pattern[j] != ':' && pattern[j] != ')')) return false;
      if (pattern[j] == ')' && j == i + 2) return false;  // "(?)"
      i = j;
    }
  }
  RE2::Options options;
  options.set_log_errors(false);
  return RE2(pattern, options).ok();
}

}  // namespace pp
