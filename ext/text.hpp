// Small, locale-independent text helpers shared by the parsers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace pp {

bool parse_int64(std::string_view text, int64_t& out);
// Parses a decimal or exponent number ("0.5", "1e-07", "-3"), locale-independent, whole text.
bool parse_double(std::string_view text, double& out);
std::string to_lower(std::string_view text);
std::string_view trim(std::string_view text);

}  // namespace pp
