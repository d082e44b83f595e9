// pp_install_views(): creates the attribution tables and views in the main database and
// returns what it installed ("tables: ...; views: ..."). pp_refresh installs them too.
#include "attribution/attribution_tables.hpp"
#include "attribution/schema.hpp"
#include "core/guard.hpp"
#include "core/sql_values.hpp"

namespace pp {

void pp_install_views_function(sqlite3_context* ctx, int, sqlite3_value**) {
  guard_function(ctx, "pp_install_views", [&] {
    install_attribution_schema(sqlite3_context_db_handle(ctx));
    result_text(ctx, installed_objects());
  });
}

}  // namespace pp
