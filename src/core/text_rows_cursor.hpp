// A cursor over a small result held in memory as rows of text cells (NULL allowed), followed by
// hidden argument columns that echo the call's arguments. Used by the discovery tables
// (prom_series, prom_label_values), whose answers are lists of label sets.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/table_function.hpp"

namespace pp {

using TextRow = std::vector<std::optional<std::string>>;

struct TextRowsCursor : ConnectionCursor {
  using ConnectionCursor::ConnectionCursor;
  ~TextRowsCursor();
  void start(std::vector<TextRow> rows, const std::vector<sqlite3_value*>& arguments);

  std::vector<TextRow> rows;
  size_t row = 0;
  size_t visible_columns = 0;
  bool integer_columns = false;  // cells are decimal integers, returned as INTEGER
  std::vector<sqlite3_value*> arguments;
};

// Fills xOpen/xClose/xNext/xEof/xColumn/xRowid; visible_columns is the number of cell columns.
template <size_t kVisibleColumns>
void fill_text_rows_module(sqlite3_module& module);
void fill_text_rows_module_impl(sqlite3_module& module, int (*open)(sqlite3_vtab*, sqlite3_vtab_cursor**));

template <size_t kVisibleColumns>
int open_text_rows_cursor(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  return guard_vtab(vtab, "precisionprobe", [&] {
    auto* cursor = new TextRowsCursor(static_cast<ConnectionTable*>(vtab));
    cursor->visible_columns = kVisibleColumns;
    *out = cursor;
    return SQLITE_OK;
  });
}

template <size_t kVisibleColumns>
void fill_text_rows_module(sqlite3_module& module) {
  fill_text_rows_module_impl(module, open_text_rows_cursor<kVisibleColumns>);
}

}  // namespace pp
