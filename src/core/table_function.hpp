// Shared mechanics of the extension's table-valued functions (eponymous virtual tables whose
// arguments are HIDDEN columns, as in SQLite's ext/misc/series.c).
//
// plan_arguments() is the xBestIndex half: it hands each usable equality constraint on an
// argument column to xFilter (in argument order), records which arguments are present as bits
// of idxNum, and reports a missing required argument by name. A required argument that is
// present but not usable in this plan (a join whose other side is not yet known) gives
// SQLITE_CONSTRAINT, so SQLite picks a plan that can supply it.
#pragma once
#include <string>
#include <vector>

#include "core/connection.hpp"
#include "core/errors.hpp"

namespace pp {

struct ArgumentSpec {
  const char* name;
  bool required;
};

// Returns SQLITE_OK, SQLITE_CONSTRAINT or SQLITE_ERROR (with vtab->zErrMsg set).
int plan_arguments(sqlite3_vtab* vtab, sqlite3_index_info* info, const char* function,
                   int first_argument_column, const std::vector<ArgumentSpec>& arguments);

// Maps xFilter's argv (present arguments only, in order) back to argument positions:
// result[i] is the value of argument i, or nullptr when it was not given.
std::vector<sqlite3_value*> filter_arguments(int idx_num, int argc, sqlite3_value** argv,
                                             size_t argument_count);

// Base of every table of the extension: the vtab keeps its connection's shared state.
struct ConnectionTable : sqlite3_vtab {
  ConnectionPtr connection;
};

// Base of every cursor: counts itself open on the connection (see Connection::cursor_opened).
struct ConnectionCursor : sqlite3_vtab_cursor {
  explicit ConnectionCursor(ConnectionTable* table) : connection(table->connection) {
    connection->cursor_opened();
  }
  ~ConnectionCursor() { connection->cursor_closed(); }
  ConnectionCursor(const ConnectionCursor&) = delete;
  ConnectionCursor& operator=(const ConnectionCursor&) = delete;
  ConnectionPtr connection;
};

// xConnect for an eponymous table: declares the schema, marks it DIRECTONLY when it does I/O.
int connect_table(sqlite3* db, void* client_data, const char* schema, bool does_io,
                  sqlite3_vtab** out, char** error);
int disconnect_table(sqlite3_vtab* vtab);

}  // namespace pp
