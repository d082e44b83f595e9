-- layer_metrics in stock SQLite, without the extension (bench/attribution_bench.py runs it with
-- Python's sqlite3 module): the semantics of src/attribution/sql/fold.sql as plain weighted sums over an indexed
-- join. Input tables:
--   events(id INTEGER PRIMARY KEY, job_id, layer, forward, gpu_uuid, t_start_ns, t_end_ns),
--     indexed on (gpu_uuid, t_start_ns)
--   samples(uuid, metric, ts_ms, value), primary key (uuid, metric, ts_ms); a sample covers
--     (ts - interval, ts]
--   intervals(uuid, metric, interval_ms)
-- Each sample window looks up the events of its GPU that start inside it or at most the longest
-- event duration before it (an index range), and keeps those that overlap it. Untracked time is
-- a job's span less its own events: the benchmark's jobs never share a GPU (where jobs do, the
-- engine subtracts every job's events, src/attribution/interval_sweep.hpp).
DROP TABLE IF EXISTS temp.longest;
CREATE TEMP TABLE longest AS SELECT max(t_end_ns - t_start_ns) + 1 AS ns FROM events;

DROP TABLE IF EXISTS temp.pairs;
CREATE TEMP TABLE pairs AS
SELECT e.job_id, e.layer, e.forward, s.uuid, s.metric, s.ts_ms, s.value,
       min(e.t_end_ns, s.ts_ms * 1000000) - max(e.t_start_ns, (s.ts_ms - i.interval_ms) * 1000000) AS weight_ns
  FROM samples AS s
  JOIN intervals AS i ON i.uuid = s.uuid AND i.metric = s.metric
  JOIN events AS e
    ON e.gpu_uuid = s.uuid AND e.t_start_ns < s.ts_ms * 1000000
   AND e.t_start_ns > (s.ts_ms - i.interval_ms) * 1000000 - (SELECT ns FROM temp.longest)
   AND e.t_end_ns > (s.ts_ms - i.interval_ms) * 1000000;

-- Untracked time: the rest of each window inside the job's span on that GPU.
DROP TABLE IF EXISTS temp.spans;
CREATE TEMP TABLE spans AS
SELECT job_id, gpu_uuid AS uuid, min(t_start_ns) AS first_ns, max(t_end_ns) AS last_ns
  FROM events GROUP BY job_id, gpu_uuid;
DROP TABLE IF EXISTS temp.covered;
CREATE TEMP TABLE covered AS
SELECT job_id, uuid, metric, ts_ms, sum(weight_ns) AS covered_ns
  FROM pairs GROUP BY job_id, uuid, metric, ts_ms;
CREATE INDEX temp.covered_key ON covered(job_id, uuid, metric, ts_ms);
INSERT INTO pairs
SELECT j.job_id, '(untracked)', 0, s.uuid, s.metric, s.ts_ms, s.value,
       max(0, min(s.ts_ms * 1000000, j.last_ns) - max((s.ts_ms - i.interval_ms) * 1000000, j.first_ns)
              - coalesce(c.covered_ns, 0))
  FROM spans AS j
  JOIN intervals AS i ON i.uuid = j.uuid
  JOIN samples AS s ON s.uuid = j.uuid AND s.metric = i.metric
                   AND s.ts_ms > j.first_ns / 1000000 AND s.ts_ms < j.last_ns / 1000000 + i.interval_ms + 1
  LEFT JOIN covered AS c
    ON c.job_id = j.job_id AND c.uuid = s.uuid AND c.metric = s.metric AND c.ts_ms = s.ts_ms
 WHERE s.ts_ms * 1000000 > j.first_ns AND (s.ts_ms - i.interval_ms) * 1000000 < j.last_ns;

DROP TABLE IF EXISTS temp.means;
CREATE TEMP TABLE means AS
SELECT job_id, layer, forward, metric, count(*) AS n, sum(value * weight_ns) / sum(weight_ns) AS mean
  FROM pairs WHERE weight_ns > 0 AND value IS NOT NULL
 GROUP BY job_id, layer, forward, metric;
DROP TABLE IF EXISTS temp.durations;
CREATE TEMP TABLE durations AS
SELECT job_id, layer, forward, count(*) AS calls, avg(t_end_ns - t_start_ns) / 1e6 AS mean_duration_ms
  FROM events GROUP BY job_id, layer, forward;

DROP TABLE IF EXISTS temp.result;
CREATE TEMP TABLE result AS
SELECT l.job_id, l.layer, l.forward,
       coalesce(max(CASE m.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN m.n END), 0) AS data_num,
       max(CASE m.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN m.mean END) AS gpu_util,
       max(CASE m.metric WHEN 'DCGM_FI_DEV_FB_USED' THEN m.mean END) AS gpu_mem,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_DRAM_ACTIVE' THEN m.mean END) AS dram_active,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_PIPE_FP32_ACTIVE' THEN m.mean END) AS fp32_active,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_SM_OCCUPANCY' THEN m.mean END) AS sm_occupancy,
       max(CASE m.metric WHEN 'DCGM_FI_PROF_SM_ACTIVE' THEN m.mean END) AS sm_active,
       max(d.calls) AS calls, max(d.mean_duration_ms) AS mean_duration_ms
  FROM (SELECT job_id, layer, forward FROM durations UNION SELECT job_id, layer, forward FROM means) AS l
  LEFT JOIN means AS m ON m.job_id = l.job_id AND m.layer = l.layer AND m.forward = l.forward
  LEFT JOIN durations AS d ON d.job_id = l.job_id AND d.layer = l.layer AND d.forward = l.forward
 GROUP BY l.job_id, l.layer, l.forward;
