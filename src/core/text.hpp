// Small, locale-independent text helpers shared by the parsers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp {

bool parse_int64(std::string_view text, int64_t& out);
// Parses a decimal or exponent number ("0.5", "1e-07", "-3"), locale-independent, whole text.
bool parse_double(std::string_view text, double& out);
// Whether text is a number whose value a double cannot hold ("1e400", "1e-400").
bool out_of_double_range(std::string_view text);
std::string to_lower(std::string_view text);
std::string_view trim(std::string_view text);

// Length of the valid UTF-8 sequence starting at p (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0. Inline: the event parser calls it per non-ASCII byte.
inline int utf8_length(const unsigned char* p, const unsigned char* end) {
  const unsigned c = p[0];
  auto cont = [&](int i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return p + i < end && p[i] >= lo && p[i] <= hi;
  };
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;
  if (c < 0xE0) return cont(1) ? 2 : 0;
  if (c < 0xF0) {
    const bool first = c == 0xE0 ? cont(1, 0xA0) : c == 0xED ? cont(1, 0x80, 0x9F) : cont(1);
    return first && cont(2) ? 3 : 0;
  }
  if (c < 0xF5) {
    const bool first = c == 0xF0 ? cont(1, 0x90) : c == 0xF4 ? cont(1, 0x80, 0x8F) : cont(1);
    return first && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// Unix seconds as "YYYY-MM-DD HH:MM:SS" (UTC, the second they fall in), for messages.
std::string utc_text(double seconds);

// The text with each byte that is not part of valid UTF-8 replaced by U+FFFD, so that what a
// server sent can go into an error message (SQLite and its callers expect UTF-8) at most
// max_bytes long (cut at a character boundary, "..." appended when cut).
std::string valid_utf8(std::string_view text, size_t max_bytes = std::string::npos);

// An error message as SQLite's callers get it: valid UTF-8, control characters other than
// tab and newline as U+FFFD, and at most kMaxErrorBytes (an argument echoed whole could be
// megabytes), cut with "... (N bytes in all)".
constexpr size_t kMaxErrorBytes = 4000;
std::string error_message_text(std::string_view text);

// Every occurrence of each secret (of 3 bytes or more: shorter ones would mangle any text) in
// text replaced by "***", the longest first so that none is left in part; so is a copy cut
// short, from a secret's first 6 bytes on (a quote that ends inside one).
void hide_secrets(std::string& text, const std::vector<std::string>& secrets);

}  // namespace pp
