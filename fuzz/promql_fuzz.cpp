// The PromQL the engine writes itself: promql_quote and add_metric_matcher (the push-down of
// `metric = 'x'` and `metric REGEXP 'x'` into a series selector).
//
// Checked: promql_quote gives one double-quoted PromQL string literal that decodes back to the
// value; add_metric_matcher either declines (nullopt) or gives a selector that a PromQL lexer
// reads as the same selector with a __name__ matcher added: one brace block, closed strings of
// every quote kind, no comment hiding text, the new matcher first with the quoted value. A
// selector that names a metric comes back unchanged, and only for "=".
//
// Input: op byte ('=' when even, "=~" when odd), then selector bytes, a 0 byte, value bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "prometheus/promql.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

std::string_view trimmed(std::string_view s) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Decodes a double-quoted literal starting at s[i] (Go's rules, as PromQL's lexer uses, for the
// escapes promql_quote writes; a raw newline ends nothing but is refused). Moves i past it.
bool decode_double_quoted(std::string_view s, size_t& i, std::string& out) {
  if (i >= s.size() || s[i] != '"') return false;
  for (++i; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') return ++i, true;
    if (c == '\n') return false;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == s.size()) return false;
    switch (s[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      default: return false;  // promql_quote writes no other escape
    }
  }
  return false;
}

// PromQL's lexer inside a selector's braces, reduced to what decides structure: strings in
// "..." and '...' (backslash escapes), `...` (raw, no escapes), and # comments to the end of
// the line. True when `block` is one {...} block: no brace outside strings and comments before
// the final '}', and every string closed.
bool one_brace_block(std::string_view block) {
  if (block.size() < 2 || block.front() != '{' || block.back() != '}') return false;
  for (size_t i = 1; i + 1 < block.size(); ++i) {
    const char c = block[i];
    if (c == '"' || c == '\'' || c == '`') {
      size_t j = i + 1;
      for (; j + 1 < block.size(); ++j) {
        if (block[j] == '\\' && c != '`') {
          ++j;
          continue;
        }
        if (block[j] == c) break;
      }
      if (j + 1 >= block.size()) return false;  // runs into the final '}'
      i = j;
    } else if (c == '#') {
      size_t j = i + 1;
      while (j + 1 < block.size() && block[j] != '\n') ++j;
      if (j + 1 >= block.size()) return false;  // the comment swallows the final '}'
      i = j;
    } else if (c == '{' || c == '}') {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string op = data[0] % 2 ? "=~" : "=";
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t split = rest.find('\0');
  const std::string selector(rest.substr(0, split));
  const std::string value(split == std::string_view::npos ? std::string_view() : rest.substr(split + 1));

  const std::string quoted = pp::promql_quote(value);
  size_t at = 0;
  std::string decoded;
  PP_FUZZ_CHECK(decode_double_quoted(quoted, at, decoded) && at == quoted.size() && decoded == value,
                "promql_quote('%s') = '%s' does not decode back",
                pp_fuzz::printable(value).c_str(), pp_fuzz::printable(quoted).c_str());

  bool empty = true;
  const std::optional<std::string> pushed = pp::add_metric_matcher(selector, op, value, empty);
  const std::string shown = pp_fuzz::printable(selector);
  if (!pushed) {
    PP_FUZZ_CHECK(!empty, "empty_result set without a selector for '%s'", shown.c_str());
    return 0;
  }
  const std::string_view original = trimmed(selector);
  if (!original.empty() && original.front() != '{') {
    // A metric name, maybe with a brace block: kept as is; "=" only.
    PP_FUZZ_CHECK(op == "=" && *pushed == original, "'%s' with a name came back as '%s'",
                  shown.c_str(), pp_fuzz::printable(*pushed).c_str());
    const size_t brace = original.find('{');
    if (brace != std::string_view::npos)
      PP_FUZZ_CHECK(one_brace_block(trimmed(original.substr(brace))),
                    "'%s' was taken as a plain selector", shown.c_str());
    return 0;
  }
  PP_FUZZ_CHECK(!empty, "empty_result for a selector without a name: '%s'", shown.c_str());
  const std::string head = "{__name__" + op + quoted;
  PP_FUZZ_CHECK(pushed->rfind(head, 0) == 0, "'%s' does not start with the new matcher",
                pp_fuzz::printable(*pushed).c_str());
  PP_FUZZ_CHECK(one_brace_block(*pushed),
                "'%s' pushed down as '%s', which PromQL does not read as one selector",
                shown.c_str(), pp_fuzz::printable(*pushed).c_str());
  PP_FUZZ_CHECK(one_brace_block(original), "'%s' was taken as a plain selector", shown.c_str());
  return 0;
}
