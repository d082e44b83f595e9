-- Views over the attribution tables, created by pp_install_views(). They read only tables of
-- this database, never the network or files, so they may be stored in the database file.

-- Where each job ran on each GPU.
CREATE VIEW IF NOT EXISTS pp_job_spans AS
SELECT job_id, gpu_uuid AS uuid, min(t_start_ns) AS first_ns, max(t_end_ns) AS last_ns,
       min(t_start) AS t_first, max(t_end) AS t_last, count(*) AS events
  FROM pp_events GROUP BY job_id, gpu_uuid;

-- Jobs that shared a GPU: per GPU (not 'cpu') each pair of jobs whose spans on it overlap
-- (pp_gpu_spans: first event start to last event end), with the overlap in unix seconds. The
-- samples of such a span describe both jobs together: the overlap means blend them (the views
-- say so in layer_metrics.note), the estimator solves the jobs jointly (layer_estimates
-- .shared_with), and pp_refresh warns. The last term follows from the overlap: b starts at
-- most the GPU's longest span before a does (pp_gpu_spans_by_length, one seek; no bound where a
-- span's times are not integers or the difference passes 64 bits), so that b is read by a
-- range of its start (pp_gpu_spans_by_start, which b.uuid <> 'cpu' lets the plan use), not as
-- every job the GPU ran after a, nor (the unary +) as every job named after a's.
CREATE VIEW IF NOT EXISTS colocated_spans AS
SELECT a.uuid, a.job_id AS job_a, b.job_id AS job_b,
       max(a.first_ns, b.first_ns) / 1e9 AS t_from, min(a.last_ns, b.last_ns) / 1e9 AS t_through,
       (min(a.last_ns, b.last_ns) - max(a.first_ns, b.first_ns)) / 1e9 AS seconds,
       a.events AS events_a, b.events AS events_b
  FROM pp_gpu_spans AS a JOIN pp_gpu_spans AS b ON b.uuid = a.uuid AND +b.job_id > +a.job_id
 WHERE a.uuid <> 'cpu' AND b.uuid <> 'cpu' AND a.first_ns < b.last_ns AND b.first_ns < a.last_ns
   AND b.first_ns >= (SELECT CASE typeof(earliest) WHEN 'integer' THEN earliest ELSE -9e999 END
                        FROM (SELECT a.first_ns - max(CASE WHEN typeof(g.first_ns) = 'integer' AND typeof(g.last_ns) = 'integer'
                                                           THEN g.last_ns - g.first_ns ELSE 9e999 END) AS earliest
                                FROM pp_gpu_spans AS g WHERE g.uuid = a.uuid));

-- Per event and metric: each sample whose aligned window overlaps the event (window_end: where
-- it ends; sample_ts: when Prometheus stored it), with the overlap in seconds as weight. Events match only samples of their own GPU. The interval join is
-- pp_overlaps (src/attribution/overlap_tables.cpp), a sweep per GPU; CROSS JOIN keeps that order.
-- (Each view passes its database's database_id to the table functions, which read main: in an
-- ATTACHed database the view is refused, not answered with main's rows.)
CREATE VIEW IF NOT EXISTS layer_attribution AS
SELECT o.event_id, o.job_id, o.layer, e.layer_type, o.forward, g.uuid AS gpu_uuid, o.metric,
       o.ts_ms / 1000.0 AS sample_ts, o.window_end_ns / 1e9 AS window_end, o.interval_ms / 1000.0 AS interval_s,
       o.value, o.weight_ns / 1e9 AS weight
  FROM (SELECT DISTINCT uuid FROM pp_intervals) AS g
 CROSS JOIN pp_overlaps(g.uuid) AS o
 CROSS JOIN pp_events AS e
 WHERE e.id = o.event_id AND o.database = (SELECT value FROM pp_meta WHERE key = 'database_id');

-- Per job, each other job that shared a GPU with it (not 'cpu'): their spans on the GPU
-- (pp_gpu_spans) overlap. colocated_spans lists each pair once with the overlap; this lists it
-- from both sides, so that a view reading one job's rows finds its partners by index (a range
-- of starts, as colocated_spans reads them).
CREATE VIEW IF NOT EXISTS pp_shared_jobs AS
SELECT a.job_id, b.job_id AS other, a.uuid
  FROM pp_gpu_spans AS a JOIN pp_gpu_spans AS b ON b.uuid = a.uuid AND b.job_id <> a.job_id
 WHERE a.uuid <> 'cpu' AND b.uuid <> 'cpu' AND b.last_ns > a.first_ns AND b.first_ns < a.last_ns
   AND b.first_ns >= (SELECT CASE typeof(earliest) WHEN 'integer' THEN earliest ELSE -9e999 END
                        FROM (SELECT a.first_ns - max(CASE WHEN typeof(g.first_ns) = 'integer' AND typeof(g.last_ns) = 'integer'
                                                           THEN g.last_ns - g.first_ns ELSE 9e999 END) AS earliest
                                FROM pp_gpu_spans AS g WHERE g.uuid = a.uuid));

