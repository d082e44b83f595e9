// Before pp_refresh or pp_install_views writes to the attribution tables, each one that already
// exists must be exactly what src/attribution/sql/schema.sql (and estimates.sql) creates: the
// same CREATE TABLE (columns, types, constraints), and no index or trigger on it beyond the
// extension's own. Views the refresh reads (layer_metrics, ...) are replaced when their stored
// SQL is not this version's, whatever pp_meta says.
//
// A database file may come from anyone, and a CHECK constraint, trigger or index stored in it
// runs whenever the engine writes to the table. SQLite refuses DIRECTONLY functions in most of
// these, but not a non-deterministic function in a CHECK constraint, so the engine does not rely
// on it: a table that differs is refused by name before anything is written.
//
// The reference is what the extension's own SQL stores in an empty in-memory database, once as
// schema.sql creates it and once as upgrade.sql leaves a table made by an earlier version.
// Stored SQL is compared without comments and with whitespace collapsed, so a table made by a
// version whose comments differed is still the same table.
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "attribution/attribution_tables.hpp"
#include "attribution/event_store.hpp"
#include "attribution/schema.hpp"
#include "core/embedded_sql.hpp"
#include "core/errors.hpp"
#include "core/statement.hpp"
#include "core/text.hpp"

namespace pp {
namespace {

struct StoredObject {
  std::string type;  // table, index, trigger, view
  std::string name;
  std::string sql;   // normalized; empty for an automatic index
  bool operator<(const StoredObject& o) const { return std::tie(type, name, sql) < std::tie(o.type, o.name, o.sql); }
  bool operator==(const StoredObject& o) const { return type == o.type && name == o.name && sql == o.sql; }
};

// The definition of one attribution table as the extension may have left it: its CREATE TABLE
// (one of several forms) and the other objects on it (indexes; an older database may lack some).
struct TableReference {
  std::set<std::string> table_sql;
  std::set<StoredObject> others;
};

struct References {
  std::map<std::string, TableReference> tables;
  std::map<std::string, std::string> views;  // name -> normalized SQL
  std::map<std::string, std::string> owners;  // an index's or trigger's name -> its table
  std::set<StoredObject> current;  // every object this version's SQL stores
};

// SQL without comments, whitespace runs as one space, none around ( ) , ; literals unchanged.
std::string normalize_sql(std::string_view sql) {
  std::string out;
  bool pending_space = false;
  auto put = [&](char c) {
    const bool tight = c == '(' || c == ')' || c == ',' || c == ';';
    if (pending_space && !out.empty() && !tight && out.back() != '(' && out.back() != ',') out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  };
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;
      pending_space = true;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      i += 2;
      while (i + 1 < sql.size() && !(sql[i] == '*' && sql[i + 1] == '/')) ++i;
      ++i;
      pending_space = true;
    } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
      const char close = c == '[' ? ']' : c;
      put(c);
      for (++i; i < sql.size(); ++i) {
        out.push_back(sql[i]);
        if (sql[i] == close) {
          if (close != ']' && i + 1 < sql.size() && sql[i + 1] == close) {
            out.push_back(sql[++i]);
            continue;
          }
          break;
        }
      }
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = true;
    } else {
      put(c);
    }
  }
  return out;
}

std::vector<std::pair<std::string, StoredObject>> stored_objects(sqlite3* db, const char* schema) {
  Statement select(db, std::string("SELECT lower(tbl_name), type, name, sql FROM ") + schema +
                           ".sqlite_schema WHERE type IN ('table', 'index', 'trigger', 'view')");
  std::vector<std::pair<std::string, StoredObject>> objects;
  while (select.step())
    objects.push_back({select.column_text(0),
                       {select.column_text(1), select.column_text(2), normalize_sql(select.column_view(3))}});
  return objects;
}

struct ReferenceDb {
  sqlite3* db = nullptr;
  ReferenceDb() {
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      throw std::bad_alloc();
    }
    // pp_events is a virtual table of the extension's; its xCreate makes the shadow tables.
    if (sqlite3_create_module_v2(db, "pp_event_store", &kEventStoreModule, nullptr, nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      throw std::bad_alloc();
    }
  }
  ~ReferenceDb() { sqlite3_close(db); }
};

