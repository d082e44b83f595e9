-- The estimator next to the overlap means (created by pp_install_views()).
-- A layer shorter than a sample window gets, by overlap, a blend of every layer in its windows.
-- pp_deconvolve solves for each layer's own value over all windows of a job instead, and says
-- how sure it is: see docs/reference/deconvolve.md.

-- Where each metric's values can lie: the bounds of the estimator.
CREATE TABLE IF NOT EXISTS pp_metric_bounds(metric TEXT PRIMARY KEY, lower REAL, upper REAL);
INSERT OR IGNORE INTO pp_metric_bounds VALUES
  ('DCGM_FI_DEV_GPU_UTIL', 0, 100), ('DCGM_FI_DEV_FB_USED', 0, NULL),
  ('DCGM_FI_PROF_DRAM_ACTIVE', 0, 1), ('DCGM_FI_PROF_PIPE_FP32_ACTIVE', 0, 1),
  ('DCGM_FI_PROF_SM_OCCUPANCY', 0, 1), ('DCGM_FI_PROF_SM_ACTIVE', 0, 1);

-- Every sample window inside a job's span on a GPU, with the fraction of the window each
-- (layer, direction) ran, and the rest of the job's part of the window as '(untracked)'.
-- A part of a window outside the job is left out, so pp_deconvolve gives it its own '(rest)'.
CREATE VIEW IF NOT EXISTS pp_window_fractions AS
WITH windows AS (
  SELECT j.job_id, s.uuid, s.metric, s.ts_ms, s.value, i.interval_ms,
         (s.ts_ms - i.interval_ms) * 1000000 AS start_ns, s.ts_ms * 1000000 AS end_ns,
         max(j.first_ns, (s.ts_ms - i.interval_ms) * 1000000) AS job_start_ns,
         min(j.last_ns, s.ts_ms * 1000000) AS job_end_ns
    FROM pp_job_spans AS j
    JOIN pp_intervals AS i ON i.uuid = j.uuid
    JOIN pp_samples AS s ON s.uuid = j.uuid AND s.metric = i.metric
                        AND s.ts_ms > j.first_ns / 1000000 AND s.ts_ms - i.interval_ms < j.last_ns / 1000000 + 1
   WHERE s.value IS NOT NULL),
layers AS (
  SELECT w.job_id, w.uuid, w.metric, w.ts_ms, e.layer, e.layer_type, e.forward,
         sum(min(e.t_end_ns, w.end_ns) - max(e.t_start_ns, w.start_ns)) / (w.interval_ms * 1e6) AS fraction
    FROM windows AS w
    JOIN pp_events AS e
      ON e.gpu_uuid = w.uuid AND e.job_id = w.job_id AND e.t_start_ns < w.end_ns
     AND e.t_start_ns > w.start_ns - (SELECT max(t_end_ns - t_start_ns) FROM pp_events) - 1
     AND e.t_end_ns > w.start_ns
   GROUP BY w.job_id, w.uuid, w.metric, w.ts_ms, e.layer, e.forward)
SELECT job_id, uuid, metric, ts_ms, layer, layer_type, forward, fraction, value FROM layers
  JOIN windows USING (job_id, uuid, metric, ts_ms)
UNION ALL
SELECT w.job_id, w.uuid, w.metric, w.ts_ms, '(untracked)', '(untracked)', 0,
       max(0.0, (w.job_end_ns - w.job_start_ns) / (w.interval_ms * 1e6)
                - coalesce((SELECT sum(l.fraction) FROM layers AS l WHERE l.job_id = w.job_id AND l.uuid = w.uuid
                              AND l.metric = w.metric AND l.ts_ms = w.ts_ms), 0.0)),
       w.value
  FROM windows AS w;

-- Per (job, layer, direction, metric): the overlap-weighted mean of layer_metrics beside the
-- estimator's value, its standard error and 90% interval, and whether the data identify it.
CREATE VIEW IF NOT EXISTS layer_estimates AS
WITH solved AS (
  SELECT f.job_id, f.metric,
         pp_deconvolve(f.uuid || ':' || f.ts_ms, f.layer || '|' || f.forward, f.fraction, f.value, b.lower, b.upper) AS result
    FROM pp_window_fractions AS f JOIN pp_metric_bounds AS b USING (metric)
   GROUP BY f.job_id, f.metric)
SELECT s.job_id, l.layer, l.forward, l.layer_type, s.metric,
       pp_mean_value(st.state) AS overlap_mean,
       json_extract(u.value, '$.estimate') AS estimate,
       json_extract(u.value, '$.stderr') AS stderr,
       json_extract(u.value, '$.lower90') AS lower90,
       json_extract(u.value, '$.upper90') AS upper90,
       json_extract(u.value, '$.n') AS windows,
       CASE WHEN json_extract(u.value, '$.identified') THEN 'identified'
            ELSE 'not identified: the interval is the honest answer' END AS confidence,
       json_extract(s.result, '$._system.condition_scaled') AS condition
  FROM solved AS s, json_each(s.result) AS u
  JOIN pp_layers AS l ON l.job_id = s.job_id AND l.layer || '|' || l.forward = u.key
  LEFT JOIN layer_state AS st ON st.job_id = l.job_id AND st.layer = l.layer AND st.forward = l.forward
                             AND st.metric = s.metric
 WHERE u.key <> '_system';

-- The same per layer type and direction (the paper's Figure 2 groups), where the estimator
-- has fewer unknowns and more windows each.
CREATE VIEW IF NOT EXISTS layer_type_estimates AS
WITH typed AS (
  SELECT job_id, uuid, metric, ts_ms, layer_type, forward, sum(fraction) AS fraction, value
    FROM pp_window_fractions GROUP BY job_id, uuid, metric, ts_ms, layer_type, forward),
solved AS (
  SELECT t.job_id, t.metric,
         pp_deconvolve(t.uuid || ':' || t.ts_ms, t.layer_type || '|' || t.forward, t.fraction, t.value, b.lower, b.upper) AS result
    FROM typed AS t JOIN pp_metric_bounds AS b USING (metric)
   GROUP BY t.job_id, t.metric)
SELECT s.job_id,
       substr(u.key, 1, instr(u.key, '|') - 1) AS layer_type,
       CAST(substr(u.key, instr(u.key, '|') + 1) AS INTEGER) AS forward,
       s.metric,
       json_extract(u.value, '$.estimate') AS estimate,
       json_extract(u.value, '$.stderr') AS stderr,
       json_extract(u.value, '$.lower90') AS lower90,
       json_extract(u.value, '$.upper90') AS upper90,
       json_extract(u.value, '$.n') AS windows,
       CASE WHEN json_extract(u.value, '$.identified') THEN 'identified'
            ELSE 'not identified: the interval is the honest answer' END AS confidence
  FROM solved AS s, json_each(s.result) AS u
 WHERE u.key NOT IN ('_system', '(rest)');
