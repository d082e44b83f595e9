-- Sample values no GPU counter gives (+Inf, -Inf, 1e308 stored from Prometheus) are left out of
-- the fold and the estimator like NaN, with a warning, instead of failing every refresh.
-- 'narrow' ran one layer on GPU x for 0.5, 0.25, 0.75 and 0.4 s of four 1 s windows from
-- T0 = 1700000700 (80 where it ran, 0 between), then 0.5 s of three windows whose samples hold
-- +Inf, -Inf and 1e308.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH k(n, ms) AS (VALUES (0, 500), (1, 250), (2, 750), (3, 400), (6, 500), (7, 500), (8, 500))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'narrow', 'GPU-x0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000700 + n) * 1000000000, (1700000700 + n) * 1000000000 + ms * 1000000,
       1700000700 + n, 1700000700 + n + ms / 1000.0, 'narrow', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 11)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-x0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000700 + n) * 1000,
       CASE n WHEN 1 THEN 40 WHEN 2 THEN 20 WHEN 3 THEN 60 WHEN 4 THEN 32
              WHEN 7 THEN 9e999 WHEN 8 THEN -9e999 WHEN 9 THEN 1e308 ELSE 0 END FROM i;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 1 FROM json_each(pp_last_warnings())
 WHERE value = 'pp_refresh: 3 samples in pp_samples are not numbers, not finite, or beyond 1e150 in magnitude (the first: '
               || 'DCGM_FI_DEV_GPU_UTIL of GPU-x0000000-0000-4000-8000-000000000000 at ts_ms 1700000707000: Inf); '
               || 'they are left out, like NaN';
-- The stored values stay as Prometheus gave them.
SELECT count(*) = 3 FROM pp_samples WHERE abs(value) > 1e150;
-- The windows with a usable value: the overlap-weighted mean (40 x 0.5 + 20 x 0.25 + 60 x 0.75
-- + 32 x 0.4) / 1.9, and the estimate 80, identified.
SELECT data_num = 4 AND abs(gpu_util - 82.8 / 1.9) < 1e-9 FROM layer_metrics WHERE job_id = 'narrow' AND layer = 'mlp';
SELECT abs(estimate - 80) < 1e-6 AND confidence = 'identified' FROM layer_estimates
 WHERE job_id = 'narrow' AND layer = 'mlp' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- Text or a BLOB in the REAL column ('NaN' or an empty field of a CSV imported by hand, which
-- SQLite keeps as text) is no number either: left out with the same warning, not read as 0.
-- 'texts' ran 0.5 s of each of five 1 s windows on GPU y from T1 = 1700000800, whose samples
-- hold 40, 'NaN', a BLOB, '' and 40.
WITH k(n) AS (VALUES (0), (1), (2), (3), (4))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'texts', 'GPU-y0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000800 + n) * 1000000000, (1700000800 + n) * 1000000000 + 500000000,
       1700000800 + n, 1700000800 + n + 0.5, 'texts', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 7)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-y0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000800 + n) * 1000,
       CASE n WHEN 1 THEN 40 WHEN 2 THEN 'NaN' WHEN 3 THEN x'00' WHEN 4 THEN '' WHEN 5 THEN 40 ELSE 0 END FROM i;
SELECT count(*) = 3 FROM pp_samples WHERE typeof(value) IN ('text', 'blob');
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 1 FROM json_each(pp_last_warnings())
 WHERE value = 'pp_refresh: 3 samples in pp_samples are not numbers, not finite, or beyond 1e150 in magnitude (the '
               || 'first: DCGM_FI_DEV_GPU_UTIL of GPU-y0000000-0000-4000-8000-000000000000 at ts_ms 1700000802000: '
               || 'the text ''NaN''); they are left out, like NaN';
SELECT data_num = 2 AND abs(gpu_util - 40) < 1e-9 FROM layer_metrics WHERE job_id = 'texts' AND layer = 'mlp';