// pp_alignment and pp_windows as versions before stretches kept their window lengths made them.
const char* const kAlignmentBeforeWindowLengths =
    "CREATE TABLE pp_alignment(uuid TEXT NOT NULL, from_ms INTEGER NOT NULL, through_ms INTEGER NOT NULL, "
    "offset_ns INTEGER NOT NULL, timing_ns INTEGER NOT NULL, drift_ppm REAL NOT NULL, util_phase_ns INTEGER, "
    "util_timing_ns INTEGER, samples INTEGER NOT NULL, repeats INTEGER NOT NULL, skipped INTEGER NOT NULL, "
    "moved INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (uuid, from_ms))";
const char* const kWindowsBeforeWindowLengths =
    "CREATE TABLE pp_windows(uuid TEXT NOT NULL, ts_ms INTEGER NOT NULL, end_ns INTEGER NOT NULL, util_end_ns INTEGER, "
    "copy_of_ms INTEGER, util_copy INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (uuid, ts_ms)) WITHOUT ROWID";

// pp_alignment as versions before stretches said why they were not estimated made it.
const char* const kAlignmentBeforeReasons =
    "CREATE TABLE pp_alignment(uuid TEXT NOT NULL, from_ms INTEGER NOT NULL, through_ms INTEGER NOT NULL, "
    "offset_ns INTEGER NOT NULL, timing_ns INTEGER NOT NULL, drift_ppm REAL NOT NULL, util_phase_ns INTEGER, "
    "util_timing_ns INTEGER, samples INTEGER NOT NULL, repeats INTEGER NOT NULL, skipped INTEGER NOT NULL, "
    "moved INTEGER NOT NULL, status TEXT NOT NULL, window_ms REAL, util_window_ms REAL, PRIMARY KEY (uuid, from_ms))";

// pp_estimator_state as versions before windows off the driver's grid were left out made it.
const char* const kEstimatorStateBeforeOffGridWindows =
    "CREATE TABLE pp_estimator_state(uuid TEXT NOT NULL, system TEXT NOT NULL, metric TEXT NOT NULL, "
    "grouping TEXT NOT NULL CHECK (grouping IN ('layer', 'layer_type')), "
    "shift INTEGER NOT NULL CHECK (shift IN (-1, 0, 1)), windows INTEGER NOT NULL, "
    "concurrent_windows INTEGER NOT NULL DEFAULT 0, windows_unknown INTEGER NOT NULL DEFAULT 0, "
    "shared_gauge INTEGER NOT NULL DEFAULT 0, failed TEXT, state BLOB, "
    "PRIMARY KEY (uuid, system, metric, grouping, shift)) WITHOUT ROWID";

