// pp_settings: every setting of this connection with its current value, type, default and
// description. Secrets are masked exactly as pp_config(key) masks them.
//
//   SELECT name, value, description FROM pp_settings;
//   SELECT pp_config('timeout_ms', 5000);   -- change one
#include <memory>

#include "core/registry.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

enum Column { kName, kValue, kType, kDefault, kDescription };

struct SettingsCursor : ConnectionCursor {
  using ConnectionCursor::ConnectionCursor;
  size_t row = 0;
};

const SettingDefinition& definition(size_t row) { return setting_definitions()[row]; }

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  return connect_table(db, aux,
                       "CREATE TABLE x(name TEXT, value TEXT, type TEXT, default_value TEXT, "
                       "description TEXT)",
                       /*does_io=*/false, out, error);
}

int xBestIndex(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedRows = static_cast<sqlite3_int64>(setting_definitions().size());
  info->estimatedCost = 10;
  return SQLITE_OK;
}

int xOpen(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  return guard_vtab(vtab, "pp_settings", [&] {
    *out = new SettingsCursor(static_cast<ConnectionTable*>(vtab));
    return SQLITE_OK;
  });
}

int xClose(sqlite3_vtab_cursor* cursor) {
  delete static_cast<SettingsCursor*>(cursor);
  return SQLITE_OK;
}

int xFilter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) {
  static_cast<SettingsCursor*>(cursor)->row = 0;
  return SQLITE_OK;
}

int xNext(sqlite3_vtab_cursor* cursor) {
  ++static_cast<SettingsCursor*>(cursor)->row;
  return SQLITE_OK;
}

int xEof(sqlite3_vtab_cursor* cursor) {
  return static_cast<SettingsCursor*>(cursor)->row >= setting_definitions().size();
}

int xColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<SettingsCursor*>(base);
  return guard_vtab(base->pVtab, "pp_settings", [&] {
    const SettingDefinition& d = definition(cursor->row);
    std::string text;
    switch (column) {
      case kName: text = d.name; break;
      case kValue: text = cursor->connection->settings().display(d.name); break;
      case kType: text = setting_type_name(d.type); break;
      case kDefault: text = d.default_value; break;
      case kDescription: text = d.description; break;
    }
    sqlite3_result_text(ctx, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return SQLITE_OK;
  });
}

int xRowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(static_cast<SettingsCursor*>(cursor)->row);
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module m{};  // eponymous: no xCreate/xDestroy, read-only
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xDisconnect = disconnect_table;
  m.xOpen = xOpen;
  m.xClose = xClose;
  m.xFilter = xFilter;
  m.xNext = xNext;
  m.xEof = xEof;
  m.xColumn = xColumn;
  m.xRowid = xRowid;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_settings_table(const Registration& r) {
  return create_connection_module(r, "pp_settings", &kModule);
}

}  // namespace pp
