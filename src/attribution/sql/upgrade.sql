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

-- name: gpu_span_longest
-- pp_gpu_spans as the version that made it left it, without each span's longest event: filled
-- once from the folded events (-1 for a span none of whose events is still there).
ALTER TABLE main.pp_gpu_spans ADD COLUMN longest_ns INTEGER NOT NULL DEFAULT -1;
UPDATE main.pp_gpu_spans AS g SET longest_ns = coalesce(
  (SELECT max(e.t_end_ns - e.t_start_ns) FROM main.pp_events AS e
    WHERE e.gpu_uuid = g.uuid AND e.job_id = g.job_id AND e.folded = 1
      AND e.t_start_ns >= 0 AND e.t_end_ns >= e.t_start_ns AND e.t_end_ns <= (1 << 62)), -1);
