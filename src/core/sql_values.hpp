// SQL values in C++: reading arguments (errors name the argument; the guard adds the
// function), setting results, and SqlValue, a value held for binding or returning later.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "core/sqlite_api.hpp"

namespace pp {

// A BLOB's bytes (a std::string in a SqlValue is TEXT).
struct SqlBlob {
  std::string bytes;
  bool operator==(const SqlBlob& other) const { return bytes == other.bytes; }
};

// NULL, INTEGER, REAL, TEXT or BLOB.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, SqlBlob>;

// Text of a required argument; NULL is an error "argument 'ARG' is NULL". Text or a BLOB that
// holds a NUL byte is an error too: C paths and strings would silently end there.
std::string required_text(sqlite3_value* value, const char* argument);
// As required_text, and blank text (nothing but spaces) is an error "argument 'ARG' is empty",
// a BLOB one too: for a query, selector or label name, which a server would answer with a
// confusing error (or, for a BLOB's bytes, run as if they were text).
std::string required_nonblank_text(sqlite3_value* value, const char* argument);
// Text of an optional argument; NULL (or an absent argument, nullptr) gives nullopt. A NUL byte
// is an error naming the argument, as for required_text.
std::optional<std::string> optional_text(sqlite3_value* value, const char* argument);
// The text of a value compared with a column (a pushed-down constraint), as its bytes: a NUL
// byte is part of it, as it is of the column's values.
std::string compared_bytes(sqlite3_value* value);
// A number, or text that parses as one entirely; anything else is an error naming the argument.
double required_double(sqlite3_value* value, const char* argument);

// A value as it is (its type and bytes), to bind or return after the call that handed it over.
SqlValue held_value(sqlite3_value* value);

void result_text(sqlite3_context* ctx, const std::string& text);
void result_value(sqlite3_context* ctx, const SqlValue& value);

}  // namespace pp
