-- Attribution by overlap, checked against hand-computed values.
-- Events: tests/data/attribution/part1.jsonl and part2.jsonl. Samples: tests/fixtures/dcgm_data.py,
-- 1 s interval, so the sample at T0+i covers (T0+i-1, T0+i]. GPU 0: GPU_UTIL = 7i % 101,
-- FB_USED = 1000 + i, DRAM_ACTIVE = 37i % 1000 / 1000. GPU 1: GPU_UTIL = (7i + 13) % 101.
--   jobA on GPU 0: l1 fwd [0.5, 1.5] straddles windows 1 and 2; l2 fwd [2, 5] spans windows 3-5;
--                  a gap [5, 6.25]; l1 bwd [6.25, 6.75] in window 7.
--   jobB on GPU 1 (same host): two calls of emb, [10, 10.1] and [10.5, 10.6], both in window 11.
--   jobC on CPU only.
-- One request fetches the samples of both GPUs.
-- These fixtures stamp each sample with the end of its window (as an exporter that printed
-- DCGM's own timestamps would), and every metric is an average over that window: say so, so
-- that attribution takes the stored times as window ends.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
SELECT count(*) = 6 FROM pp_metrics WHERE kind = 'window';
-- The connection's first refresh, sharing its statement with a read of another table (which
-- SQLite aborted when a refresh created temporary tables).
SELECT r.events_added = 6 AND r.samples_added > 0 AND r.http_requests = 1
       AND (SELECT count(*) FROM pp_metrics WHERE kind = 'window') = 6
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl') AS r;
SELECT (SELECT count(*) FROM pp_events) = 6;
-- The work tables the steps fill for each other are empty between refreshes.
SELECT (SELECT count(*) FROM pp_refresh_fetch_gpus) + (SELECT count(*) FROM pp_refresh_series)
     + (SELECT count(*) FROM pp_refresh_fold_window) + (SELECT count(*) FROM pp_refresh_fold_means)
     + (SELECT count(*) FROM pp_refresh_fold_spans) + (SELECT count(*) FROM pp_refresh_retention_cuts) = 0;
-- The median spacing of the 1 s series.
SELECT count(*) = 12 AND min(interval_ms) = 1000 AND max(interval_ms) = 1000 AND min(source) = 'median' FROM pp_intervals;

-- Table II, exactly the paper's columns first.
SELECT group_concat(name, ',') = 'job_id,host_name,ip,forward,layer,cpu_num,data_num,gpu_util,gpu_mem,dram_active,fp32_active,sm_occupancy,sm_active,layer_type,calls,mean_duration_ms,resolution,note'
  FROM pragma_table_info('layer_metrics');
-- l1 forward: half of window 1 (7) and half of window 2 (14).
SELECT data_num = 2 AND abs(gpu_util - 10.5) < 1e-9 AND abs(gpu_mem - 1001.5) < 1e-9
   AND abs(dram_active - 0.0555) < 1e-9 AND calls = 1 AND abs(mean_duration_ms - 1000) < 1e-6
   AND abs(resolution - 1.0) < 1e-9 AND host_name = 'node-a' AND ip = '10.0.0.1' AND cpu_num = 4.0
   AND layer_type = 'Linear'
  FROM layer_metrics WHERE job_id = 'jobA' AND layer = 'l1' AND forward = 1;
-- l2: windows 3, 4, 5 whole: (21 + 28 + 35) / 3; memory (1003 + 1004 + 1005) / 3.
SELECT data_num = 3 AND abs(gpu_util - 28) < 1e-9 AND abs(gpu_mem - 1004) < 1e-9
  FROM layer_metrics WHERE job_id = 'jobA' AND layer = 'l2';
-- l1 backward: half of window 7 (49).
SELECT data_num = 1 AND abs(gpu_util - 49) < 1e-9 FROM layer_metrics WHERE job_id = 'jobA' AND layer = 'l1' AND forward = 0;
-- Untracked time of jobA: 0.5 s of window 2 (14), all of window 6 (42), 0.25 s of window 7 (49).
SELECT data_num = 3 AND abs(gpu_util - (0.5 * 14 + 42 + 0.25 * 49) / 1.75) < 1e-9 AND note LIKE 'GPU time%'
  FROM layer_metrics WHERE job_id = 'jobA' AND layer = '(untracked)';
-- jobB: two calls in one window; same host, other GPU, other job.
SELECT data_num = 2 AND abs(gpu_util - 90) < 1e-9 AND calls = 2 AND abs(mean_duration_ms - 100) < 1e-9
   AND abs(resolution - 0.1) < 1e-12
  FROM layer_metrics WHERE job_id = 'jobB' AND layer = 'emb';
SELECT abs(gpu_util - 90) < 1e-9 FROM layer_metrics WHERE job_id = 'jobB' AND layer = '(untracked)';
-- jobC ran on CPU only: no samples, and the row says so.
SELECT data_num = 0 AND gpu_util IS NULL AND calls = 1 AND note = 'ran on CPU: no GPU samples'
  FROM layer_metrics WHERE job_id = 'jobC';
