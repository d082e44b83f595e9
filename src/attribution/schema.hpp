// The attribution tables and views in the user's database (src/attribution/sql/schema.sql,
// views.sql, estimates.sql): what pp_install_views() and every pp_refresh install.
#pragma once
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

// Creates the attribution tables and views (idempotent). Views hold no data, so a database
// made by another version of the extension gets this version's views: they are recreated
// whenever the text that defines them changes. A read-only database whose schema is this
// version's is left as it is; one that would need writing is refused with what to do.
void install_attribution_schema(sqlite3* db);
// "tables: a, b, ...; views: c, ...": what install_attribution_schema creates, read from its SQL.
std::string installed_objects();

// Throws pp::Error naming the first attribution table in the main database that is not exactly
// what the extension creates (other columns or constraints, a trigger or foreign index on it, a
// view of its name). install_attribution_schema calls it before writing anything.
void verify_attribution_schema(sqlite3* db);
// True when every attribution view is stored, exactly as this version creates it.
bool attribution_views_current(sqlite3* db);
// True when every table, index and trigger of the attribution schema is stored, and every view
// exactly as this version creates it (with verify_attribution_schema's check of the tables' forms
// and no column upgrade pending: nothing for install_attribution_schema to write).
bool attribution_schema_current(sqlite3* db);
// The table functions read the main database's tables. The views pass their own database's
// database_id (pp_meta) as the argument `database`: one of another, ATTACHed, database is
// refused with what to do instead. NULL or absent: a direct call, which reads main.
void refuse_other_database(sqlite3* db, sqlite3_value* database_id);

}  // namespace pp
