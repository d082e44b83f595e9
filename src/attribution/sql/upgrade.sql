-- Upgrades of attribution tables made by earlier versions of the extension (schema.cpp runs
-- the part a database needs before schema.sql).

-- name: metric_kinds
ALTER TABLE main.pp_metrics ADD COLUMN kind TEXT NOT NULL DEFAULT 'window'
  CHECK (kind IN ('window', 'driver_window', 'instant'));
ALTER TABLE main.pp_metrics ADD COLUMN window_ms REAL CHECK (window_ms IS NULL OR window_ms > 0);
UPDATE main.pp_metrics SET kind = 'driver_window' WHERE metric = 'DCGM_FI_DEV_GPU_UTIL';
UPDATE main.pp_metrics SET kind = 'instant' WHERE metric = 'DCGM_FI_DEV_FB_USED';

-- name: event_file_heads
ALTER TABLE main.pp_event_files ADD COLUMN head_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE main.pp_event_files ADD COLUMN head_hash INTEGER NOT NULL DEFAULT 0;

-- name: event_file_real_paths
-- (Filled as files are read again; a file read before is matched by resolving its name then.)
ALTER TABLE main.pp_event_files ADD COLUMN real_path TEXT;

-- name: gpu_span_longest
-- pp_gpu_spans as the version that made it left it, without each span's longest event. Its spans
-- could also hold events whose times cannot be a call (which that version folded): recomputed
-- from the folded events that can, in one pass. A span none of whose events is left keeps its
-- bounds, with longest 0: deleted events reach into no window.
ALTER TABLE main.pp_gpu_spans ADD COLUMN longest_ns INTEGER NOT NULL DEFAULT 0;
UPDATE main.pp_gpu_spans AS g
   SET first_ns = u.first_ns, last_ns = u.last_ns, events = u.events, longest_ns = u.longest_ns
  FROM (SELECT e.gpu_uuid AS uuid, e.job_id, min(e.t_start_ns) AS first_ns, max(e.t_end_ns) AS last_ns,
               count(*) AS events, max(e.t_end_ns - e.t_start_ns) AS longest_ns
          FROM main.pp_events AS e
         WHERE e.folded = 1 AND e.t_start_ns >= 0 AND e.t_end_ns >= e.t_start_ns AND e.t_end_ns <= (1 << 62)
         GROUP BY e.gpu_uuid, e.job_id) AS u
 WHERE u.uuid = g.uuid AND u.job_id = g.job_id;

-- name: stretch_window_lengths
-- That version gave every window the length of pp_intervals. Where that is still the median
-- spacing, its stretches keep it (a stretch aligned later may tell the length, but their windows
-- may be folded already); where the data told it, NULL keeps that.
ALTER TABLE main.pp_alignment ADD COLUMN window_ms REAL;
ALTER TABLE main.pp_alignment ADD COLUMN util_window_ms REAL;
UPDATE main.pp_alignment AS a
   SET window_ms = (SELECT max(i.interval_ms) FROM main.pp_intervals AS i JOIN main.pp_metrics AS m USING (metric)
                     WHERE i.uuid = a.uuid AND i.source = 'median' AND m.kind <> 'driver_window'),
       util_window_ms = (SELECT max(i.interval_ms) FROM main.pp_intervals AS i JOIN main.pp_metrics AS m USING (metric)
                          WHERE i.uuid = a.uuid AND i.source = 'median' AND m.kind = 'driver_window');

-- name: window_lengths
-- Each window gets its stretch's (after stretch_window_lengths).
ALTER TABLE main.pp_windows ADD COLUMN window_ms REAL;
ALTER TABLE main.pp_windows ADD COLUMN util_window_ms REAL;
UPDATE main.pp_windows AS w
   SET (window_ms, util_window_ms) = (SELECT a.window_ms, a.util_window_ms FROM main.pp_alignment AS a
                                       WHERE a.uuid = w.uuid AND a.from_ms < w.ts_ms ORDER BY a.from_ms DESC LIMIT 1);

-- name: report_layers_data_num
-- report_layers as versions before it was named for what it counts: (call, window) pairs, as
-- layer_metrics.data_num, which it is.
ALTER TABLE main.report_layers RENAME COLUMN windows TO data_num;

-- name: report_layer_types_data_num
ALTER TABLE main.report_layer_types RENAME COLUMN windows TO data_num;

-- name: event_blocks
-- pp_events as a table of one row per event, as versions before blocks made it: its rows go into
-- blocks, folded ones folded; a row without a layer type (only an insert of the user's made one)
-- gets the type '' that a line with an empty type has, since pp_events now refuses a NULL type.
-- (With legacy_alter_table on, schema.cpp's rename leaves views and triggers that name pp_events
-- naming the new table.)
CREATE VIRTUAL TABLE main.pp_events USING pp_event_store;
INSERT INTO main.pp_events(job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer,
                           layer_type, forward, t_start_ns, t_end_ns, cpu_num, source_file, line, folded)
SELECT job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer,
       coalesce(layer_type, ''), forward, t_start_ns, t_end_ns, cpu_num, source_file, line, folded
  FROM main.pp_events_before_blocks ORDER BY gpu_uuid, source_file, line;
DROP TABLE main.pp_events_before_blocks;

-- name: estimator_state_off_grid_windows
-- pp_estimator_state as versions before windows off the driver's grid were left out made it:
-- their rows keep windows_unknown (such windows fitted on DCGM's), and none was counted.
ALTER TABLE main.pp_estimator_state ADD COLUMN off_grid_windows INTEGER NOT NULL DEFAULT 0;

-- name: alignment_reasons
-- pp_alignment as versions before stretches said why they were not estimated made it: its
-- stretches keep no reason (NULL, as an estimated one's).
ALTER TABLE main.pp_alignment ADD COLUMN reason TEXT;

-- name: report_every_job
-- Views of another version (or altered ones) were replaced: every job's report rows are written
-- again from the new ones by the next refresh.
INSERT INTO main.pp_report_pending(job_id)
SELECT job_id
  FROM (SELECT job_id FROM main.pp_layers UNION SELECT job_id FROM main.report_layers
        UNION SELECT job_id FROM main.report_layer_types UNION SELECT job_id FROM main.report_jobs)
 WHERE job_id NOT IN (SELECT job_id FROM main.pp_report_pending);
