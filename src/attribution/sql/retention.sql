-- The statements of pp_refresh's retention step (src/attribution/retention.cpp), one named part
-- each. With event_retention_minutes = M (> 0), each GPU keeps the stored samples (and their
-- windows) of the last M minutes before its fold point, and the folded events that can reach
-- into them; what the fold step has put into layer_state is never needed again, and what it
-- has not folded yet is never dropped.

-- name: cuts
-- Per GPU with folded windows: samples stored at or before samples_through_ms go, and folded
-- events that end before events_before_ns (two of the GPU's longest windows and the exporter's
-- lag earlier, so that no kept window, nor its copy moved by the estimator's timing shift,
-- reaches an event that went; a kept window may have the length its stretch was aligned with).
-- CPU events have no samples: they go M minutes before the last folded one.
DELETE FROM main.pp_refresh_retention_cuts;
INSERT INTO main.pp_refresh_retention_cuts(uuid, samples_through_ms, events_before_ns)
SELECT uuid, through_ms, (through_ms - reach_ms) * 1000000
  FROM (SELECT f.uuid, f.folded_through_ms - :keep_ms AS through_ms,
               CAST(2 * max(coalesce((SELECT max(interval_ms) FROM main.pp_intervals AS i WHERE i.uuid = f.uuid), 0),
                            coalesce((SELECT max(max(coalesce(a.window_ms, 0), coalesce(a.util_window_ms, 0)))
                                        FROM main.pp_alignment AS a
                                       WHERE a.uuid = f.uuid
                                         AND a.from_ms >= coalesce((SELECT max(from_ms) FROM main.pp_alignment
                                                                     WHERE uuid = f.uuid
                                                                       AND from_ms < f.folded_through_ms - :keep_ms), 0)), 0))
                    + :lag_ms + 1 AS INTEGER) AS reach_ms
          FROM main.pp_fold_state AS f)
 WHERE through_ms - reach_ms > 0;
INSERT INTO main.pp_refresh_retention_cuts(uuid, samples_through_ms, events_before_ns)
SELECT 'cpu', NULL, max(last_ns) - :keep_ms * 1000000 FROM main.pp_gpu_spans WHERE uuid = 'cpu'
HAVING max(last_ns) - :keep_ms * 1000000 > 0;

-- name: cuts_list
SELECT uuid, samples_through_ms, events_before_ns FROM main.pp_refresh_retention_cuts ORDER BY uuid;

-- name: drop_events
-- The blocks of the GPU all of whose events are folded and end before the cut (one index range;
-- a block reaching the cut stays whole); each file's dropped events are counted first.
INSERT INTO main.pp_dropped_events(source_file, events, last_end_ns)
SELECT source_file, sum(events), max(last_end_ns) FROM main.pp_events_blocks
 WHERE gpu_uuid = :uuid AND first_start_ns < :before_ns AND last_start_ns < :before_ns AND last_end_ns < :before_ns
   AND folded_through_ns >= last_start_ns
 GROUP BY source_file
ON CONFLICT (source_file) DO UPDATE SET events = events + excluded.events,
  last_end_ns = max(last_end_ns, excluded.last_end_ns);
DELETE FROM main.pp_events_blocks
 WHERE gpu_uuid = :uuid AND first_start_ns < :before_ns AND last_start_ns < :before_ns AND last_end_ns < :before_ns
   AND folded_through_ns >= last_start_ns;

-- name: drop_samples
-- One index range per series (the primary key of pp_samples), and the windows of those times.
DELETE FROM main.pp_samples
 WHERE uuid = :uuid AND metric IN (SELECT metric FROM main.pp_refresh_series WHERE uuid = :uuid) AND ts_ms <= :through_ms;
DELETE FROM main.pp_windows WHERE uuid = :uuid AND ts_ms <= :through_ms;

-- name: stored_events
-- The events folded so far (each is in pp_gpu_spans once): what the database holds without retention.
SELECT coalesce(sum(events), 0) FROM main.pp_gpu_spans;