References build_references() {
  References references;
  auto collect = [&](sqlite3* db, const std::string& only_table = "") {
    for (auto& [table, object] : stored_objects(db, "main")) {
      if (!only_table.empty() && table != only_table) continue;
      if (object.type == "view")
        references.views[object.name] = object.sql;
      else if (object.type == "table" && object.name.rfind("sqlite_", 0) != 0)
        references.tables[table].table_sql.insert(object.sql);
      else {
        references.tables[table].others.insert(object);
        references.owners[to_lower(object.name)] = table;
      }
    }
  };
  {
    ReferenceDb current;
    run_script(current.db, embedded_sql("schema"));
    run_script(current.db, embedded_sql("views"));  // views are stored unresolved: no functions needed
    run_script(current.db, embedded_sql("estimates"));
    collect(current.db);
    for (auto& [table, object] : stored_objects(current.db, "main")) references.current.insert(std::move(object));
  }
  {
    // pp_metrics as versions before metric kinds made it, before and after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db, "CREATE TABLE pp_metrics(metric TEXT PRIMARY KEY, column_name TEXT NOT NULL)");
    collect(earlier.db);
    run_script(earlier.db, named_sql("upgrade", "metric_kinds"));
    collect(earlier.db);
  }
  {
    // pp_event_files as versions before file heads made it, before and after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db,
               "CREATE TABLE pp_event_files(source_file TEXT PRIMARY KEY, bytes INTEGER NOT NULL, lines INTEGER NOT NULL)");
    collect(earlier.db);
    run_script(earlier.db, named_sql("upgrade", "event_file_heads"));
    collect(earlier.db);
    run_script(earlier.db, named_sql("upgrade", "event_file_real_paths"));
    collect(earlier.db);
  }
  {
    // pp_event_files as versions before real paths made it, before and after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db,
               "CREATE TABLE pp_event_files(source_file TEXT PRIMARY KEY, bytes INTEGER NOT NULL, lines INTEGER NOT NULL, "
               "head_bytes INTEGER NOT NULL DEFAULT 0, head_hash INTEGER NOT NULL DEFAULT 0)");
    collect(earlier.db);
    run_script(earlier.db, named_sql("upgrade", "event_file_real_paths"));
    collect(earlier.db);
  }
  {
    // pp_gpu_spans as the version before each span's longest event made it, before and after
    // upgrade.sql (whose UPDATE reads pp_events: a stand-in here, not a reference for it).
    ReferenceDb earlier;
    run_script(earlier.db,
               "CREATE TABLE pp_gpu_spans(job_id TEXT NOT NULL, uuid TEXT NOT NULL, first_ns INTEGER NOT NULL, "
               "last_ns INTEGER NOT NULL, events INTEGER NOT NULL, PRIMARY KEY (uuid, job_id)) WITHOUT ROWID;"
               "CREATE TABLE pp_events(job_id, gpu_uuid, folded, t_start_ns, t_end_ns)");
    collect(earlier.db, "pp_gpu_spans");
    run_script(earlier.db, named_sql("upgrade", "gpu_span_longest"));
    collect(earlier.db, "pp_gpu_spans");
  }
  {
    // pp_alignment and pp_windows as versions before stretches kept their window lengths made
    // them, before and after upgrade.sql (whose UPDATEs read pp_intervals and pp_metrics).
    ReferenceDb earlier;
    run_script(earlier.db, kAlignmentBeforeWindowLengths);
    run_script(earlier.db, kWindowsBeforeWindowLengths);
    run_script(earlier.db,
               "CREATE TABLE pp_intervals(uuid, metric, interval_ms, source); CREATE TABLE pp_metrics(metric, kind)");
    collect(earlier.db, "pp_alignment");
    collect(earlier.db, "pp_windows");
    run_script(earlier.db, named_sql("upgrade", "stretch_window_lengths"));
    run_script(earlier.db, named_sql("upgrade", "window_lengths"));
    collect(earlier.db, "pp_alignment");
    collect(earlier.db, "pp_windows");
    run_script(earlier.db, named_sql("upgrade", "alignment_reasons"));
    collect(earlier.db, "pp_alignment");
  }
  {
    // pp_alignment as versions before its reasons made it, before and after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db, kAlignmentBeforeReasons);
    collect(earlier.db, "pp_alignment");
    run_script(earlier.db, named_sql("upgrade", "alignment_reasons"));
    collect(earlier.db, "pp_alignment");
  }
  {
    // report_layers and report_layer_types as versions before data_num was named so, before and
    // after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db,
               "CREATE TABLE report_layers(job_id TEXT NOT NULL, layer TEXT NOT NULL, direction TEXT NOT NULL, "
               "layer_type TEXT, host_name TEXT, windows INTEGER, calls INTEGER, mean_duration_ms REAL, "
               "call_seconds REAL, gpu_util_percent REAL, gpu_mem_mib REAL, dram_active_ratio REAL, "
               "fp32_active_ratio REAL, sm_occupancy_ratio REAL, sm_active_ratio REAL, resolution REAL, note TEXT, "
               "refreshed_at REAL NOT NULL, PRIMARY KEY (job_id, layer, direction));"
               "CREATE TABLE report_layer_types(job_id TEXT NOT NULL, layer_type TEXT NOT NULL, "
               "direction TEXT NOT NULL, layers INTEGER, windows INTEGER, calls INTEGER, mean_duration_ms REAL, "
               "call_seconds REAL, gpu_util_percent REAL, gpu_mem_mib REAL, dram_active_ratio REAL, "
               "fp32_active_ratio REAL, sm_occupancy_ratio REAL, sm_active_ratio REAL, refreshed_at REAL NOT NULL, "
               "PRIMARY KEY (job_id, layer_type, direction));");
    collect(earlier.db, "report_layers");
    collect(earlier.db, "report_layer_types");
    run_script(earlier.db, named_sql("upgrade", "report_layers_data_num"));
    run_script(earlier.db, named_sql("upgrade", "report_layer_types_data_num"));
    collect(earlier.db, "report_layers");
    collect(earlier.db, "report_layer_types");
  }
  {
    // pp_estimator_state as versions before its count of windows off the driver's grid made
    // it, before and after upgrade.sql.
    ReferenceDb earlier;
    run_script(earlier.db, kEstimatorStateBeforeOffGridWindows);
    collect(earlier.db);
    run_script(earlier.db, named_sql("upgrade", "estimator_state_off_grid_windows"));
    collect(earlier.db);
  }
  {
    // pp_events as versions before blocks made it: one row per event (upgrade.sql moves them).
    ReferenceDb earlier;
    run_script(earlier.db,
               "CREATE TABLE pp_events(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, host_name TEXT, ip TEXT, "
               "pod TEXT, namespace TEXT, gpu_uuid TEXT NOT NULL, gpu INTEGER, rank INTEGER, pid INTEGER, "
               "epoch INTEGER, batch INTEGER, layer TEXT NOT NULL, layer_type TEXT, forward INTEGER NOT NULL, "
               "t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL, t_start REAL NOT NULL, t_end REAL NOT NULL, "
               "cpu_num REAL, source_file TEXT NOT NULL, line INTEGER NOT NULL, folded INTEGER NOT NULL DEFAULT 0, "
               "UNIQUE (source_file, line));"
               "CREATE INDEX pp_events_by_gpu_time ON pp_events(gpu_uuid, t_start_ns);"
               "CREATE INDEX pp_events_unfolded ON pp_events(gpu_uuid, t_start_ns) WHERE folded = 0;");
    collect(earlier.db, "pp_events");
  }
  return references;
}

