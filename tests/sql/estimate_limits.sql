-- The estimator's limits hold per system: a system it cannot solve says so in its own rows and
-- the other systems are solved as ever.
-- 'wide' ran 1,001 distinct layers (forward) on GPU w, 2 ms each from T0 = 1700000700, one
-- after the other: 1,001 unknowns and its untracked time, past the 1,000 of one system.
-- 'narrow' ran one layer on GPU x for 0.5, 0.25, 0.75 and 0.4 s of four 1 s windows: 80 where
-- it ran, 0 between.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 1000)
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'wide', 'GPU-w0000000-0000-4000-8000-000000000000', 'layer' || n, 'Linear', 1,
       1700000700000000000 + n * 2000000, 1700000700000000000 + n * 2000000 + 2000000,
       1700000700 + n * 0.002, 1700000700 + n * 0.002 + 0.002, 'wide', n + 1
  FROM k;
WITH k(n, ms) AS (VALUES (0, 500), (1, 250), (2, 750), (3, 400))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'narrow', 'GPU-x0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000700 + n) * 1000000000, (1700000700 + n) * 1000000000 + ms * 1000000,
       1700000700 + n, 1700000700 + n + ms / 1000.0, 'narrow', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 6)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-w0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000700 + n) * 1000, 90 FROM i
UNION ALL
SELECT 'GPU-x0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000700 + n) * 1000,
       CASE n WHEN 1 THEN 40 WHEN 2 THEN 20 WHEN 3 THEN 60 WHEN 4 THEN 32 ELSE 0 END FROM i;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);

-- Every layer of 'wide' has its row (its layers leave no untracked time), none with an
-- estimate, the bounds as interval, and why.
SELECT count(*) = 1001 AND count(estimate) = 0 AND sum(identified) = 0 AND min(lower90) = 0 AND max(upper90) = 100
   AND min(reason) = max(reason)
   AND min(reason) = 'more than 1000 layers and directions in one system (layer_type_estimates has fewer)'
  FROM pp_estimates('layer') WHERE job_id = 'wide' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- Per layer type it is one unknown (Linear), and solved.
SELECT count(*) = 1 AND count(estimate) = 1 FROM pp_estimates('layer_type') WHERE job_id = 'wide'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- 'narrow' is solved as if 'wide' were not there.
SELECT abs(estimate - 80) < 1e-6 AND confidence = 'identified' FROM layer_estimates
 WHERE job_id = 'narrow' AND layer = 'mlp' AND metric = 'DCGM_FI_DEV_GPU_UTIL';

-- Once retention has moved its windows into the estimator's state, 'wide' still says why: the
-- state keeps the reason, not a fit. (A call and samples five minutes on move the fold point.)
SELECT pp_config('event_retention_minutes', 1) = '1';
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
VALUES ('wide', 'GPU-w0000000-0000-4000-8000-000000000000', 'layer0', 'Linear', 1, 1700001000000000000,
        1700001000002000000, 1700001000, 1700001000.002, 'wide', 1002);
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 6)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-w0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700001000 + n) * 1000, 90 FROM i;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 3 AND min(failed) = max(failed)
   AND min(failed) = 'more than 1000 layers and directions in one system (layer_type_estimates has fewer)'
   AND count(state) = 0
  FROM pp_estimator_state WHERE system = 'wide' AND grouping = 'layer';
-- (The state of a system that failed keeps no unknowns: the rows are those of the layers in the
-- windows still stored, here layer0 and the untracked time.)
SELECT count(*) = 2 AND count(estimate) = 0 AND min(reason) = max(reason)
   AND min(reason) = 'more than 1000 layers and directions in one system (layer_type_estimates has fewer)'
  FROM pp_estimates('layer') WHERE job_id = 'wide' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 3 AND count(failed) = 0 AND min(windows) > 0
  FROM pp_estimator_state WHERE system = 'wide' AND grouping = 'layer_type';
