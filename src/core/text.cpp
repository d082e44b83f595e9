#include "core/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

namespace pp {

namespace {

// The whole text, trimmed, as one number of type T (std::from_chars' syntax, with a leading '+'
// taken too); false when anything is left over.
template <typename T>
bool parse_whole(std::string_view text, T& out) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);  // from_chars takes no '+'
    if (!text.empty() && text.front() == '-') return false;  // nor should we take "+-5"
  }
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool parse_int64(std::string_view text, int64_t& out) { return parse_whole(text, out); }

bool parse_double(std::string_view text, double& out) { return parse_whole(text, out); }

bool out_of_double_range(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double ignored = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ignored);
  return ec == std::errc::result_out_of_range && end == text.data() + text.size();
}

std::string valid_utf8(std::string_view text, size_t max_bytes) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const int n = utf8_length(p, end);
    const size_t width = n > 0 ? static_cast<size_t>(n) : 3;  // U+FFFD is 3 bytes
    if (out.size() + width > max_bytes) return out + "...";
    if (n > 0)
      out.append(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    else
      out += "\xEF\xBF\xBD";
    p += n > 0 ? n : 1;
  }
  return out;
}

std::string error_message_text(std::string_view text) {
  std::string out = valid_utf8(text);
  if (out.size() > kMaxErrorBytes)
    out = valid_utf8(text, kMaxErrorBytes) + " (" + std::to_string(text.size()) + " bytes in all)";
  std::string shown;
  shown.reserve(out.size());
  for (const char c : out) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7f)
      shown += "\xEF\xBF\xBD";
    else
      shown += c;
  }
  return shown;
}

std::string to_lower(std::string_view text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

void hide_secrets(std::string& text, const std::vector<std::string>& secrets) {
  std::vector<const std::string*> longest_first;
  for (const std::string& secret : secrets)
    if (secret.size() >= 3) longest_first.push_back(&secret);
  std::sort(longest_first.begin(), longest_first.end(),
            [](const std::string* a, const std::string* b) { return a->size() > b->size(); });
  for (const std::string* secret : longest_first)
    for (size_t at = text.find(*secret); at != std::string::npos; at = text.find(*secret, at + 3))
      text.replace(at, secret->size(), "***");
  // A copy cut short (a body that ends inside one, a quote of its first bytes): from its first
  // kCutCopy characters on, as far as it matches.
  constexpr size_t kCutCopy = 6;
  for (const std::string* secret : longest_first) {
    if (secret->size() <= kCutCopy) continue;
    const std::string_view start(secret->data(), kCutCopy);
    for (size_t at = text.find(start); at != std::string::npos; at = text.find(start, at + 3)) {
      size_t length = kCutCopy;
      while (at + length < text.size() && length < secret->size() && text[at + length] == (*secret)[length]) ++length;
      text.replace(at, length, "***");
    }
  }
}

std::string utc_text(double seconds) {
  const auto t = static_cast<time_t>(std::floor(seconds));
  struct tm parts {};
  char text[32];
  if (!gmtime_r(&t, &parts) || !std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts)) return std::to_string(seconds);
  return text;
}

}  // namespace pp
