// PromQL text the engine builds itself: quoted label values and metric-name push-down into a
// series selector. Every value from data or SQL goes through promql_quote, so quotes, braces
// and backslashes in label values cannot change the meaning of a selector.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace pp {

// "say \"hi\"" style double-quoted PromQL string literal.
std::string promql_quote(const std::string& value);

// Whether text is one series selector and nothing more: a metric name, label matchers in braces,
// or both (`up`, `{gpu="0"}`, `up{job="x"}`), with blanks around them and # comments inside the
// braces. Anything else (a function, an operator, a range, an offset, a comment after it) is not.
bool is_series_selector(std::string_view text);

// Adds a matcher on __name__ to a plain series selector such as `{gpu="0"}` or `up`.
// op is "=" or "=~". Returns the new selector; nullopt when the selector cannot take the matcher
// exactly (it is not a plain selector, or names a metric and op is "=~"); `empty_result` is set
// when the selector names another metric than an "=" matcher, so no series can match.
std::optional<std::string> add_metric_matcher(const std::string& selector, const std::string& op,
                                              const std::string& value, bool& empty_result);

// The query with each `@ start()` and `@ end()` modifier replaced by `@ start_seconds` or
// `@ end_seconds` (unix seconds as the API takes them): a range query sent in several requests
// would otherwise pin each request's own start or end. String literals and comments are left as
// they are.
std::string pin_at_modifiers(std::string_view query, const std::string& start_seconds, const std::string& end_seconds);

}  // namespace pp
