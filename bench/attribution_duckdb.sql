-- layer_metrics in DuckDB, with the semantics of src/attribution/sql/fold.sql (bench/attribution_bench.py runs it
-- through bench/attribution_duckdb.mjs). Input tables, loaded from the benchmark's CSV files:
--   events(job_id, layer, forward, gpu_uuid, t_start_ns, t_end_ns)   exact integer ns
--   samples(uuid, metric, ts_ms, value)                               a sample covers (ts - interval, ts]
--   intervals(uuid, metric, interval_ms)
-- An event takes each sample of its GPU whose window it overlaps, weighted by the overlap in ns;
-- what the windows of a job's span on a GPU hold beyond its events is the job's '(untracked)'
-- row. Result: one row per (job_id, layer, forward): data_num (GPU_UTIL pairs), the six
-- overlap-weighted means, calls and mean duration. The benchmark's jobs never share a GPU; where
-- jobs do, the engine also subtracts the other jobs' events inside a job's span from its
-- untracked time (src/attribution/interval_sweep.hpp), which this query leaves out.
--
-- Range join: DuckDB plans `ON e.gpu_uuid = s.uuid AND <overlap>` as a hash join on the GPU
-- with the overlap as a residual filter (every event against every sample of its GPU), so the
-- samples are bucketed by ts_ms / ${BUCKET_MS} (the longest interval) and each event is
-- expanded to the 1-3 buckets its overlapping samples can lie in: an equi-join on
-- (GPU, bucket), then the exact overlap test. ${BUCKET_MS} is replaced by the runner.
CREATE OR REPLACE TEMP TABLE result AS
WITH windows AS (
  SELECT s.uuid, s.metric, s.ts_ms, s.value, s.ts_ms * 1000000 AS end_ns,
         (s.ts_ms - i.interval_ms) * 1000000 AS start_ns
    FROM samples AS s JOIN intervals AS i USING (uuid, metric)),
event_buckets AS (
  SELECT job_id, layer, forward, gpu_uuid, t_start_ns, t_end_ns,
         unnest(range(t_start_ns // 1000000 // ${BUCKET_MS},
                      (t_end_ns // 1000000 + ${BUCKET_MS}) // ${BUCKET_MS} + 1)) AS bucket
    FROM events),
pairs AS (
  SELECT e.job_id, e.layer, e.forward, w.uuid, w.metric, w.ts_ms, w.value,
         least(e.t_end_ns, w.end_ns) - greatest(e.t_start_ns, w.start_ns) AS weight_ns
    FROM event_buckets AS e
    JOIN windows AS w ON w.uuid = e.gpu_uuid AND w.ts_ms // ${BUCKET_MS} = e.bucket
   WHERE e.t_start_ns < w.end_ns AND e.t_end_ns > w.start_ns),
spans AS (
  SELECT job_id, gpu_uuid AS uuid, min(t_start_ns) AS first_ns, max(t_end_ns) AS last_ns
    FROM events GROUP BY job_id, gpu_uuid),
covered AS (
  SELECT job_id, uuid, metric, ts_ms, sum(weight_ns) AS covered_ns
    FROM pairs GROUP BY job_id, uuid, metric, ts_ms),
untracked AS (
  SELECT j.job_id, '(untracked)' AS layer, 0 AS forward, w.uuid, w.metric, w.ts_ms, w.value,
         greatest(0, least(w.end_ns, j.last_ns) - greatest(w.start_ns, j.first_ns)
                     - coalesce(c.covered_ns, 0)) AS weight_ns
    FROM windows AS w
    JOIN spans AS j ON j.uuid = w.uuid AND w.end_ns > j.first_ns AND w.start_ns < j.last_ns
    LEFT JOIN covered AS c
      ON c.job_id = j.job_id AND c.uuid = w.uuid AND c.metric = w.metric AND c.ts_ms = w.ts_ms),
means AS (
  SELECT job_id, layer, forward, metric, count(*) AS n,
         sum(value * weight_ns) / sum(weight_ns) AS mean
    FROM (SELECT * FROM pairs UNION ALL SELECT * FROM untracked)
   WHERE weight_ns > 0 AND value IS NOT NULL
   GROUP BY job_id, layer, forward, metric),
durations AS (
  SELECT job_id, layer, forward, count(*) AS calls, avg(t_end_ns - t_start_ns) / 1e6 AS mean_duration_ms
    FROM events GROUP BY job_id, layer, forward),
layers AS (
  SELECT job_id, layer, forward FROM durations
  UNION SELECT job_id, layer, forward FROM means)
SELECT l.job_id, l.layer, l.forward,
       coalesce(max(CASE m.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN m.n END), 0) AS data_num,
       max(CASE m.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN m.mean END) AS gpu_util,
       max(CASE m.metric WHEN 'DCGM_FI_DEV_FB_USED' THEN m.mean END) AS gpu_mem,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_DRAM_ACTIVE' THEN m.mean END) AS dram_active,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_PIPE_FP32_ACTIVE' THEN m.mean END) AS fp32_active,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_SM_OCCUPANCY' THEN m.mean END) AS sm_occupancy,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_SM_ACTIVE' THEN m.mean END) AS sm_active,
       max(d.calls) AS calls, max(d.mean_duration_ms) AS mean_duration_ms
  FROM layers AS l
  LEFT JOIN means AS m USING (job_id, layer, forward)
  LEFT JOIN durations AS d USING (job_id, layer, forward)
 GROUP BY l.job_id, l.layer, l.forward;
