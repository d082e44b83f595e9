#include "core/sql_values.hpp"

#include "core/errors.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

std::string text_without_nul(sqlite3_value* value, const char* argument) {
  const unsigned char* text = sqlite3_value_text(value);
  if (!text) throw std::bad_alloc();
  std::string result(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_value_bytes(value)));
  const auto nul = result.find('\0');
  if (nul != std::string::npos)
    throw argument_error(argument, "holds a NUL byte (at byte " + std::to_string(nul) +
                                       "), where a path or text would be cut short");
  return result;
}

}  // namespace

std::string required_text(sqlite3_value* value, const char* argument) {
  if (!value || sqlite3_value_type(value) == SQLITE_NULL) throw argument_error(argument, "is NULL");
  return text_without_nul(value, argument);
}

std::string required_nonblank_text(sqlite3_value* value, const char* argument) {
  if (value && sqlite3_value_type(value) == SQLITE_BLOB) throw argument_error(argument, "is a BLOB; it needs text");
  std::string text = required_text(value, argument);
  if (trim(text).empty()) throw argument_error(argument, "is empty");
  return text;
}

std::optional<std::string> optional_text(sqlite3_value* value, const char* argument) {
  if (!value || sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;
  return text_without_nul(value, argument);
}

std::string compared_bytes(sqlite3_value* value) {
  const unsigned char* text = sqlite3_value_text(value);
  if (!text && sqlite3_value_type(value) != SQLITE_NULL) throw std::bad_alloc();
  return text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_value_bytes(value)))
              : std::string();
}

double required_double(sqlite3_value* value, const char* argument) {
  switch (value ? sqlite3_value_type(value) : SQLITE_NULL) {
    case SQLITE_INTEGER: return static_cast<double>(sqlite3_value_int64(value));
    case SQLITE_FLOAT: return sqlite3_value_double(value);
    case SQLITE_NULL: throw argument_error(argument, "is NULL");
    case SQLITE_BLOB: throw argument_error(argument, "is a BLOB; it needs a number");
    default: {
      double d = 0;
      const std::string text = required_text(value, argument);
      if (!parse_double(text, d))
        throw argument_error(argument, (out_of_double_range(text) ? "is beyond the range of a double (1.8e308 at "
                                                                    "most, none nonzero below 4.9e-324): '"
                                                                  : "is not a number: '") +
                                           text + "'");
      return d;
    }
  }
}

SqlValue held_value(sqlite3_value* value) {
  switch (sqlite3_value_type(value)) {
    case SQLITE_INTEGER: return static_cast<int64_t>(sqlite3_value_int64(value));
    case SQLITE_FLOAT: return sqlite3_value_double(value);
    case SQLITE_TEXT:
      return std::string(reinterpret_cast<const char*>(sqlite3_value_text(value)), sqlite3_value_bytes(value));
    case SQLITE_BLOB:
      return SqlBlob{std::string(static_cast<const char*>(sqlite3_value_blob(value)), sqlite3_value_bytes(value))};
    default: return std::monostate{};
  }
}

void result_text(sqlite3_context* ctx, const std::string& text) {
  sqlite3_result_text(ctx, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

void result_value(sqlite3_context* ctx, const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    sqlite3_result_int64(ctx, *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    sqlite3_result_double(ctx, *d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    result_text(ctx, *s);
  } else if (const auto* b = std::get_if<SqlBlob>(&value)) {
    sqlite3_result_blob64(ctx, b->bytes.data(), b->bytes.size(), SQLITE_TRANSIENT);
  } else {
    sqlite3_result_null(ctx);
  }
}

}  // namespace pp
