-- One fold step of pp_refresh: the sample windows in temp.pp_fold_window (per GPU, ts_ms in
-- (after_ms, through_ms]) and the events they overlap go into layer_state with pp_mean_merge.
-- Overlaps are computed in integer nanoseconds, so weights are exact.
-- Each (event, sample) pair is folded exactly once, when its sample's window is folded, so
-- any sequence of refreshes gives the same states as one refresh over all the data.
-- Parameter: ?1 the longest event duration in ns (bounds the index range).

-- (Emptied, not dropped: a table cannot be dropped while the calling statement runs.)
CREATE TEMP TABLE IF NOT EXISTS pp_fold_samples(
  uuid TEXT, metric TEXT, ts_ms INTEGER, value REAL, end_ns INTEGER, start_ns INTEGER);
DELETE FROM temp.pp_fold_samples;
INSERT INTO temp.pp_fold_samples
SELECT s.uuid, s.metric, s.ts_ms, s.value, s.ts_ms * 1000000, (s.ts_ms - i.interval_ms) * 1000000
  FROM temp.pp_fold_window AS w
  JOIN main.pp_samples AS s ON s.uuid = w.uuid AND s.ts_ms > w.after_ms AND s.ts_ms <= w.through_ms
  JOIN main.pp_intervals AS i ON i.uuid = s.uuid AND i.metric = s.metric;

-- Event x sample overlaps, weight in seconds.
CREATE TEMP TABLE IF NOT EXISTS pp_fold_overlaps(
  job_id TEXT, layer TEXT, forward INTEGER, uuid TEXT, metric TEXT, ts_ms INTEGER, value REAL,
  weight_ns INTEGER);
DELETE FROM temp.pp_fold_overlaps;
INSERT INTO temp.pp_fold_overlaps
SELECT e.job_id, e.layer, e.forward, f.uuid, f.metric, f.ts_ms, f.value,
       min(e.t_end_ns, f.end_ns) - max(e.t_start_ns, f.start_ns)
  FROM temp.pp_fold_samples AS f
  JOIN main.pp_events AS e
    ON e.gpu_uuid = f.uuid AND e.t_start_ns < f.end_ns AND e.t_start_ns > f.start_ns - ?1
   AND e.t_end_ns > f.start_ns;

-- The rest of each window inside a job's span on that GPU is the job's untracked time:
-- idle, data loading, or functional ops that module hooks cannot see. It is its own row,
-- never spread over the layers.
INSERT INTO temp.pp_fold_overlaps
SELECT j.job_id, '(untracked)', 0, f.uuid, f.metric, f.ts_ms, f.value,
       max(0, min(f.end_ns, j.last_ns) - max(f.start_ns, j.first_ns) - coalesce(c.covered_ns, 0))
  FROM temp.pp_fold_samples AS f
  JOIN main.pp_job_spans AS j ON j.uuid = f.uuid AND f.end_ns > j.first_ns AND f.start_ns < j.last_ns
  LEFT JOIN (SELECT job_id, uuid, metric, ts_ms, sum(weight_ns) AS covered_ns
               FROM temp.pp_fold_overlaps GROUP BY job_id, uuid, metric, ts_ms) AS c
    ON c.job_id = j.job_id AND c.uuid = f.uuid AND c.metric = f.metric AND c.ts_ms = f.ts_ms;

INSERT INTO main.layer_state(job_id, layer, forward, metric, state)
SELECT job_id, layer, forward, metric, pp_mean(value, weight_ns / 1e9)
  FROM temp.pp_fold_overlaps WHERE weight_ns > 0 AND value IS NOT NULL
 GROUP BY job_id, layer, forward, metric
ON CONFLICT (job_id, layer, forward, metric) DO UPDATE SET state = pp_mean_merge(state, excluded.state);

-- Layers (and the untracked row) seen for the first time.
INSERT OR IGNORE INTO main.pp_layers(job_id, layer, forward, layer_type, host_name, ip, cpu_num, gpu_uuid)
SELECT DISTINCT o.job_id, '(untracked)', 0, '(untracked)', e.host_name, e.ip, e.cpu_num, o.uuid
  FROM temp.pp_fold_overlaps AS o
  JOIN main.pp_events AS e ON e.id = (SELECT id FROM main.pp_events WHERE job_id = o.job_id AND gpu_uuid = o.uuid LIMIT 1)
 WHERE o.layer = '(untracked)' AND o.weight_ns > 0;

-- Call durations of the events up to each GPU's fold point (CPU events: all of them).
INSERT INTO main.layer_state(job_id, layer, forward, metric, state)
SELECT e.job_id, e.layer, e.forward, '_duration', pp_mean((e.t_end_ns - e.t_start_ns) / 1e9)
  FROM main.pp_events AS e JOIN temp.pp_fold_window AS w ON w.uuid = e.gpu_uuid
 WHERE e.folded = 0 AND e.t_start_ns <= w.through_ms * 1000000
 GROUP BY e.job_id, e.layer, e.forward
ON CONFLICT (job_id, layer, forward, metric) DO UPDATE SET state = pp_mean_merge(state, excluded.state);

INSERT OR IGNORE INTO main.pp_layers(job_id, layer, forward, layer_type, host_name, ip, cpu_num, gpu_uuid)
SELECT e.job_id, e.layer, e.forward, e.layer_type, e.host_name, e.ip, e.cpu_num, e.gpu_uuid
  FROM main.pp_events AS e JOIN temp.pp_fold_window AS w ON w.uuid = e.gpu_uuid
 WHERE e.folded = 0 AND e.t_start_ns <= w.through_ms * 1000000
 GROUP BY e.job_id, e.layer, e.forward;

UPDATE main.pp_events SET folded = 1
 WHERE folded = 0 AND t_start_ns <= (SELECT through_ms * 1000000 FROM temp.pp_fold_window AS w WHERE w.uuid = gpu_uuid);

INSERT INTO main.pp_fold_state(uuid, folded_through_ms)
SELECT uuid, through_ms FROM temp.pp_fold_window WHERE uuid <> 'cpu'
ON CONFLICT (uuid) DO UPDATE SET folded_through_ms = max(folded_through_ms, excluded.folded_through_ms);
