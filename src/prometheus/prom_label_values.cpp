// prom_label_values: the values of one label, for discovery.
//
//   SELECT value FROM prom_label_values('Hostname');
//   SELECT value FROM prom_label_values('UUID', 'DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}');
//
// Arguments (hidden columns label, match):
//   label  the label name, e.g. 'UUID' or '__name__' for metric names (required)
//   match  optional series selector restricting the series considered
// Column: value.
#include "prometheus/prom_api.hpp"
#include "core/registry.hpp"
#include "core/sql_values.hpp"
#include "core/text_rows_cursor.hpp"

namespace pp {
namespace {

constexpr const char* kName = "prom_label_values";
const std::vector<ArgumentSpec> kArguments = {{"label", true}, {"match", false}};

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** error) {
  return connect_table(db, aux, "CREATE TABLE x(value TEXT, label HIDDEN, \"match\" HIDDEN)",
                       /*does_io=*/true, out, error);
}

int xBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const int rc = plan_arguments(vtab, info, kName, /*first_argument_column=*/1, kArguments);
  info->estimatedRows = 100;
  info->estimatedCost = 1e5;
  return rc;
}

int xFilter(sqlite3_vtab_cursor* base, int idx_num, const char*, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<TextRowsCursor*>(base);
  return guard_vtab(base->pVtab, kName, [&] {
    const auto args = filter_arguments(idx_num, argc, argv, kArguments.size());
    const std::string label = required_text(args[0], kName, "label");
    const auto match = args[1] ? optional_text(args[1]) : std::nullopt;
    PromClient client(*cursor->connection, kName);
    std::vector<TextRow> rows;
    for (const std::string& value : *client.label_values(label, match)) rows.push_back({value});
    cursor->start(std::move(rows), args);
    return SQLITE_OK;
  });
}

sqlite3_module make_module() {
  sqlite3_module m{};
  fill_text_rows_module<1>(m);
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xFilter = xFilter;
  return m;
}

const sqlite3_module kModule = make_module();

}  // namespace

int register_prom_label_values(const Registration& r) {
  return create_connection_module(r, kName, &kModule);
}

}  // namespace pp
