-- The estimator next to the overlap means (created by pp_install_views()).
-- A layer shorter than a sample window gets, by overlap, a blend of every layer in its windows.
-- pp_deconvolve solves for each layer's own value over all windows of a job instead, and says
-- how sure it is: see docs/reference/deconvolve.md.

-- Where each metric's values can lie: the bounds of the estimator.
CREATE TABLE IF NOT EXISTS pp_metric_bounds(metric TEXT PRIMARY KEY, lower REAL, upper REAL);
INSERT OR IGNORE INTO main.pp_metric_bounds VALUES
  ('DCGM_FI_DEV_GPU_UTIL', 0, 100), ('DCGM_FI_DEV_FB_USED', 0, NULL),
  ('DCGM_FI_PROF_DRAM_ACTIVE', 0, 1), ('DCGM_FI_PROF_PIPE_FP32_ACTIVE', 0, 1),
  ('DCGM_FI_PROF_SM_OCCUPANCY', 0, 1), ('DCGM_FI_PROF_SM_ACTIVE', 0, 1);

-- Every aligned sample window inside a job's span on a GPU, with the fraction of the window
-- each (layer, direction) ran, and the rest of the job's part of the window as '(untracked)'
-- (pp_fractions). A part of a window outside the job is left out, so pp_deconvolve gives it
-- its own '(rest)'.
CREATE VIEW IF NOT EXISTS pp_window_fractions AS
SELECT f.job_id, g.uuid, f.metric, f.ts_ms, f.layer, f.layer_type, f.forward, f.fraction, f.value
  FROM (SELECT DISTINCT uuid FROM pp_alignment) AS g
 CROSS JOIN pp_fractions(g.uuid) AS f
 WHERE f.database = (SELECT value FROM pp_meta WHERE key = 'database_id');

-- Per (job, layer, direction, metric): the overlap-weighted mean of layer_metrics beside the
-- estimator's value, its standard error and 90% interval, and whether the data identify it
-- (pp_estimates: each system is solved with every window where the alignment puts it and moved
-- by the GPU's timing uncertainty either way; the intervals hold all three). Jobs that shared a
-- GPU (colocated_spans) are solved in one system, each job's layers their own unknowns and the
-- time none of their layers ran one '(untracked)' (shared_with names the other jobs); a window in
-- which two of them ran at the same time is left out (concurrent_windows), and an instant gauge
-- of a shared GPU is never identified (reason).
CREATE VIEW IF NOT EXISTS layer_estimates AS
SELECT e.job_id, e.layer, e.forward, e.layer_type, e.metric,
       pp_mean_value(st.state) AS overlap_mean,
       e.estimate, e.stderr, e.lower90, e.upper90, e.windows,
       CASE WHEN e.identified THEN 'identified'
            WHEN e.reason IS NOT NULL THEN 'not identified: ' || e.reason
            ELSE 'not identified: the interval is the honest answer' END AS confidence,
       e.condition, e.shared_with
  FROM pp_estimates('layer', (SELECT value FROM pp_meta WHERE key = 'database_id')) AS e
  JOIN pp_layers AS l ON l.job_id = e.job_id AND l.layer = e.layer AND l.forward = e.forward
  LEFT JOIN layer_state AS st ON st.job_id = e.job_id AND st.layer = e.layer AND st.forward = e.forward
                             AND st.metric = e.metric;

-- The same per layer type and direction (the paper's Figure 2 groups), where the estimator
-- has fewer unknowns and more windows each.
CREATE VIEW IF NOT EXISTS layer_type_estimates AS
SELECT job_id, layer_type, forward, metric, estimate, stderr, lower90, upper90, windows,
       CASE WHEN identified THEN 'identified'
            WHEN reason IS NOT NULL THEN 'not identified: ' || reason
            ELSE 'not identified: the interval is the honest answer' END AS confidence,
       shared_with
  FROM pp_estimates('layer_type', (SELECT value FROM pp_meta WHERE key = 'database_id'));
