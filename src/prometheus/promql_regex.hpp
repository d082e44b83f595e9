// Regular expressions the engine sends to Prometheus, whose regexp is Go's: a literal for an
// IN list (`metric IN ('a', 'b.c')` becomes `a|b\.c`), and the test of whether an SQL REGEXP
// pattern (RE2, regex_functions.cpp) means the same there, so it may be pushed down.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pp {

// A Go regexp matching exactly one of the values (empty list: nullopt); nullopt too when a value
// is not valid UTF-8 (Go's regexp matches runes). Every character but [A-Za-z0-9_] and non-ASCII
// letters is escaped.
std::optional<std::string> regex_matching_exactly(const std::vector<std::string>& values);

// Whether pattern is in the part of RE2's syntax that Go's regexp reads the same way: printable
// ASCII, escapes of punctuation and of \d \D \s \S \w \W \b \B \A \z \a \f \t \n \r \v only,
// groups (...) and (?:...), flags (?imsU-), no counted repetition {n,m} (the two libraries limit
// it differently), and RE2 accepts it. Patterns outside it are filtered locally only.
bool regex_means_the_same_in_go(const std::string& pattern);

}  // namespace pp
