-- The statements of the estimator's state (src/attribution/estimator_state.cpp), one named part
-- each.

-- name: read_one
SELECT state FROM main.pp_estimator_state
 WHERE uuid = :uuid AND system = :system AND metric = :metric AND grouping = :grouping AND shift = :shift;

-- name: write
-- The state passed is the stored one with the new windows merged in; the notes add up.
INSERT INTO main.pp_estimator_state(uuid, system, metric, grouping, shift, windows, concurrent_windows,
                                    windows_unknown, shared_gauge, failed, state)
VALUES (:uuid, :system, :metric, :grouping, :shift, :windows, :concurrent_windows, :windows_unknown, :shared_gauge,
        :failed, :state)
ON CONFLICT (uuid, system, metric, grouping, shift) DO UPDATE SET
  windows = CASE WHEN excluded.state IS NULL THEN windows ELSE excluded.windows END,
  concurrent_windows = concurrent_windows + excluded.concurrent_windows,
  windows_unknown = max(windows_unknown, excluded.windows_unknown),
  shared_gauge = max(shared_gauge, excluded.shared_gauge),
  failed = coalesce(failed, excluded.failed),
  state = coalesce(excluded.state, state);

-- name: read_grouping
SELECT system, metric, concurrent_windows, windows_unknown, shared_gauge, failed, state
  FROM main.pp_estimator_state WHERE grouping = :grouping AND shift = :shift ORDER BY uuid, system, metric;
