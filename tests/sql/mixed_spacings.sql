-- One GPU's metrics stored at other spacings (two scrape jobs: the profiling metrics every
-- 100 ms, GPU_UTIL every second), where dcgm-exporter serves them together: the refresh that
-- measures the spacings says so, once, since the align step places one grid per GPU.
SELECT pp_install_views() LIKE 'tables: %';
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 39)
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'mixed', 'GPU-m0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       1700000010000000000 + n * 500000000 + 1234, 1700000010000000000 + n * 500000000 + 300001234,
       1700000010 + n * 0.5, 1700000010 + n * 0.5 + 0.3, 'mixed', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 40)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-m0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', 1700000000000 + n * 1000, 60 FROM i;
WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < 400)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-m0000000-0000-4000-8000-000000000000', 'DCGM_FI_PROF_SM_ACTIVE', 1700000000000 + n * 100 + 37, 0.6 FROM i;
SELECT count(*) = 1 FROM pp_refresh(NULL, 1);
SELECT count(*) = 1 FROM json_each(pp_last_warnings())
 WHERE value = 'pp_refresh: GPU GPU-m0000000-0000-4000-8000-000000000000 has its metrics stored at other spacings '
               || '(DCGM_FI_DEV_GPU_UTIL 1000 ms, DCGM_FI_PROF_SM_ACTIVE 100 ms): dcgm-exporter serves them '
               || 'together, so two scrape jobs at other intervals stored them; the windows are placed on one grid '
               || 'per GPU, which fits only some of them, so its estimates may not be determined: scrape the '
               || 'exporter''s metrics in one job at one interval';
-- The next refresh, the spacings known, says nothing of it again.
SELECT count(*) = 1 FROM pp_refresh(NULL, 1);
SELECT count(*) = 0 FROM json_each(pp_last_warnings()) WHERE value LIKE '%other spacings%';
