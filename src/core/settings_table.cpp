// pp_settings: every setting of this connection with its current value, type, default and
// description. Secrets are masked exactly as pp_config(key) masks them.
//
//   SELECT name, value, description FROM pp_settings;
//   SELECT pp_config('timeout_ms', 5000);   -- change one
#include "core/core_functions.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

struct SettingsCursor : RowsCursor {
  static constexpr const char* kName = "pp_settings";
  static constexpr const char* kSchema =
      "CREATE TABLE x(name TEXT, value TEXT, type TEXT, default_value TEXT, description TEXT)";
  static constexpr int kFirstArgument = 5;
  // The connection's settings (the Prometheus URL's host and user, token file paths): never
  // read by a database file's views or triggers into what a user is shown.
  static constexpr bool kDirectOnly = true;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    info->estimatedRows = static_cast<sqlite3_int64>(setting_definitions().size());
    info->estimatedCost = 10;
    return SQLITE_OK;
  }

  void filter(int, int, sqlite3_value**) {
    std::vector<std::vector<SqlValue>> rows;
    for (const SettingDefinition& d : setting_definitions())
      rows.push_back({std::string(d.name), connection->settings().display(d.name),
                      std::string(setting_type_name(d.type)), std::string(d.default_value),
                      std::string(d.description)});
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kSettingsModule = table_function_module<SettingsCursor>();

}  // namespace pp