-- The paper's Table II, one row per (job_id, layer, forward), followed by what a reader needs
-- to judge it: the layer's type, calls, mean duration, and resolution = mean duration /
-- sample interval (below 1, the layer is shorter than one sample and its numbers are a blend
-- of its neighbours: see the estimator), and a note where a row needs one (CPU layers; the
-- untracked time; a job that shared a GPU, whose layers' windows hold the other job's activity
-- too: its '(untracked)' row is the time in which no job's layer ran).
-- This view, layer_type_metrics and job_overview are written so that SQLite reads only one
-- job's rows for WHERE job_id = ? (a single GROUP BY led by job_id, or a list of jobs with
-- subqueries per job): each refresh rewrites the report tables of the jobs it changed that way.
CREATE VIEW IF NOT EXISTS layer_metrics AS
SELECT l.job_id, l.host_name, l.ip, l.forward, l.layer, l.cpu_num,
       coalesce(max(CASE s.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN pp_mean_count(s.state) END), 0) AS data_num,
       max(CASE s.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN pp_mean_value(s.state) END) AS gpu_util,
       max(CASE s.metric WHEN 'DCGM_FI_DEV_FB_USED' THEN pp_mean_value(s.state) END) AS gpu_mem,
       max(CASE s.metric WHEN 'DCGM_FI_PROF_DRAM_ACTIVE' THEN pp_mean_value(s.state) END) AS dram_active,
       max(CASE s.metric WHEN 'DCGM_FI_PROF_PIPE_FP32_ACTIVE' THEN pp_mean_value(s.state) END) AS fp32_active,
       max(CASE s.metric WHEN 'DCGM_FI_PROF_SM_OCCUPANCY' THEN pp_mean_value(s.state) END) AS sm_occupancy,
       max(CASE s.metric WHEN 'DCGM_FI_PROF_SM_ACTIVE' THEN pp_mean_value(s.state) END) AS sm_active,
       l.layer_type,
       max(CASE s.metric WHEN '_duration' THEN pp_mean_count(s.state) END) AS calls,
       max(CASE s.metric WHEN '_duration' THEN pp_mean_value(s.state) END) * 1e3 AS mean_duration_ms,
       max(CASE s.metric WHEN '_duration' THEN pp_mean_value(s.state) END)
         / (SELECT max(i.interval_ms) / 1000.0 FROM pp_intervals AS i JOIN pp_metrics AS m USING (metric)
             WHERE i.uuid = l.gpu_uuid AND m.kind = 'window') AS resolution,
       CASE WHEN l.gpu_uuid = 'cpu' THEN 'ran on CPU: no GPU samples'
            WHEN EXISTS (SELECT 1 FROM pp_shared_jobs AS p WHERE p.job_id = l.job_id)
              THEN CASE WHEN l.layer = '(untracked)'
                     THEN 'GPU shared with another job (colocated_spans): time in the job in which no job''s layer ran'
                     ELSE 'GPU shared with another job (colocated_spans): the means blend both jobs; see layer_estimates' END
            WHEN l.layer = '(untracked)' THEN 'GPU time in the job not covered by any layer event'
       END AS note
  FROM pp_layers AS l
  LEFT JOIN layer_state AS s USING (job_id, layer, forward)
 GROUP BY l.job_id, l.layer, l.forward;