-- Column types: REAL metrics, INTEGER counts.
SELECT typeof(gpu_util) = 'real' AND typeof(data_num) = 'integer' AND typeof(forward) = 'integer'
   AND typeof(calls) = 'integer' FROM layer_metrics WHERE layer = 'l2';

-- Per event and metric: l2 takes three whole windows.
SELECT count(*) = 3 AND sum(weight) = 3.0 FROM layer_attribution
 WHERE layer = 'l2' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND abs(sum(weight) - 1.0) < 1e-9 FROM layer_attribution
 WHERE layer = 'l1' AND forward = 1 AND metric = 'DCGM_FI_DEV_GPU_UTIL';

-- Job headers: one per file that has one (both parts start with jobA's, "params": 1234).
SELECT count(*) = 2 AND sum(params) = 2468 AND group_concat(line) = '1,1' AND count(DISTINCT source_file) = 2
  FROM pp_jobs WHERE job_id = 'jobA';
SELECT count(*) = 2 FROM pp_jobs;
-- Table III: parameters, then the job's time-weighted utilization over its 6.25 GPU seconds.
SELECT group_concat(name, ',') = 'job_id,parameters,host_name,gpus,layers,gpu_util,gpu_mem_gib,gpu_mem_peak_gib,dram_active,fp32_active,sm_active,sm_occupancy,gpu_seconds,shared_with'
  FROM pragma_table_info('job_overview');
SELECT parameters = 1234 AND typeof(parameters) = 'integer'
   AND abs(gpu_util - 180.25 / 6.25) < 1e-9 AND gpus = 1 AND layers = 2 AND abs(gpu_seconds - 6.25) < 1e-6
  FROM job_overview WHERE job_id = 'jobA';
-- layers counts layers (l1 ran forward and backward: one layer); a job on the CPU only has no
-- GPUs and no GPU seconds.
SELECT gpus = 0 AND gpu_seconds IS NULL AND layers = 1 FROM job_overview WHERE job_id = 'jobC';
-- jobB and jobC wrote no header: no parameter count.
SELECT count(*) = 2 AND count(parameters) = 0 FROM job_overview WHERE job_id IN ('jobB', 'jobC');
-- Per layer type (the paper's Figure 2).
SELECT abs(gpu_util - 10.5) < 1e-9 AND layers = 1 FROM layer_type_metrics
 WHERE job_id = 'jobA' AND layer_type = 'Linear' AND forward = 1;

-- The plain result tables, for clients without the extension: the views' numbers under column
-- names with units, directions as words, the untracked row neither forward nor backward.
SELECT count(*) = (SELECT count(*) FROM layer_metrics) FROM report_layers;
SELECT direction = 'forward' AND abs(gpu_util_percent - 10.5) < 1e-9 AND abs(gpu_mem_mib - 1001.5) < 1e-9
   AND abs(dram_active_ratio - 0.0555) < 1e-9 AND calls = 1 AND abs(call_seconds - 1.0) < 1e-9
   AND data_num = 2 AND layer_type = 'Linear' AND typeof(gpu_util_percent) = 'real'
  FROM report_layers WHERE job_id = 'jobA' AND layer = 'l1' AND direction = 'forward';
SELECT count(*) = 1 AND min(direction) = 'backward' FROM report_layers WHERE job_id = 'jobA' AND layer = 'l1' AND direction <> 'forward';
SELECT count(*) = 2 AND min(direction) = 'untracked' AND max(direction) = 'untracked'
  FROM report_layers WHERE layer = '(untracked)';
SELECT count(*) = 0 FROM report_layers WHERE direction NOT IN ('forward', 'backward', 'untracked');
SELECT abs(gpu_util_percent - 10.5) < 1e-9 AND layers = 1 AND direction = 'forward' FROM report_layer_types
 WHERE job_id = 'jobA' AND layer_type = 'Linear' AND direction = 'forward';
SELECT direction = 'untracked' FROM report_layer_types WHERE job_id = 'jobA' AND layer_type = '(untracked)';
SELECT parameters = 1234 AND abs(gpu_util_percent - 180.25 / 6.25) < 1e-9 AND gpus = 1 AND layers = 2
   AND abs(gpu_seconds - 6.25) < 1e-6 AND refreshed_at > 1.7e9
  FROM report_jobs WHERE job_id = 'jobA';
SELECT count(*) = 3 FROM report_jobs;

-- Per training step: jobA's one step spans its first start to its last end, 4.5 s of 6.25 s in
-- layer calls; jobB's two steps are 100 ms each, the second 400 ms after the first ended.
SELECT count(*) = 1 AND abs(duration_ms - 6250) < 1e-6 AND events = 3 AND abs(layer_ms - 4500) < 1e-6
   AND abs(layer_share - 0.72) < 1e-12 AND gap_before_ms IS NULL AND abs(relative_duration - 1) < 1e-12
  FROM step_timeline WHERE job_id = 'jobA';
SELECT group_concat(batch) = '0,1' AND max(abs(duration_ms - 100)) < 1e-6 AND max(gap_before_ms) = 400
   AND max(abs(relative_duration - 1)) < 1e-9 AND min(uuid) LIKE 'GPU-a111%'
  FROM (SELECT * FROM step_timeline WHERE job_id = 'jobB' ORDER BY t_start);
SELECT uuid = 'cpu' AND abs(duration_ms - 2) < 1e-6 FROM step_timeline WHERE job_id = 'jobC';

-- Refreshing again with nothing new changes nothing.
CREATE TEMP TABLE before AS SELECT job_id, layer, forward, metric, state FROM layer_state;
SELECT events_added = 0 AND samples_added = 0 AND windows_folded = 0 AND history_kept = 0
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl');
SELECT (SELECT count(*) FROM (SELECT * FROM before EXCEPT SELECT job_id, layer, forward, metric, state FROM layer_state)) = 0
   AND (SELECT count(*) FROM before) = (SELECT count(*) FROM layer_state);
SELECT count(*) = 2 FROM pp_jobs;
-- The dedup rule kept one snapshot per layer with data.
SELECT count(*) = (SELECT count(*) FROM layer_metrics WHERE data_num > 0) FROM layer_history;

-- Incremental: the first half while the jobs are still live, then the rest, then final,
-- gives the same states as one refresh over everything.
DELETE FROM pp_events; DELETE FROM pp_samples; DELETE FROM pp_intervals; DELETE FROM pp_fold_state;
DELETE FROM pp_alignment; DELETE FROM pp_windows;
DELETE FROM pp_layers; DELETE FROM layer_state; DELETE FROM layer_history; DELETE FROM pp_jobs;
SELECT pp_config('attribution_margin_seconds', 1000000000) = '1000000000';
-- While a job may still write events into its last windows, those wait, and the refresh says so
-- (its row counts them, with the time the last of them ended).
SELECT events_added = 3 AND events_waiting > 0 AND waiting_end_time > 1.7e9
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl');
SELECT pp_last_warnings() LIKE '%events (the last % s) are not folded yet: while a job may still write events, the fold waits 1000000000 s (attribution_margin_seconds)%final = 1 once the job has ended%';
SELECT count(*) = 1 FROM pp_jobs;
SELECT (SELECT count(*) FROM layer_state) < (SELECT count(*) FROM before);
SELECT events_added = 3 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl');
SELECT events_added = 0 AND windows_folded > 0 AND events_waiting = 0 AND waiting_end_time IS NULL
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl', 1);
SELECT pp_last_warnings() NOT LIKE '%not folded yet%';
SELECT (SELECT count(*) FROM before) = (SELECT count(*) FROM layer_state);
SELECT count(*) = 0 FROM before AS b JOIN layer_state AS s USING (job_id, layer, forward, metric)
 WHERE pp_mean_count(b.state) <> pp_mean_count(s.state)
    OR abs(pp_mean_value(b.state) - pp_mean_value(s.state)) > 1e-9 * abs(pp_mean_value(b.state));

-- A file refreshed after the windows its events overlap were folded: those events are late, and
-- said so by the refresh that reads them, but not "waiting" as well. That refresh folds them
-- without windows (their calls count, their overlaps are lost), so that their spans are known
-- (a job sharing the GPU is seen as sharing it) and the next refresh says nothing of them.
DELETE FROM pp_events; DELETE FROM pp_samples; DELETE FROM pp_intervals; DELETE FROM pp_fold_state;
DELETE FROM pp_alignment; DELETE FROM pp_windows; DELETE FROM pp_gpu_spans; DELETE FROM pp_event_files;
DELETE FROM pp_layers; DELETE FROM layer_state; DELETE FROM layer_history; DELETE FROM pp_jobs;
SELECT pp_config('attribution_margin_seconds', 60) = '60';
SELECT events_added = 3 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl');
SELECT events_added = 3 FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl');
SELECT pp_last_warnings() LIKE '%events arrived after their sample windows were folded and are not attributed%'
   AND pp_last_warnings() NOT LIKE '%not folded yet%';
-- The warning names the commands' --final run while the job still wrote events among the causes.
SELECT pp_last_warnings() LIKE '%or the rest of a job that was still running when a refresh with final = 1, the '
                               || 'commands'' --final, folded its windows)%only once the job has ended%';
SELECT count(*) = 0 FROM pp_events WHERE folded = 0;
SELECT sum(pp_mean_count(state)) = 6 FROM layer_state WHERE metric = '_duration';
SELECT events_added = 0 FROM pp_refresh(NULL);
SELECT pp_last_warnings() NOT LIKE '%events arrived after%';
