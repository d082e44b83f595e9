-- A series in another unit than its metric's bounds say (pp_metric_bounds): here
-- DCGM_FI_PROF_SM_ACTIVE, a ratio in [0, 1], exported as a percentage by a relabelling
-- exporter. The fold names it in a warning: the overlap means take the values as they are (a
-- "ratio" of 43.6), the estimates are held to the bounds (1, and identified as such).
-- 'pct' ran one layer on GPU z for 0.5, 0.25, 0.75 and 0.4 s of four 1 s windows from
-- T0 = 1700000700; both GPU_UTIL (a percentage, inside [0, 100]) and SM_ACTIVE read 80 where
-- it ran, 0 between.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH k(n, ms) AS (VALUES (0, 500), (1, 250), (2, 750), (3, 400))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'pct', 'GPU-z0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000700 + n) * 1000000000, (1700000700 + n) * 1000000000 + ms * 1000000,
       1700000700 + n, 1700000700 + n + ms / 1000.0, 'pct', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 6),
     m(metric) AS (VALUES ('DCGM_FI_DEV_GPU_UTIL'), ('DCGM_FI_PROF_SM_ACTIVE'))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-z0000000-0000-4000-8000-000000000000', metric, (1700000700 + n) * 1000,
       CASE n WHEN 1 THEN 40 WHEN 2 THEN 20 WHEN 3 THEN 60 WHEN 4 THEN 32 ELSE 0 END FROM i, m;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 1 FROM json_each(pp_last_warnings()) WHERE value LIKE '%pp_metric_bounds%';
SELECT count(*) = 1 FROM json_each(pp_last_warnings())
 WHERE value = 'pp_refresh: 4 samples of DCGM_FI_PROF_SM_ACTIVE on 1 GPU lie outside its bounds [0, 1] in '
               || 'pp_metric_bounds (the farthest: 60 on GPU-z0000000-0000-4000-8000-000000000000 at ts_ms '
               || '1700000703000): a series in another unit (a ratio exported as a percentage?) or bounds that do '
               || 'not fit it; the overlap means take the values as they are, the estimates are held to the bounds';
SELECT abs(sm_active - 82.8 / 1.9) < 1e-9 AND abs(gpu_util - 82.8 / 1.9) < 1e-9 FROM layer_metrics
 WHERE job_id = 'pct' AND layer = 'mlp';
SELECT abs(estimate - 1) < 1e-9 FROM layer_estimates
 WHERE job_id = 'pct' AND layer = 'mlp' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
-- Each sample is named once: a refresh with nothing new to fold says nothing of them.
SELECT windows_folded = 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 0 FROM json_each(pp_last_warnings()) WHERE value LIKE '%pp_metric_bounds%';
-- A ratio a little above 1 (noise at the bound: within a twentieth of the bounds' span) is
-- not named; a negative memory gauge is, whose bounds have no upper end ([0, none]).
-- 'edge' on GPU y, from T1 = 1700000800: SM_ACTIVE 1.04 and FB_USED -5 in its first window.
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
VALUES ('edge', 'GPU-y0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
        1700000800000000000, 1700000800500000000, 1700000800, 1700000800.5, 'edge', 1);
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 6),
     m(metric, first) AS (VALUES ('DCGM_FI_PROF_SM_ACTIVE', 1.04), ('DCGM_FI_DEV_FB_USED', -5))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-y0000000-0000-4000-8000-000000000000', metric, (1700000800 + n) * 1000,
       CASE n WHEN 1 THEN first ELSE 0 END FROM i, m;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT group_concat(value, ' | ') = 'pp_refresh: 1 sample of DCGM_FI_DEV_FB_USED on 1 GPU lies outside its bounds '
       || '[0, none] in pp_metric_bounds (the farthest: -5 on GPU-y0000000-0000-4000-8000-000000000000 at ts_ms '
       || '1700000801000): a series in another unit (a ratio exported as a percentage?) or bounds that do not fit '
       || 'it; the overlap means take the values as they are, the estimates are held to the bounds'
  FROM json_each(pp_last_warnings()) WHERE value LIKE '%pp_metric_bounds%';
-- Bounds that fit the series (a user's own) silence it.
UPDATE pp_metric_bounds SET upper = 100 WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE';
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
VALUES ('pct', 'GPU-z0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
        1700000706000000000, 1700000706500000000, 1700000706, 1700000706.5, 'pct', 5);
WITH RECURSIVE i(n) AS (SELECT 7 UNION ALL SELECT n + 1 FROM i WHERE n < 10),
     m(metric) AS (VALUES ('DCGM_FI_DEV_GPU_UTIL'), ('DCGM_FI_PROF_SM_ACTIVE'))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-z0000000-0000-4000-8000-000000000000', metric, (1700000700 + n) * 1000,
       CASE n WHEN 7 THEN 40 ELSE 0 END FROM i, m;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 0 FROM json_each(pp_last_warnings()) WHERE value LIKE '%pp_metric_bounds%';
