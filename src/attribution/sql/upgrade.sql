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
