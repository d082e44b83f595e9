#include "attribution/schema.hpp"

#include <algorithm>
#include <functional>
#include <cctype>
#include <cstring>
#include <vector>

#include "attribution/event_store.hpp"
#include "core/embedded_sql.hpp"
#include "core/errors.hpp"
#include "core/statement.hpp"

namespace pp {
namespace {

// Names after "CREATE <kind> IF NOT EXISTS" in the extension's own SQL, in order.
// ("CREATE TEMP TABLE", "CREATE VIRTUAL TABLE" too.)
std::vector<std::string> created_objects(const std::string& sql, const char* kind) {
  const std::string object = std::string(kind) + " IF NOT EXISTS ";
  std::vector<std::string> names;
  for (size_t at = sql.find("CREATE "); at != std::string::npos; at = sql.find("CREATE ", at + 1)) {
    size_t p = at + 7;
    for (const char* qualifier : {"TEMP ", "VIRTUAL "})
      if (sql.compare(p, std::strlen(qualifier), qualifier) == 0) p += std::strlen(qualifier);
    if (sql.compare(p, object.size(), object) != 0) continue;
    p += object.size();
    size_t end = p;
    while (end < sql.size() && (std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_')) ++end;
    if (end > p) names.push_back(sql.substr(p, end - p));
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string view_sql() { return std::string(embedded_sql("views")) + std::string(embedded_sql("estimates")); }

// Whether `table` exists in main without `column`: made by a version before the column.
bool lacks_column(sqlite3* db, const std::string& table, const std::string& column) {
  return query_double(db, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = :table",
                      {{":table", table}}, 0) > 0 &&
         query_double(db, "SELECT count(*) FROM pragma_table_info(:table, 'main') WHERE name = :column",
                      {{":table", table}, {":column", column}}, 0) == 0;
}

// The columns later versions added to attribution tables, and the upgrade (upgrade.sql) that
// adds each to a table an earlier version made.
struct ColumnUpgrade {
  const char* table;
  const char* column;
  const char* upgrade;
};
constexpr ColumnUpgrade kColumnUpgrades[] = {
    // what each metric's samples describe (the two Table I metrics that are not window averages
    // get their kinds)
    {"pp_metrics", "kind", "metric_kinds"},
    // each event file's head (0: unknown, so its files are checked as before until their next
    // import records it), and its real path
    {"pp_event_files", "head_hash", "event_file_heads"},
    {"pp_event_files", "real_path", "event_file_real_paths"},
    // each span's longest event
    {"pp_gpu_spans", "longest_ns", "gpu_span_longest"},
    // the window lengths a stretch was aligned with
    {"pp_alignment", "util_window_ms", "stretch_window_lengths"},
    {"pp_windows", "util_window_ms", "window_lengths"},
    // the report tables' count of (call, window) pairs, named windows before
    {"report_layers", "data_num", "report_layers_data_num"},
    {"report_layer_types", "data_num", "report_layer_types_data_num"},
    // the estimator state's count of windows off the driver's grid, left out
    {"pp_estimator_state", "off_grid_windows", "estimator_state_off_grid_windows"},
    // why a stretch is not estimated
    {"pp_alignment", "reason", "alignment_reasons"},
};

// Whether pp_events holds one row per event, as versions before blocks made it.
bool has_row_events(sqlite3* db) {
  return query_double(db, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = 'pp_events' "
                          "AND sql NOT LIKE 'CREATE VIRTUAL%'", {}, 0) > 0;
}

bool tables_need_upgrade(sqlite3* db) {
  for (const ColumnUpgrade& u : kColumnUpgrades)
    if (lacks_column(db, u.table, u.column)) return true;
  return has_row_events(db);
}

void upgrade_tables(sqlite3* db) {
  for (const ColumnUpgrade& u : kColumnUpgrades)
    if (lacks_column(db, u.table, u.column)) run_script(db, named_sql("upgrade", u.upgrade));
  // ... and one made before events were kept in blocks has them moved there.
  if (has_row_events(db)) {
    run_script(db, "PRAGMA legacy_alter_table = ON; ALTER TABLE main.pp_events RENAME TO pp_events_before_blocks; "
                   "PRAGMA legacy_alter_table = OFF;");
    run_script(db, named_sql("upgrade", "event_blocks"));
  }
}

// Whether pp_meta holds what the schema script and install_attribution_schema put there: the
// database's identity, the marks of the one-time fills, and the views' fingerprint.
bool meta_complete(sqlite3* db, const std::string& fingerprint) {
  return query_double(db,
                      "SELECT count(*) FROM main.pp_meta WHERE key IN ('database_id', 'gpu_spans', 'report_pending') "
                      "OR (key = 'views' AND value = :fingerprint)",
                      {{":fingerprint", fingerprint}}, 0) == 4;
}

// Whether pp_metrics holds the rows schema.sql gives it (a refresh puts a deleted one back).
bool default_metrics_present(sqlite3* db) {
  return query_double(db,
                      "SELECT count(*) FROM main.pp_metrics WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', "
                      "'DCGM_FI_DEV_FB_USED', 'DCGM_FI_PROF_DRAM_ACTIVE', 'DCGM_FI_PROF_PIPE_FP32_ACTIVE', "
                      "'DCGM_FI_PROF_SM_OCCUPANCY', 'DCGM_FI_PROF_SM_ACTIVE')",
                      {}, 0) == 6;
}

}  // namespace

std::string installed_objects() {
  const std::string sql = std::string(embedded_sql("schema")) + view_sql();
  std::vector<std::string> tables = created_objects(sql, "TABLE");
  const auto events = std::find(tables.begin(), tables.end(), "pp_events");
  if (events != tables.end()) tables.insert(events + 1, std::begin(kEventStoreTables), std::end(kEventStoreTables));
  return "tables: " + joined(tables) + "; views: " + joined(created_objects(sql, "VIEW"));
}

void install_attribution_schema(sqlite3* db) {
  verify_attribution_schema(db);
  const std::string views = view_sql();
  const std::string fingerprint = std::to_string(std::hash<std::string>{}(views));
  if (sqlite3_db_readonly(db, "main") == 1) {
    // Nothing to write where everything is this version's; else say so before any write fails
    // with SQLite's bare "attempt to write a readonly database".
    if (!attribution_schema_current(db) || tables_need_upgrade(db) || !meta_complete(db, fingerprint))
      throw Error("the database is read-only and its attribution tables or views are not this version's (made by "
                  "an earlier version of precisionprobe, or never installed): installing them writes to it. Open "
                  "it writable once, or work on a writable copy");
    return;
  }
  // Nor is there where everything is this version's and the default metrics are in place
  // (schema.sql would only insert what is there): a reader that installs first (export,
  // serve, analyze) then takes no write lock, so that in WAL mode it never waits for a refresh.
  if (attribution_schema_current(db) && !tables_need_upgrade(db) && meta_complete(db, fingerprint) &&
      default_metrics_present(db))
    return;
  upgrade_tables(db);
  run_script(db, embedded_sql("schema"));
  const bool current =
      query_double(db, "SELECT count(*) FROM main.pp_meta WHERE key = 'views' AND value = :fingerprint",
                   {{":fingerprint", fingerprint}}, 0) > 0 &&
      attribution_views_current(db);
  if (!current) {
    std::string drops;
    for (const std::string& view : created_objects(views, "VIEW")) drops += "DROP VIEW IF EXISTS main." + view + ";";
    run_script(db, drops);
  }
  run_script(db, views);
  if (!current) {
    run_script(db, "INSERT OR REPLACE INTO main.pp_meta(key, value) VALUES ('views', :fingerprint)",
               {{":fingerprint", fingerprint}});
    // The report tables hold what the views gave: rows from other views are written again.
    run_script(db, named_sql("upgrade", "report_every_job"));
  }
}

}  // namespace pp
