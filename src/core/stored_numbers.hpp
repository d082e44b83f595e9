// Numbers read from the tables that users may edit by hand (pp_alignment, pp_intervals). SQLite
// keeps a value that a column's affinity cannot make a number as it is ('abc' in a REAL or
// INTEGER column, any BLOB), and sqlite3_column_double reads it as 0: a hand edit would then
// give a silent 0. A reader refuses it instead, with an error that names table, column and row:
//
//   StoredRow row(read, "pp_alignment");
//   while (read.step()) {
//     row.name_row("of GPU ", uuid);
//     const int64_t from = row.whole(0, "a time in unix ms");
//     row.name_row("of GPU ", uuid, "from_ms", from);
//     const double timing = row.number(3, "a length in ns");
//   }
//   -> "pp_alignment's timing_ns of GPU GPU-0 at from_ms 1700000000999 is 'abc' (a length in ns)"
//
// The column's name is the statement's (an expression is named with AS).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/errors.hpp"
#include "core/statement.hpp"

namespace pp {

// INTEGER and REAL as they are, TEXT where all of it is one finite decimal number (a column
// without affinity keeps '12' as text); nullopt for other TEXT, BLOB and NULL.
std::optional<double> stored_double(const Statement& read, int column);
// As stored_double, for a whole number: a REAL only where it is whole and within int64's range
// (column_int64 would cut 1.5 to 1, and saturate 1e300).
std::optional<int64_t> stored_int64(const Statement& read, int column);

class StoredRow {
 public:
  StoredRow(const Statement& read, std::string table) : read_(read), table_(std::move(table)) {}

  // How errors name the current row from now on: `what` and `who`, and a key column's value
  // where given ("of GPU ", X, "from_ms", N: "of GPU X at from_ms N"); nothing until set. Put
  // together only for an error, so that a reader of many rows builds no string per row; `what`,
  // `who` and `key` are kept by reference: they must outlive the row's reads.
  void name_row(const char* what, const std::string& who, const char* key = nullptr, int64_t value = 0) {
    what_ = what;
    who_ = &who;
    key_ = key;
    key_value_ = value;
  }
  // The column's number, or the error "TABLE's COLUMN ROW is VALUE (WANTED)".
  double number(int column, const char* wanted) const;
  int64_t whole(int column, const char* wanted) const;
  // That error, for a value the reader refuses for reasons of its own (its range).
  Error refused(int column, const std::string& shown, const char* wanted) const;
  // How an error shows the column's value: 'abc' (quoted, at most 40 characters), a BLOB of N
  // bytes, NULL, or the number.
  std::string shown(int column) const;

 private:
  std::string row_name() const;

  const Statement& read_;
  std::string table_;
  const char* what_ = "";
  const std::string* who_ = nullptr;
  const char* key_ = nullptr;
  int64_t key_value_ = 0;
};

}  // namespace pp
