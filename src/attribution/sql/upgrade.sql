-- Upgrades of attribution tables made by earlier versions of the extension (schema.cpp runs
-- the part a database needs before schema.sql).

-- name: metric_kinds
ALTER TABLE main.pp_metrics ADD COLUMN kind TEXT NOT NULL DEFAULT 'window'
  CHECK (kind IN ('window', 'driver_window', 'instant'));
ALTER TABLE main.pp_metrics ADD COLUMN window_ms REAL CHECK (window_ms IS NULL OR window_ms > 0);
UPDATE main.pp_metrics SET kind = 'driver_window' WHERE metric = 'DCGM_FI_DEV_GPU_UTIL';
UPDATE main.pp_metrics SET kind = 'instant' WHERE metric = 'DCGM_FI_DEV_FB_USED';
