-- The estimator's views over the hand-made attribution fixture (see attribution.sql).
-- Too few windows to identify most layers: the views must say so, with honest intervals.
-- These fixtures stamp each sample with the end of its window (as an exporter that printed
-- DCGM's own timestamps would), and every metric is an average over that window: say so, so
-- that attribution takes the stored times as window ends.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
SELECT count(*) = 6 FROM pp_metrics WHERE kind = 'window';
SELECT events_added = 6 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl');
-- One row per (job, layer, direction) with samples, for each of the six metrics.
SELECT count(*) = 6 * 6 FROM layer_estimates;
SELECT count(DISTINCT metric) = 6 FROM layer_estimates;
-- l2 alone fills windows 3-5 (GPU_UTIL 21, 28, 35): least squares gives their mean.
SELECT abs(estimate - 28) < 1e-9 AND abs(overlap_mean - 28) < 1e-9 AND windows = 3
  FROM layer_estimates WHERE layer = 'l2' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- Every interval holds its estimate and stays within the metric's bounds.
SELECT count(*) = 0 FROM layer_estimates
 WHERE NOT (lower90 <= estimate + 1e-9 AND estimate <= upper90 + 1e-9);
SELECT count(*) = 0 FROM layer_estimates AS e JOIN pp_metric_bounds AS b USING (metric)
 WHERE e.estimate < b.lower OR e.estimate > b.upper OR e.lower90 < b.lower OR e.upper90 > b.upper;
-- A layer seen in one window next to another unknown cannot be identified, and says so.
SELECT confidence LIKE 'not identified%' FROM layer_estimates
 WHERE job_id = 'jobB' AND layer = 'emb' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 0 FROM layer_estimates WHERE windows = 1 AND confidence = 'identified';
-- The per-type view groups l1 forward and backward under Linear.
SELECT count(*) = 2 FROM layer_type_estimates WHERE job_id = 'jobA' AND layer_type = 'Linear'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- A layer that no sample of a metric covers (the samples of l2's windows lost from FB_USED; an
-- instant gauge read between short calls alike) still has its row for that metric: no estimate,
-- the interval the metric's bounds, and why; as many rows per metric as before.
DELETE FROM pp_samples WHERE metric = 'DCGM_FI_DEV_FB_USED'
   AND ts_ms IN (SELECT ts_ms FROM pp_samples WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' AND value IN (21, 28, 35));
SELECT count(*) = 6 FROM layer_estimates WHERE metric = 'DCGM_FI_DEV_FB_USED';
SELECT estimate IS NULL AND lower90 = 0 AND upper90 IS NULL AND windows = 0
       AND confidence = 'not identified: no sample of this metric covers any of its calls (an instant gauge read '
                        || 'between them, or a gap in the samples)'
  FROM layer_estimates WHERE layer = 'l2' AND metric = 'DCGM_FI_DEV_FB_USED';
