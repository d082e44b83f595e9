#include "prometheus/promql.hpp"

#include <cctype>

#include "core/text.hpp"

namespace pp {

std::string promql_quote(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

bool is_series_selector(std::string_view text) {
  text = trim(text);
  size_t at = 0;
  while (at < text.size() && (std::isalpha(static_cast<unsigned char>(text[at])) || text[at] == '_' || text[at] == ':' ||
                              (at > 0 && std::isdigit(static_cast<unsigned char>(text[at])))))
    ++at;
  const bool named = at > 0;
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  if (at == text.size()) return named;
  // Then one brace block that ends the text; a brace inside a string or a comment does not count,
  // and a comment runs to the end of its line.
  if (text[at] != '{' || text.back() != '}') return false;
  const size_t close = text.size() - 1;
  char quote = 0;  // the quote of the string we are in
  for (size_t i = at + 1; i < close; ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\' && quote != '`') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'' || c == '`') {
      quote = c;
    } else if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) return false;  // the comment hides the closing brace
    } else if (c == '{' || c == '}') {
      return false;
    }
  }
  return quote == 0;
}

std::optional<std::string> add_metric_matcher(const std::string& selector, const std::string& op,
                                              const std::string& value, bool& empty_result) {
  empty_result = false;
  const std::string s(trim(selector));
  size_t pos = 0;
  auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  while (pos < s.size() && name_char(s[pos], pos == 0)) ++pos;
  const std::string name = s.substr(0, pos);
  std::string rest(trim(std::string_view(s).substr(pos)));
  // The rest must be nothing or one brace block ending the selector. A '}' inside a quoted label
  // value is skipped so `{a="}"}` is still recognized. A string ends only at the quote that
  // opened it (`{a='"'} or up{b='"'}` is two selectors), backquoted strings have no escapes, and
  // a # comment, which could hide a brace or a quote, declines the push-down.
  if (!rest.empty()) {
    if (rest.front() != '{' || rest.back() != '}') return std::nullopt;
    char quote = 0;  // the quote of the string we are in
    for (size_t i = 1; i + 1 < rest.size(); ++i) {
      const char c = rest[i];
      if (quote) {
        if (c == '\\' && quote != '`') ++i;
        else if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'' || c == '`') {
        quote = c;
      } else if (c == '}' || c == '{' || c == '#') {
        return std::nullopt;
      }
    }
    if (quote) return std::nullopt;
  }
  if (name.empty() && rest.empty()) return std::nullopt;
  if (!name.empty()) {
    if (op != "=") return std::nullopt;
    if (name != value) empty_result = true;
    return s;
  }
  const std::string inner(trim(std::string_view(rest).substr(1, rest.size() - 2)));
  return "{__name__" + op + promql_quote(value) + (inner.empty() ? "" : "," + inner) + "}";
}

namespace {

bool promql_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool promql_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Where the string literal or comment that starts at `at` ends (one past it), or `at` when none
// starts there. PromQL's strings: "..." and '...' with backslash escapes, `...` raw.
size_t skip_literal(std::string_view q, size_t at) {
  const char c = q[at];
  if (c == '#') {
    const size_t end = q.find('\n', at);
    return end == std::string_view::npos ? q.size() : end;
  }
  if (c != '"' && c != '\'' && c != '`') return at;
  for (size_t i = at + 1; i < q.size(); ++i) {
    if (c != '`' && q[i] == '\\') {
      ++i;
    } else if (q[i] == c) {
      return i + 1;
    }
  }
  return q.size();
}

// After an '@' at `at`: the end of `start()` or `end()` (blanks allowed around its parts) and
// which it is, or 0 when neither follows.
size_t at_preprocessor(std::string_view q, size_t at, bool& is_start) {
  size_t i = at + 1;
  while (i < q.size() && promql_blank(q[i])) ++i;
  size_t name_end = i;
  while (name_end < q.size() && promql_name_char(q[name_end])) ++name_end;
  const std::string_view name = q.substr(i, name_end - i);
  if (name != "start" && name != "end") return 0;
  is_start = name == "start";
  i = name_end;
  for (char expected : {'(', ')'}) {
    while (i < q.size() && promql_blank(q[i])) ++i;
    if (i == q.size() || q[i] != expected) return 0;
    ++i;
  }
  return i;
}

}  // namespace

std::string pin_at_modifiers(std::string_view query, const std::string& start_seconds, const std::string& end_seconds) {
  std::string out;
  out.reserve(query.size() + 16);
  for (size_t i = 0; i < query.size();) {
    if (const size_t end = skip_literal(query, i); end != i) {
      out.append(query.substr(i, end - i));
      i = end;
      continue;
    }
    bool is_start = false;
    if (query[i] == '@')
      if (const size_t end = at_preprocessor(query, i, is_start)) {
        out += "@ " + (is_start ? start_seconds : end_seconds);
        i = end;
        continue;
      }
    out += query[i++];
  }
  return out;
}

}  // namespace pp
