// Reading SQL arguments and setting results, with errors that name function and argument.
#pragma once
#include <optional>
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

// Text of a required argument; NULL is an error "FUNC: argument 'ARG' is NULL".
std::string required_text(sqlite3_value* value, const char* function, const char* argument);
// Text of an optional argument; NULL gives nullopt.
std::optional<std::string> optional_text(sqlite3_value* value);
// A number, or text that parses as one entirely; anything else is an error naming the argument.
double required_double(sqlite3_value* value, const char* function, const char* argument);

void result_text(sqlite3_context* ctx, const std::string& text);

}  // namespace pp
