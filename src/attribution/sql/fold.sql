-- One fold step of pp_refresh: the sample windows in main.pp_refresh_fold_window (per GPU, ts_ms in
-- (after_ms, through_ms]) and the events they overlap go into layer_state with pp_mean_merge.
-- The interval join (overlap_means.cpp, what pp_overlap_means returns; fold.cpp runs it per GPU
-- beside the reads of the others and puts its rows into main.pp_refresh_fold_means): a sweep over the
-- GPU's time-sorted events and samples with overlaps in integer nanoseconds, so weights are
-- exact; the rest of each window inside a job's span on that GPU is the job's untracked time
-- (idle, data loading, or functional ops that module hooks cannot see), its own '(untracked)'
-- row, never spread over the layers. In the same pass it gives the call durations
-- ('_duration') of the events not folded yet that start by the GPU's fold point (CPU events:
-- all of them). It gives one state per (job, layer, direction, metric) and GPU, never the
-- millions of (event, sample) pairs (pp_overlaps lists those).
-- Each (event, sample) pair is folded exactly once, when its sample's window is folded, so
-- any sequence of refreshes gives the same states as one refresh over all the data.
-- After this script pp_refresh sets pp_events.folded = 1 on the events whose durations it
-- counted (t_start_ns up to each GPU's through_ms), one index range per GPU.

INSERT INTO main.layer_state(job_id, layer, forward, metric, state)
SELECT job_id, layer, forward, metric, pp_mean_merge(state)
  FROM main.pp_refresh_fold_means WHERE state IS NOT NULL
 GROUP BY job_id, layer, forward, metric
ON CONFLICT (job_id, layer, forward, metric) DO UPDATE SET state = pp_mean_merge(state, excluded.state);

-- Layers (and the untracked row) seen for the first time; a layer is described by its event
-- with the lowest id.
INSERT OR IGNORE INTO main.pp_layers(job_id, layer, forward, layer_type, host_name, ip, cpu_num, gpu_uuid)
SELECT m.job_id, '(untracked)', 0, '(untracked)', e.host_name, e.ip, e.cpu_num, m.uuid
  FROM (SELECT DISTINCT job_id, uuid FROM main.pp_refresh_fold_means WHERE layer = '(untracked)') AS m
  JOIN main.pp_events AS e ON e.id = (SELECT id FROM main.pp_events WHERE job_id = m.job_id AND gpu_uuid = m.uuid LIMIT 1);

INSERT OR IGNORE INTO main.pp_layers(job_id, layer, forward, layer_type, host_name, ip, cpu_num, gpu_uuid)
SELECT c.job_id, c.layer, c.forward, e.layer_type, e.host_name, e.ip, e.cpu_num, e.gpu_uuid
  FROM (SELECT job_id, layer, forward, min(first_id) AS first_id FROM main.pp_refresh_fold_means
         WHERE metric = '_duration' GROUP BY job_id, layer, forward) AS c
  JOIN main.pp_events AS e ON e.id = c.first_id;

-- Each job's span on each GPU grows by the events this fold counts (those pp_refresh then
-- marks folded), so every event whose times can be a call is in pp_gpu_spans once.
-- main.pp_refresh_fold_spans holds what this fold adds (fold.cpp fills it from each GPU's timeline
-- before this script runs), for the warning about shared GPUs too.
INSERT INTO main.pp_gpu_spans(job_id, uuid, first_ns, last_ns, events, longest_ns)
SELECT job_id, uuid, first_ns, last_ns, events, longest_ns FROM main.pp_refresh_fold_spans WHERE true
ON CONFLICT (uuid, job_id) DO UPDATE SET first_ns = min(first_ns, excluded.first_ns),
  last_ns = max(last_ns, excluded.last_ns), events = events + excluded.events,
  longest_ns = max(longest_ns, excluded.longest_ns);

INSERT INTO main.pp_fold_state(uuid, folded_through_ms)
SELECT uuid, through_ms FROM main.pp_refresh_fold_window WHERE uuid <> 'cpu'
ON CONFLICT (uuid) DO UPDATE SET folded_through_ms = max(folded_through_ms, excluded.folded_through_ms);
