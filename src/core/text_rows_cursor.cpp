#include "core/text_rows_cursor.hpp"

namespace pp {

TextRowsCursor::~TextRowsCursor() {
  for (sqlite3_value* v : arguments) sqlite3_value_free(v);
}

void TextRowsCursor::start(std::vector<TextRow> new_rows, const std::vector<sqlite3_value*>& args) {
  for (sqlite3_value* v : arguments) sqlite3_value_free(v);
  arguments.clear();
  for (sqlite3_value* v : args) arguments.push_back(v ? sqlite3_value_dup(v) : nullptr);
  rows = std::move(new_rows);
  row = 0;
}

namespace {

int xClose(sqlite3_vtab_cursor* cursor) {
  delete static_cast<TextRowsCursor*>(cursor);
  return SQLITE_OK;
}

int xNext(sqlite3_vtab_cursor* cursor) {
  ++static_cast<TextRowsCursor*>(cursor)->row;
  return SQLITE_OK;
}

int xEof(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<TextRowsCursor*>(base);
  return cursor->row >= cursor->rows.size();
}

int xColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<TextRowsCursor*>(base);
  const size_t c = static_cast<size_t>(column);
  if (c < cursor->visible_columns) {
    const auto& cell = cursor->rows[cursor->row][c];
    if (cell && cursor->integer_columns) sqlite3_result_int64(ctx, std::stoll(*cell));
    else if (cell) sqlite3_result_text(ctx, cell->c_str(), static_cast<int>(cell->size()), SQLITE_TRANSIENT);
    else sqlite3_result_null(ctx);
  } else if (c - cursor->visible_columns < cursor->arguments.size() &&
             cursor->arguments[c - cursor->visible_columns]) {
    sqlite3_result_value(ctx, cursor->arguments[c - cursor->visible_columns]);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int xRowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(static_cast<TextRowsCursor*>(cursor)->row);
  return SQLITE_OK;
}

}  // namespace

void fill_text_rows_module_impl(sqlite3_module& m, int (*open)(sqlite3_vtab*, sqlite3_vtab_cursor**)) {
  m.xDisconnect = disconnect_table;
  m.xOpen = open;
  m.xClose = xClose;
  m.xNext = xNext;
  m.xEof = xEof;
  m.xColumn = xColumn;
  m.xRowid = xRowid;
}

}  // namespace pp