const References& references() {
  static std::once_flag once;
  static References built;
  std::call_once(once, [] { built = build_references(); });
  return built;
}

// A name from the database file as a one-line message shows it: control characters escaped.
std::string shown(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
      out += escaped;
    }
  }
  return out;
}

[[noreturn]] void refuse(const std::string& table, const std::string& problem) {
  // Both causes are named: a database an unreleased intermediate version made (pp_mig_devices
  // before its MIG- check, say) differs as an altered one does, and needs no alarm alone.
  throw Error("table '" + table + "' is not as precisionprobe creates it (" + problem +
              "); nothing was written. The database file was made by a version of precisionprobe this one "
              "cannot upgrade, or altered to run code when the engine writes to it: inspect SELECT type, name, "
              "sql FROM sqlite_schema WHERE tbl_name = '" + table +
              "', or refresh the run's event files into a fresh database");
}

}  // namespace

void verify_attribution_schema(sqlite3* db) {
  const References& expected = references();
  for (const auto& [table, object] : stored_objects(db, "main")) {
    const std::string name = to_lower(object.name);
    if (expected.views.count(name)) {
      if (object.type != "view") refuse(name, "it is a " + object.type + " where the extension keeps a view");
      continue;  // views are replaced when they differ (attribution_views_current)
    }
    // An object named like an attribution table, or defined on one.
    auto it = expected.tables.find(table);
    if (it == expected.tables.end()) it = expected.tables.find(name);
    if (it == expected.tables.end()) {
      // One of the extension's index or trigger names on another table: CREATE ... IF NOT
      // EXISTS would then leave the extension's own missing.
      const auto owner = expected.owners.find(name);
      if (owner != expected.owners.end() && object.type != "table" && object.type != "view")
        refuse(owner->second, "the " + object.type + " '" + shown(object.name) + "' is on table '" + shown(table) +
                                  "', where the extension keeps one of that name on this table");
      continue;
    }
    const std::string& owner = it->first;
    const TableReference& reference = it->second;
    if (name == owner) {
      if (object.type != "table") refuse(owner, "it is a " + object.type + ", not a table");
      if (object.name != owner) refuse(owner, "it is named '" + shown(object.name) + "'");
      if (!reference.table_sql.count(object.sql)) refuse(owner, "its columns or constraints differ");
    } else if (!reference.others.count(object)) {
      refuse(owner, "the " + object.type + " '" + shown(object.name) + "' on it is not the extension's");
    }
  }
}

