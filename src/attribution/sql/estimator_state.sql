-- The statements of the estimator's state (src/attribution/estimator_state.cpp), one named part
-- each.

-- name: has_table
SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND name = 'pp_estimator_state';

-- name: has_off_grid_windows
-- 0 in a table an earlier version made that pp_install_views has not upgraded (a read-only file).
SELECT count(*) FROM pragma_table_info('pp_estimator_state', 'main') WHERE name = 'off_grid_windows';

-- name: read_gpu
SELECT system, metric, grouping, shift, windows, concurrent_windows, windows_unknown, shared_gauge, failed, state,
       off_grid_windows
  FROM main.pp_estimator_state WHERE uuid = :uuid;

-- name: read_system
SELECT system, metric, grouping, shift, windows, concurrent_windows, windows_unknown, shared_gauge, failed, state,
       off_grid_windows
  FROM main.pp_estimator_state WHERE uuid = :uuid AND system = :system;

-- name: read_one
SELECT system, metric, grouping, shift, windows, concurrent_windows, windows_unknown, shared_gauge, failed, state,
       off_grid_windows
  FROM main.pp_estimator_state
 WHERE uuid = :uuid AND system = :system AND metric = :metric AND grouping = :grouping AND shift = :shift;

-- name: write
-- The row as estimator_state_rows() made it: the stored one with the new windows added.
INSERT OR REPLACE INTO main.pp_estimator_state(uuid, system, metric, grouping, shift, windows, concurrent_windows,
                                               windows_unknown, shared_gauge, failed, state, off_grid_windows)
VALUES (:uuid, :system, :metric, :grouping, :shift, :windows, :concurrent_windows, :windows_unknown, :shared_gauge,
        :failed, :state, :off_grid_windows);

-- name: read_grouping
-- (The columns of read_gpu, and the GPU's uuid last.)
SELECT system, metric, grouping, shift, windows, concurrent_windows, windows_unknown, shared_gauge, failed, state,
       off_grid_windows, uuid
  FROM main.pp_estimator_state WHERE grouping = :grouping AND shift = :shift ORDER BY uuid, system, metric;
