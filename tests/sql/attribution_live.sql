-- A job still running: events arrive minutes apart, and each refresh must fetch the samples
-- that the new events need, however many samples the GPU already has. Data: GPU 0 of
-- tests/fixtures/dcgm_data.py (1 s interval, GPU_UTIL = 7i % 101 at T0 + i).
--   part1.jsonl: "early" over [10.5, 12.5] and [20, 21]; part2.jsonl: "late" over [200.5, 202.5]
--   and [300, 301]: more than the 60 s that a fetch reaches past the last event.
-- These fixtures stamp each sample with the end of its window (as an exporter that printed
-- DCGM's own timestamps would), and every metric is an average over that window: say so, so
-- that attribution takes the stored times as window ends.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
SELECT count(*) = 6 FROM pp_metrics WHERE kind = 'window';
SELECT pp_config('attribution_margin_seconds', 1000000000) = '1000000000';
SELECT events_added = 2 AND http_requests = 1 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution_live/part1.jsonl');
SELECT max(ts_ms) < 1700000000000 + 200000 FROM pp_samples;
-- The late events arrive: the GPU has samples, but not over them.
SELECT events_added = 2 AND samples_added > 0 AND http_requests = 1
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution_live/*.jsonl');
SELECT windows_folded > 0 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution_live/*.jsonl', 1);
-- late: half of window 201 (7 * 201 % 101 = 94), all of 202 (0), half of 203 (7); and all of
-- window 301 (7 * 301 % 101 = 87).
SELECT data_num = 4 AND abs(gpu_util - (0.5 * 94 + 0 + 0.5 * 7 + 87) / 3) < 1e-9
  FROM layer_metrics WHERE job_id = 'live' AND layer = 'late';
-- The same states as one refresh over everything.
CREATE TEMP TABLE incremental AS SELECT job_id, layer, forward, metric, state FROM layer_state;
DELETE FROM pp_events; DELETE FROM pp_samples; DELETE FROM pp_intervals; DELETE FROM pp_fold_state;
DELETE FROM pp_alignment; DELETE FROM pp_windows;
DELETE FROM pp_layers; DELETE FROM layer_state; DELETE FROM layer_history; DELETE FROM pp_jobs;
SELECT events_added = 4 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution_live/*.jsonl', 1);
SELECT (SELECT count(*) FROM incremental) = (SELECT count(*) FROM layer_state);
SELECT count(*) = 0 FROM incremental AS i JOIN layer_state AS s USING (job_id, layer, forward, metric)
 WHERE pp_mean_count(i.state) <> pp_mean_count(s.state)
    OR abs(pp_mean_value(i.state) - pp_mean_value(s.state)) > 1e-9 * abs(pp_mean_value(i.state));
SELECT parameters = 42 FROM job_overview WHERE job_id = 'live';