-- The same per layer type (Linear, ReLU, EmbeddingBag, ...), as in the paper's Figure 2:
-- the states of all layers of a type merged, so the means are overlap-weighted over all.
CREATE VIEW IF NOT EXISTS layer_type_metrics AS
SELECT l.job_id, l.layer_type, l.forward, count(DISTINCT l.layer) AS layers,
       coalesce(pp_mean_count(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL')), 0) AS data_num,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_DEV_GPU_UTIL')) AS gpu_util,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_DEV_FB_USED')) AS gpu_mem,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_PROF_DRAM_ACTIVE')) AS dram_active,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_PROF_PIPE_FP32_ACTIVE')) AS fp32_active,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_PROF_SM_OCCUPANCY')) AS sm_occupancy,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = 'DCGM_FI_PROF_SM_ACTIVE')) AS sm_active,
       pp_mean_count(pp_mean_merge(s.state) FILTER (WHERE s.metric = '_duration')) AS calls,
       pp_mean_value(pp_mean_merge(s.state) FILTER (WHERE s.metric = '_duration')) * 1e3 AS mean_duration_ms
  FROM pp_layers AS l JOIN layer_state AS s USING (job_id, layer, forward)
 GROUP BY l.job_id, l.layer_type, l.forward;

-- The paper's Table III per job: the model's parameter count (the largest a process of the job
-- reported in its header), then every GPU second of the job's span (layers and untracked time
-- together), so gpu_util is the job's time-weighted average utilization; shared_with: the jobs
-- that shared a GPU with it (colocated_spans), whose activity its numbers include. Its hosts are
-- those of its processes' job headers and of its layers (a layer's row names the host of its
-- first call only), its GPUs those of its spans. layers counts
-- layers (a layer run forward and backward is one); a job on the CPU only has no GPU seconds.
-- The spans are pp_gpu_spans (the fold keeps them), so that each refresh's report tables never
-- read the events' history.
CREATE VIEW IF NOT EXISTS job_overview AS
SELECT j.job_id,
       (SELECT max(params) FROM pp_jobs AS p WHERE p.job_id = j.job_id) AS parameters,
       (SELECT group_concat(h, ',') FROM (SELECT host_name AS h FROM pp_jobs AS p WHERE p.job_id = j.job_id
                                          UNION SELECT host_name FROM pp_layers AS l WHERE l.job_id = j.job_id
                                          ORDER BY 1)) AS host_name,
       (SELECT count(DISTINCT uuid) FROM pp_gpu_spans AS g WHERE g.job_id = j.job_id AND g.uuid <> 'cpu') AS gpus,
       (SELECT count(DISTINCT layer) FROM pp_layers AS l WHERE l.job_id = j.job_id AND layer <> '(untracked)') AS layers,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_DEV_GPU_UTIL')) AS gpu_util,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_DEV_FB_USED')) / 1024.0 AS gpu_mem_gib,
       pp_mean_max((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_DEV_FB_USED')) / 1024.0 AS gpu_mem_peak_gib,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_PROF_DRAM_ACTIVE')) AS dram_active,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_PROF_PIPE_FP32_ACTIVE')) AS fp32_active,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_PROF_SM_ACTIVE')) AS sm_active,
       pp_mean_value((SELECT pp_mean_merge(state) FROM layer_state AS s WHERE s.job_id = j.job_id AND s.metric = 'DCGM_FI_PROF_SM_OCCUPANCY')) AS sm_occupancy,
       (SELECT sum(last_ns - first_ns) / 1e9 FROM pp_gpu_spans AS g WHERE g.job_id = j.job_id AND g.uuid <> 'cpu')
         AS gpu_seconds,
       (SELECT group_concat(other, ',') FROM (SELECT DISTINCT other FROM pp_shared_jobs AS c WHERE c.job_id = j.job_id
                                               ORDER BY other))
         AS shared_with
  FROM (SELECT DISTINCT job_id FROM pp_layers) AS j;

