// prom_label_values: the values of one label, for discovery.
//
//   SELECT value FROM prom_label_values('Hostname');
//   SELECT value FROM prom_label_values('UUID', 'DCGM_FI_DEV_GPU_UTIL{Hostname="node-a"}');
//
// Arguments (hidden columns label, match):
//   label  the label name, e.g. 'UUID' or '__name__' for metric names (required)
//   match  optional series selector restricting the series considered
// Column: value.
#include "core/errors.hpp"
#include "core/sql_values.hpp"
#include "core/text.hpp"
#include "core/table_function.hpp"
#include "prometheus/prom_client.hpp"
#include "prometheus/prometheus_tables.hpp"

namespace pp {
namespace {

const std::vector<ArgumentSpec> kLabelValuesArguments = {{"label", true}, {"match", false}};

struct LabelValuesCursor : RowsCursor {
  static constexpr const char* kName = "prom_label_values";
  static constexpr const char* kSchema = "CREATE TABLE x(value TEXT, label HIDDEN, \"match\" HIDDEN)";
  static constexpr int kFirstArgument = 1;
  static constexpr bool kDirectOnly = true;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    const int rc = plan_arguments(info, kFirstArgument, kLabelValuesArguments);
    if (rc != SQLITE_OK) return rc;
    info->estimatedRows = 100;
    info->estimatedCost = 1e5;
    return SQLITE_OK;
  }

  void filter(int idx_num, int argc, sqlite3_value** argv) {
    const auto args = filter_arguments(idx_num, argc, argv, kLabelValuesArguments.size());
    keep_arguments(args);
    const std::string label = required_nonblank_text(args[0], "label");
    // The name goes into the API's path (/api/v1/label/NAME/values): one holding '/', or dots
    // alone, would name another path, whose 404 would read as a wrong prometheus_url.
    if (label.find('/') != std::string::npos || label.find_first_not_of('.') == std::string::npos)
      throw argument_error("label", "('" + valid_utf8(label, 80) +
                                        "') is not a label name: label names hold no '/' and are not dots alone");
    // An empty match would reach Prometheus as a selector that does not parse; NULL means all.
    const auto match = args[1] && sqlite3_value_type(args[1]) != SQLITE_NULL
                           ? std::optional<std::string>(required_nonblank_text(args[1], "match"))
                           : std::nullopt;
    PromClient client(*connection, kName, serial);
    std::vector<std::vector<SqlValue>> rows;
    for (const std::string& value : *client.label_values(label, match)) rows.push_back({value});
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kPromLabelValuesModule = table_function_module<LabelValuesCursor>();

}  // namespace pp
