// The estimator's state: the windows that the retention step removes (event_retention_minutes)
// stay in the estimator's systems as sums (stats/least_squares_state.hpp), one row of
// pp_estimator_state per GPU, system, metric, grouping and timing shift. pp_estimates solves
// each system from its state and the windows still stored, which is the same fit as from every
// window, so the estimator keeps learning for the whole job while the database keeps minutes.
//
//   SELECT uuid, system, metric, grouping, shift, windows FROM pp_estimator_state;
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attribution/estimator_systems.hpp"
#include "core/sql_relay.hpp"
#include "core/sqlite_api.hpp"

namespace pp {

// Whether the database has pp_estimator_state: one made by a version without it has no state
// until pp_install_views or pp_refresh adds the table (the windows its retention removed are gone).
bool has_estimator_state_table(sqlite3* db);

// A row of pp_estimator_state.
struct EstimatorStateRow {
  std::string uuid, system, metric, grouping;
  int shift = 0;
  int64_t windows = 0, concurrent_windows = 0;
  bool windows_unknown = false, shared_gauge = false;
  std::optional<std::string> failed, state;  // state: the encoded LeastSquaresState
  int64_t off_grid_windows = 0;
};

// The GPU's rows of pp_estimator_state with its windows stored at or before through_ms (every
// window: none) added to them, both groupings and every timing shift: every row of the GPU, or
// only those the windows add to; nothing is written. SQLite is called through sql only.
// horizon_ms: which stretches time each window (timing_horizon_ms).
std::vector<EstimatorStateRow> estimator_state_rows(sqlite3* db, const std::string& uuid,
                                                   std::optional<int64_t> through_ms, bool every_row,
                                                   int64_t horizon_ms, SqlRelay& sql);

// Refresh step: the GPU's windows stored at or before through_ms join its state, before the
// retention removes them with their events (GPUs on two threads: SQLite through sql only).
void keep_estimator_state(sqlite3* db, const std::string& uuid, int64_t through_ms, int64_t horizon_ms, SqlRelay& sql);
// The rows as estimator_state_rows() made them, into pp_estimator_state.
void write_estimator_state(sqlite3* db, const std::vector<EstimatorStateRow>& rows);

// pp_estimates: the states of one grouping and shift added to its systems (a system whose
// windows are all in states gets its bounds here), their unknowns and notes to the others'.
// A state kept while its jobs ran alone joins the system they are part of now.
void add_estimator_state(sqlite3* db, bool by_type, int shift, const std::map<std::string, Bounds>& bounds,
                         const JobSharing& sharing, std::map<SystemKey, DeconvolveData>& systems,
                         SystemUnknowns& unknowns, std::map<SystemKey, SystemNotes>& notes);

}  // namespace pp
