// pp_estimator_states: the estimator's whole state of this database, as rows of
// pp_estimator_state: the stored state of the windows retention removed, with every window
// still stored added. Nothing is written. Another database adds them to its own state (its
// GPUs' rows are its own), and its estimates are then those of one database holding both:
//
//   -- in the database of host B
//   CREATE TABLE estimator_export AS SELECT * FROM pp_estimator_states;
//   -- in the database of host A
//   ATTACH 'host-b.db' AS b;
//   INSERT INTO pp_estimator_state SELECT * FROM b.estimator_export;
//   INSERT INTO pp_gpu_spans SELECT * FROM b.pp_gpu_spans;  -- which jobs shared a GPU there
//   INSERT OR IGNORE INTO pp_layers SELECT * FROM b.pp_layers;  -- its layers, for layer_estimates
//
// Columns: those of pp_estimator_state (docs/reference/attribution.md#pp_estimator_state).
// INNOCUOUS: it reads only tables of the database it runs in.
#include <set>

#include "attribution/attribution_tables.hpp"
#include "attribution/estimator_state.hpp"
#include "attribution/gpu_timeline.hpp"
#include "core/sql_values.hpp"
#include "core/statement.hpp"
#include "core/table_function.hpp"

namespace pp {
namespace {

struct EstimatorStatesCursor : RowsCursor {
  static constexpr const char* kName = "pp_estimator_states";
  static constexpr const char* kSchema =
      "CREATE TABLE x(uuid TEXT, system TEXT, metric TEXT, grouping TEXT, shift INTEGER, windows INTEGER, "
      "concurrent_windows INTEGER, windows_unknown INTEGER, shared_gauge INTEGER, failed TEXT, state BLOB, "
      "off_grid_windows INTEGER)";
  static constexpr int kFirstArgument = 12;
  static constexpr bool kDirectOnly = false;
  using RowsCursor::RowsCursor;

  static int plan(sqlite3_index_info* info) {
    info->estimatedRows = 1000;
    info->estimatedCost = 1e7;
    return SQLITE_OK;
  }

  void filter(int, int, sqlite3_value**) {
    sqlite3* db = connection->db();
    // The GPUs with windows, and those whose windows are all in states (removed, or imported).
    std::set<std::string> gpus;
    {
      Statement list(db, has_estimator_state_table(db) ? "SELECT uuid FROM main.pp_alignment UNION SELECT uuid FROM main.pp_estimator_state"
                                : "SELECT uuid FROM main.pp_alignment");
      while (list.step()) gpus.insert(list.column_text(0));
    }
    std::vector<std::vector<SqlValue>> rows;
    auto optional_text = [](const std::optional<std::string>& v) { return v ? SqlValue(*v) : SqlValue(); };
    SqlRelay here;  // (one thread: its SQL runs as it comes)
    const int64_t horizon_ms = timing_horizon_ms(connection->settings().get_int("event_retention_minutes"));
    for (const std::string& uuid : gpus)
      for (EstimatorStateRow& r : estimator_state_rows(db, uuid, std::nullopt, true, horizon_ms, here))
        rows.push_back({r.uuid, r.system, r.metric, r.grouping, int64_t{r.shift}, r.windows, r.concurrent_windows,
                        int64_t{r.windows_unknown ? 1 : 0}, int64_t{r.shared_gauge ? 1 : 0}, optional_text(r.failed),
                        r.state ? SqlValue(SqlBlob{std::move(*r.state)}) : SqlValue(), r.off_grid_windows});
    set_rows(std::move(rows));
  }
};

}  // namespace

const sqlite3_module kEstimatorStatesModule = table_function_module<EstimatorStatesCursor>();

}  // namespace pp