-- How each GPU's stored sample times relate to the windows they describe (pp_alignment), in
-- ms: a sample stored at t describes the window that ends offset_ms before t, give or take
-- timing_ms; repeats are windows stored twice, skipped windows never stored. window_ms and
-- util_window_ms are the lengths of the stretch's windows: those of pp_intervals, or where
-- the data had not told them when the stretch was aligned, the lengths it was given then.
CREATE VIEW IF NOT EXISTS sample_alignment AS
SELECT a.uuid, a.from_ms / 1000.0 AS t_from, a.through_ms / 1000.0 AS t_through,
       a.offset_ns / 1e6 AS offset_ms, a.timing_ns / 1e6 AS timing_ms, a.drift_ppm,
       (SELECT CASE WHEN i.source IN ('median', 'estimated') THEN coalesce(a.window_ms, i.interval_ms) ELSE i.interval_ms END
          FROM pp_intervals AS i JOIN pp_metrics AS m USING (metric)
         WHERE i.uuid = a.uuid AND m.kind = 'window' LIMIT 1) AS window_ms,
       (SELECT CASE WHEN i.source IN ('median', 'estimated') THEN coalesce(a.util_window_ms, i.interval_ms) ELSE i.interval_ms END
          FROM pp_intervals AS i JOIN pp_metrics AS m USING (metric)
         WHERE i.uuid = a.uuid AND m.kind = 'driver_window' LIMIT 1) AS util_window_ms,
       a.util_phase_ns / 1e6 AS util_phase_ms, a.samples, a.repeats, a.skipped, a.moved, a.status, a.reason
  FROM pp_alignment AS a;

-- Per training step (the hook client's epoch and batch) of each job on each GPU, from the
-- events: when it ran, how long, how much of it layer calls covered, the host time since the
-- previous step ended, and its length against the mean step of that job and GPU. Stragglers
-- have a relative_duration well above 1; stalls (waiting for data, checkpoints) a long
-- gap_before_ms. Reads pp_events (every step of the history), not the result tables.
CREATE VIEW IF NOT EXISTS step_timeline AS
WITH steps AS (
  SELECT job_id, gpu_uuid AS uuid, epoch, batch, min(t_start_ns) AS first_ns, max(t_end_ns) AS last_ns,
         count(*) AS events, sum(t_end_ns - t_start_ns) AS layer_ns
    FROM pp_events
   WHERE batch IS NOT NULL AND t_start_ns >= 0 AND t_end_ns >= t_start_ns AND t_end_ns <= (1 << 62)
   GROUP BY job_id, gpu_uuid, epoch, batch)
SELECT job_id, uuid, epoch, batch, first_ns / 1e9 AS t_start, (last_ns - first_ns) / 1e6 AS duration_ms,
       events, layer_ns / 1e6 AS layer_ms,
       CASE WHEN last_ns > first_ns THEN min(1.0, layer_ns * 1.0 / (last_ns - first_ns)) END AS layer_share,
       (first_ns - lag(last_ns) OVER by_time) / 1e6 AS gap_before_ms,
       (last_ns - first_ns) / avg(last_ns - first_ns) OVER (PARTITION BY job_id, uuid) AS relative_duration
  FROM steps
WINDOW by_time AS (PARTITION BY job_id, uuid ORDER BY first_ns);