bool attribution_views_current(sqlite3* db) {
  const References& expected = references();
  size_t matching = 0;
  for (const auto& [table, object] : stored_objects(db, "main")) {
    (void)table;
    const auto it = expected.views.find(object.name);
    if (object.type == "view" && it != expected.views.end()) {
      if (it->second != object.sql) return false;
      ++matching;
    }
  }
  return matching == expected.views.size();
}

bool attribution_schema_current(sqlite3* db) {
  // Tables, indexes and triggers by name (verify_attribution_schema accepts their forms, those
  // an upgrade leaves included), views by their SQL.
  const auto key = [](const StoredObject& o) {
    return std::pair{o.type, o.type == "view" ? o.name + "\n" + o.sql : to_lower(o.name)};
  };
  std::set<std::pair<std::string, std::string>> stored;
  for (const auto& [table, object] : stored_objects(db, "main")) stored.insert(key(object));
  for (const StoredObject& object : references().current)
    if (!stored.count(key(object))) return false;
  return true;
}

namespace {

// The first ATTACHed database (not main, not temp) whose pp_meta holds database_id `id`.
std::optional<std::string> attached_with_id(sqlite3* db, const std::string& id) {
  std::vector<std::string> schemas;
  {
    sqlite3_stmt* list = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_database_list WHERE seq > 1 ORDER BY seq", -1, &list,
                           nullptr) == SQLITE_OK)
      while (sqlite3_step(list) == SQLITE_ROW)
        if (const unsigned char* name = sqlite3_column_text(list, 0))
          schemas.emplace_back(reinterpret_cast<const char*>(name));
    sqlite3_finalize(list);
  }
  for (const std::string& schema : schemas) {
    sqlite3_stmt* read = nullptr;
    bool same = false;
    // (A database without pp_meta, or without the key, is no copy: the statement fails or reads nothing.)
    if (sqlite3_prepare_v2(db, ("SELECT value FROM " + quoted_schema(schema) + ".pp_meta WHERE key = 'database_id'").c_str(), -1,
                           &read, nullptr) == SQLITE_OK &&
        sqlite3_step(read) == SQLITE_ROW && sqlite3_column_text(read, 0))
      same = id == reinterpret_cast<const char*>(sqlite3_column_text(read, 0));
    sqlite3_finalize(read);
    if (same) return schema;
  }
  return std::nullopt;
}

}  // namespace

void refuse_other_database(sqlite3* db, sqlite3_value* database_id) {
  if (!database_id || sqlite3_value_type(database_id) == SQLITE_NULL) return;
  const unsigned char* text = sqlite3_value_text(database_id);
  if (!text) throw std::bad_alloc();
  std::string main_id;
  {
    sqlite3_stmt* read = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT value FROM main.pp_meta WHERE key = 'database_id'", -1, &read, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(read) == SQLITE_ROW && sqlite3_column_text(read, 0))
      main_id = reinterpret_cast<const char*>(sqlite3_column_text(read, 0));
    sqlite3_finalize(read);
  }
  // A database_id is 32 hex digits (schema.sql): anything else is an argument given by position
  // past the function's own, which the hidden column took.
  const std::string given = reinterpret_cast<const char*>(text);
  const bool an_id = given.size() == 32 && given.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!an_id)
    throw Error("argument 'database' ('" + (given.size() > 40 ? given.substr(0, 40) + "..." : given) +
                "') is not a database's id (pp_meta's database_id, which the views pass); a direct call takes no "
                "such argument (too many arguments?)");
  if (main_id != given)
    throw Error("reads the main database's tables, and this call comes from a view of another, ATTACHed, "
                "database (its pp_meta names another database_id): open that database on its own to read its "
                "views, or merge it into this one (docs: Merging databases)");
  // A copy of the main database ATTACHed beside it keeps its identity, so its views pass the
  // same id and would be answered from main: where two databases share it, no call can tell.
  const std::optional<std::string> copy = attached_with_id(db, main_id);
  if (copy)
    throw Error("reads the main database's tables, and the ATTACHed database '" + *copy +
                "' has the main database's database_id (a copy of it): a call from a view cannot tell which of the "
                "two it comes from. Open the copy on its own, or give it an identity of its own first: UPDATE " +
                quoted_schema(*copy) + ".pp_meta SET value = lower(hex(randomblob(16))) WHERE key = 'database_id'");
}

}  // namespace pp
