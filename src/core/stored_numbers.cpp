#include "core/stored_numbers.hpp"

#include <cmath>

#include "core/number_text.hpp"
#include "core/text.hpp"

namespace pp {

std::optional<double> stored_double(const Statement& read, int column) {
  switch (read.column_type(column)) {
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return read.column_double(column);
    case SQLITE_TEXT: {
      double number = 0;
      if (parse_double(read.column_view(column), number) && std::isfinite(number)) return number;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> stored_int64(const Statement& read, int column) {
  if (read.column_type(column) == SQLITE_INTEGER) return read.column_int64(column);
  int64_t whole = 0;
  if (read.column_type(column) == SQLITE_TEXT && parse_int64(read.column_view(column), whole)) return whole;
  const std::optional<double> number = stored_double(read, column);
  // Whole and within [-2^63, 2^63), where the conversion is exact.
  if (!number || *number != std::floor(*number) || *number < -9223372036854775808.0 ||
      *number >= 9223372036854775808.0)
    return std::nullopt;
  return static_cast<int64_t>(*number);
}

double StoredRow::number(int column, const char* wanted) const {
  const std::optional<double> value = stored_double(read_, column);
  if (!value) throw refused(column, shown(column), wanted);
  return *value;
}

int64_t StoredRow::whole(int column, const char* wanted) const {
  const std::optional<int64_t> value = stored_int64(read_, column);
  if (!value) throw refused(column, shown(column), wanted);
  return *value;
}

std::string StoredRow::row_name() const {
  if (!who_) return "";
  const std::string named = what_ + *who_;
  return key_ ? named + " at " + key_ + " " + std::to_string(key_value_) : named;
}

Error StoredRow::refused(int column, const std::string& shown, const char* wanted) const {
  const char* name = sqlite3_column_name(read_.handle(), column);
  const std::string possessive = !table_.empty() && table_.back() == 's' ? "'" : "'s";
  const std::string row = row_name();
  return Error(table_ + possessive + " " + (name ? name : "?") + (row.empty() ? "" : " " + row) + " is " + shown +
               " (" + wanted + ")");
}

std::string StoredRow::shown(int column) const {
  switch (read_.column_type(column)) {
    case SQLITE_NULL:
      return "NULL";
    case SQLITE_BLOB:
      return "a BLOB of " + std::to_string(read_.column_blob(column).size()) +
             (read_.column_blob(column).size() == 1 ? " byte" : " bytes");
    case SQLITE_TEXT: {
      constexpr size_t kShownChars = 40;
      const std::string_view text = read_.column_view(column);
      // (Cut whole characters: a byte of one cut in two would show as U+FFFD.)
      return "'" + valid_utf8(text, kShownChars) + "'";  // ("..." where cut)
    }
    case SQLITE_INTEGER:  // (every digit: a double shows 2^53 + 1 as 2^53)
      return std::to_string(read_.column_int64(column));
    default:
      return number_text(read_.column_double(column));
  }
}

}  // namespace pp
