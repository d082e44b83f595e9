// The sqlite3_module of a streaming table function: everything but xConnect, xBestIndex and
// xFilter comes from its cursor type, so each table file holds only what is its own.
//
//   struct MyCursor : ConnectionCursor {
//     static constexpr const char* kName = "my_table";    // names errors
//     explicit MyCursor(ConnectionTable* table);
//     bool eof = true;
//     int64_t rowid = 0;
//     void advance();                                      // to the next row; may throw
//     void column(sqlite3_context* ctx, int column) const; // one value of the current row
//   };
//   const sqlite3_module kModule = scan_module<MyCursor>(xConnect, xBestIndex, xFilter);
//
// Eponymous and read-only: no xCreate, xDestroy or xUpdate. Exceptions never reach SQLite
// (guard_vtab).
#pragma once
#include "core/table_function.hpp"

namespace pp {

template <class Cursor>
sqlite3_module scan_module(int (*connect)(sqlite3*, void*, int, const char* const*, sqlite3_vtab**, char**),
                           int (*best_index)(sqlite3_vtab*, sqlite3_index_info*),
                           int (*filter)(sqlite3_vtab_cursor*, int, const char*, int, sqlite3_value**)) {
  sqlite3_module m{};
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xDisconnect = disconnect_table;
  m.xOpen = [](sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
    return guard_vtab(vtab, Cursor::kName, [&] {
      *out = new Cursor(static_cast<ConnectionTable*>(vtab));
      return SQLITE_OK;
    });
  };
  m.xClose = [](sqlite3_vtab_cursor* cursor) {
    delete static_cast<Cursor*>(cursor);
    return SQLITE_OK;
  };
  m.xFilter = filter;
  m.xNext = [](sqlite3_vtab_cursor* base) {
    return guard_vtab(base->pVtab, Cursor::kName, [&] {
      static_cast<Cursor*>(base)->advance();
      return SQLITE_OK;
    });
  };
  m.xEof = [](sqlite3_vtab_cursor* cursor) { return static_cast<Cursor*>(cursor)->eof ? 1 : 0; };
  m.xColumn = [](sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int column) {
    static_cast<const Cursor*>(cursor)->column(ctx, column);
    return SQLITE_OK;
  };
  m.xRowid = [](sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
    *rowid = static_cast<Cursor*>(cursor)->rowid;
    return SQLITE_OK;
  };
  return m;
}

}  // namespace pp
