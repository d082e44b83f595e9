-- The statements of pp_refresh's steps (src/attribution/refresh*.cpp), one named part each
-- (read with named_sql("refresh", NAME)). Parameters are named; the step that runs a part
-- binds them.

-- name: fetch_margin
-- Seconds past the last unfolded event to fetch samples for: the sample covering an event's end
-- is stored up to a window and a scrape (and the exporter's lag) later, and never less than
-- the :after_seconds that alignment uses (kSamplesAfterLastEventSeconds, refresh.hpp).
SELECT max(:after_seconds, 2 * coalesce((SELECT max(interval_ms) / 1e3 FROM main.pp_intervals), 0) + :lag_seconds);

-- name: fetch_spans
-- Per GPU and job with unfolded events, the seconds to fetch samples for: from its first event
-- (its untracked time needs every window of its span, also those between events far apart), or
-- the GPU's last sample, to its unfolded events' last end. The first event is the earlier of
-- its folded span's start (pp_gpu_spans) and its unfolded events': only the blocks holding
-- unfolded events are read (their partial index), never the job's history. (A block folded in
-- part says its unfolded events start after its fold point; a block's last end is that of all
-- its events, folded or not: at most a block's span later.)
SELECT u.uuid, u.job_id,
       max(u.t_first, coalesce((SELECT max((SELECT max(ts_ms) FROM main.pp_samples AS s
                                            WHERE s.uuid = u.uuid AND s.metric = m.metric))
                                  FROM main.pp_metrics AS m) / 1e3, 0)) AS first_s,
       u.last_end_s
  FROM (SELECT b.gpu_uuid AS uuid, b.job_id AS job_id,
               min(min(max(b.first_start_ns, coalesce(b.folded_through_ns + 1, b.first_start_ns)) / 1e9),
                   coalesce((SELECT g.first_ns / 1e9 FROM main.pp_gpu_spans AS g
                              WHERE g.uuid = b.gpu_uuid AND g.job_id = b.job_id), 9e18)) AS t_first,
               max(b.last_end_ns) / 1e9 AS last_end_s
          FROM main.pp_events_blocks AS b WHERE (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns) AND b.gpu_uuid <> 'cpu'
         GROUP BY b.gpu_uuid, b.job_id) AS u
 ORDER BY first_s, u.uuid, u.job_id;

-- name: span_end_lines
-- Where a job's span on a GPU begins and ends in its files: the file and line of its first
-- event (by start) and of its last (by end), for the error that refuses a span too long to
-- fetch (this refresh's own imports are rolled back with it, so the user cannot look them up).
-- Each with its own time (seconds), which an earlier refresh may have put before the samples
-- this one asks for.
SELECT first.place, first.t_s, last.place, last.t_s
  FROM (SELECT source_file || ' line ' || line AS place, t_start_ns / 1e9 AS t_s FROM main.pp_events
         WHERE job_id = :job_id AND gpu_uuid = :uuid ORDER BY t_start_ns LIMIT 1) AS first,
       (SELECT source_file || ' line ' || line AS place, t_end_ns / 1e9 AS t_s FROM main.pp_events
         WHERE job_id = :job_id AND gpu_uuid = :uuid ORDER BY t_end_ns DESC LIMIT 1) AS last;

-- name: fetch_gpus
-- Each GPU with unfolded events and its last sample before this refresh (of the metrics fetched:
-- one index seek per metric, where max(ts_ms) over the GPU would read all of its samples); for a
-- MIG device, the parent GPU and GPU instance whose series are its samples (pp_mig_devices, else
-- read off the MIG UUID of drivers before R470, "MIG-GPU-<parent UUID>/<GPU instance>/<compute
-- instance>").
-- A GPU needs a fetch when its samples may not reach :after_ms (or two of its windows and the
-- exporter's lag) past its unfolded events: when it has none, when its stored samples end before
-- its events do, or when the last fetch for it (pp_fetch_state) ended before that (samples
-- inserted by other means that cover the events are taken as they are). A fetch that reached
-- past the events but found no samples of their last seconds does not settle it: Prometheus may
-- store them later (a remote-write agent sends what it buffered once it is back), so each
-- refresh asks again, from the last stored sample, while events wait past it.
DELETE FROM main.pp_refresh_fetch_gpus;
INSERT INTO main.pp_refresh_fetch_gpus
SELECT g.uuid, g.host_name, g.last_end_ms, g.last_sample_ms, m.gpu_uuid, m.gpu_instance_id,
       CASE WHEN g.last_sample_ms IS NULL OR g.last_end_ms > g.last_sample_ms THEN 1
            WHEN f.fetched_through_ms IS NULL THEN 0
            ELSE g.last_end_ms + max(:after_ms, 2 * coalesce((SELECT max(interval_ms) FROM main.pp_intervals AS i
                                                               WHERE i.uuid = g.uuid), 0) + :lag_ms)
                 > f.fetched_through_ms END
  FROM (SELECT b.gpu_uuid AS uuid, max(b.host_name) AS host_name, max(b.last_end_ns) / 1000000 AS last_end_ms,
               (SELECT max((SELECT max(ts_ms) FROM main.pp_samples AS s WHERE s.uuid = b.gpu_uuid AND s.metric = m.metric))
                  FROM main.pp_metrics AS m) AS last_sample_ms
          FROM main.pp_events_blocks AS b WHERE (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns) AND b.gpu_uuid <> 'cpu' GROUP BY b.gpu_uuid) AS g
  LEFT JOIN main.pp_mig_devices AS m ON m.mig_uuid = g.uuid
  LEFT JOIN main.pp_fetch_state AS f ON f.uuid = g.uuid;
UPDATE main.pp_refresh_fetch_gpus
   SET parent_uuid = substr(uuid, 5, instr(uuid, '/') - 5),
       gpu_instance_id = CAST(substr(uuid, instr(uuid, '/') + 1) AS INTEGER)  -- CAST stops at the next '/'
 WHERE parent_uuid IS NULL AND uuid GLOB 'MIG-GPU-*/[0-9]*/[0-9]*';

-- name: gpus_without_samples
-- Whole GPUs (not MIG devices) that need a fetch (fetch_gpus) and that no pass of this refresh
-- has brought samples for yet in the range fetched, [:from_ms, :through_ms]: each one's UUID, and
-- its UUID (:by_host = 0) or host name (:by_host = 1) as the pass asks for it. With :partial,
-- also those whose samples found so far begin or end inside the time their unfolded events in
-- the range need (from the later of their first start and the GPU's last sample stored before,
-- to the earlier of their last end and :through_ms) by more than three of their own spacings
-- and :lag_ms, in every metric: an exporter that changed its UUID label's spelling (uuid, UUID) mid-job leaves
-- each pass a part of the time. Each end is two index seeks per metric.
SELECT uuid, CASE WHEN :by_host THEN host_name ELSE uuid END
  FROM (SELECT g.*, max(:from_ms, coalesce(g.last_sample_ms, :from_ms),
                        (SELECT min(max(b.first_start_ns, coalesce(b.folded_through_ns + 1, b.first_start_ns))) / 1000000
                           FROM main.pp_events_blocks AS b
                          WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)
                            AND b.last_end_ns >= :from_ms * 1000000))
                      AS need_from_ms,
               min(:through_ms,
                   (SELECT max(b.last_end_ns) / 1000000 FROM main.pp_events_blocks AS b
                     WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)
                       AND b.first_start_ns <= :through_ms * 1000000)) AS need_through_ms,
               max(coalesce(g.last_sample_ms, -1), :from_ms - 1) AS after_ms
          FROM main.pp_refresh_fetch_gpus AS g) AS g
 WHERE CASE WHEN :by_host THEN host_name ELSE uuid END IS NOT NULL
   AND g.uuid NOT GLOB 'MIG-*'
   AND needs_fetch
   AND NOT (EXISTS (SELECT 1 FROM main.pp_metrics AS m JOIN main.pp_samples AS s
                     ON s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > g.after_ms AND s.ts_ms <= :through_ms)
            AND (NOT :partial OR EXISTS (
              SELECT 1 FROM (
                SELECT (SELECT min(ts_ms) FROM main.pp_samples AS s
                         WHERE s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > g.after_ms AND s.ts_ms <= :through_ms) AS first_ms,
                       (SELECT ts_ms FROM main.pp_samples AS s
                         WHERE s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > g.after_ms AND s.ts_ms <= :through_ms
                         ORDER BY ts_ms LIMIT 1 OFFSET 1) AS second_ms,
                       (SELECT max(ts_ms) FROM main.pp_samples AS s
                         WHERE s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > g.after_ms AND s.ts_ms <= :through_ms) AS last_ms,
                       (SELECT ts_ms FROM main.pp_samples AS s
                         WHERE s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > g.after_ms AND s.ts_ms <= :through_ms
                         ORDER BY ts_ms DESC LIMIT 1 OFFSET 1) AS next_to_last_ms
                  FROM main.pp_metrics AS m) AS f
               WHERE f.first_ms <= g.need_from_ms + 3 * coalesce(f.second_ms - f.first_ms, 0) + :lag_ms
                 AND f.last_ms >= g.need_through_ms - 3 * coalesce(f.last_ms - f.next_to_last_ms, 0) - :lag_ms)));

-- name: instances_without_samples
-- The same for MIG devices whose GPU instance is known: the device's UUID, the parent GPU's and
-- the GPU_I_ID.
SELECT uuid, parent_uuid, gpu_instance_id
  FROM main.pp_refresh_fetch_gpus AS g
 WHERE parent_uuid IS NOT NULL
   AND needs_fetch
   AND NOT EXISTS (SELECT 1 FROM main.pp_metrics AS m JOIN main.pp_samples AS s
                    ON s.uuid = g.uuid AND s.metric = m.metric AND s.ts_ms > coalesce(g.last_sample_ms, -1)
                   AND s.ts_ms BETWEEN :from_ms AND :through_ms);

-- name: record_fetch
-- The GPUs this fetch asked for, through :end_ms, that have samples: one of which Prometheus
-- has none yet (or prometheus_url named the wrong server) is asked again next time.
INSERT INTO main.pp_fetch_state(uuid, fetched_through_ms)
SELECT g.uuid, :end_ms FROM main.pp_refresh_fetch_gpus AS g
 WHERE g.needs_fetch AND EXISTS (SELECT 1 FROM main.pp_samples AS s WHERE s.uuid = g.uuid)
ON CONFLICT (uuid) DO UPDATE SET fetched_through_ms = max(fetched_through_ms, excluded.fetched_through_ms);

-- name: insert_samples_by_uuid
-- The samples of :selector whose UUID (or older exporters' uuid) label names a whole GPU of the
-- unfolded events. A GPU instance's series (GPU_I_ID) never counts as its whole GPU's.
INSERT OR IGNORE INTO main.pp_samples(uuid, metric, ts_ms, value, host, gpu)
SELECT uuid, metric, ts_ms, value, host, gpu FROM pp_gpu_samples(:selector, :start, :end)
 WHERE uuid IN (SELECT b.gpu_uuid FROM main.pp_events_blocks AS b WHERE (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)) AND instance IS NULL;

-- name: insert_samples_by_instance
-- The samples of :selector of a GPU instance (parent UUID or uuid label, and GPU_I_ID), stored
-- under the MIG UUID of the events that ran on it: one row per MIG device of that instance.
-- Driver-window metrics (GPU_UTIL) are left out: NVML has no per-instance utilization, and
-- exporters that publish the series for an instance publish 0.
-- (CROSS JOIN: pp_gpu_samples is read once, first, never once per row of pp_fetch_gpus.)
INSERT OR IGNORE INTO main.pp_samples(uuid, metric, ts_ms, value, host, gpu)
SELECT g.uuid, p.metric, p.ts_ms, p.value, p.host, p.gpu FROM pp_gpu_samples(:selector, :start, :end) AS p
 CROSS JOIN main.pp_refresh_fetch_gpus AS g ON g.parent_uuid = p.uuid AND g.gpu_instance_id = CAST(p.instance AS INTEGER)
 WHERE p.instance IS NOT NULL AND CAST(p.instance AS TEXT) GLOB '[0-9]*'
   AND p.metric NOT IN (SELECT metric FROM main.pp_metrics WHERE kind = 'driver_window');

-- name: insert_samples_by_host
-- The samples of :selector matched to the unfolded events of whole GPUs by Hostname and gpu
-- index, for the GPUs that the passes by UUID label found nothing for in the range fetched,
-- [:from_ms, :through_ms] (gpus_without_samples; a MIG device's events carry its parent's index:
-- they are never matched this way). A GPU UUID names one GPU: a series whose UUID (or uuid) label
-- names another is not taken for events that name theirs (the index the events recorded may be
-- CUDA's, not the host's); events whose GPU the hook client could not name ('cuda:N') take the
-- index's series whatever they carry. Where the index named two GPUs over time (a GPU replaced),
-- each sample goes to the one whose unfolded events are nearest its time.
WITH host_gpus(uuid, host, gpu, first_ms, last_ms) AS MATERIALIZED (
  SELECT b.gpu_uuid, b.host_name, b.gpu, min(b.first_start_ns) / 1000000, max(b.last_end_ns) / 1000000
    FROM main.pp_events_blocks AS b
   WHERE (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)
     AND b.gpu_uuid NOT GLOB 'MIG-*' AND b.gpu_uuid <> 'cpu' AND b.host_name IS NOT NULL
     AND b.gpu_uuid IN (SELECT g.uuid FROM main.pp_refresh_fetch_gpus AS g
                         WHERE g.needs_fetch
                           AND NOT EXISTS (SELECT 1 FROM main.pp_metrics AS m JOIN main.pp_samples AS s
                                            ON s.uuid = g.uuid AND s.metric = m.metric
                                           AND s.ts_ms > coalesce(g.last_sample_ms, -1)
                                           AND s.ts_ms BETWEEN :from_ms AND :through_ms))
   GROUP BY b.gpu_uuid, b.host_name, b.gpu)
INSERT OR IGNORE INTO main.pp_samples(uuid, metric, ts_ms, value, host, gpu)
SELECT * FROM (
SELECT (SELECT h.uuid FROM host_gpus AS h  -- (SQLite resolves no outer column in a subquery's ORDER BY)
         WHERE h.host = p.host AND h.gpu = CAST(p.gpu AS INTEGER)
           AND (p.named IS NULL OR h.uuid NOT GLOB 'GPU-*')
           AND max(h.first_ms - p.ts_ms, p.ts_ms - h.last_ms, 0)
               <= (SELECT min(max(n.first_ms - p.ts_ms, p.ts_ms - n.last_ms, 0)) FROM host_gpus AS n
                    WHERE n.host = p.host AND n.gpu = CAST(p.gpu AS INTEGER)
                      AND (p.named IS NULL OR n.uuid NOT GLOB 'GPU-*'))
         ORDER BY h.uuid LIMIT 1) AS uuid,
       metric, ts_ms, value, host, gpu
  FROM (SELECT uuid AS named, metric, ts_ms, value, host, gpu, instance FROM pp_gpu_samples(:selector, :start, :end)) AS p
 WHERE p.instance IS NULL) AS matched
 WHERE matched.uuid IS NOT NULL;

-- name: series_table
-- main.pp_refresh_series: each series (uuid, metric) of pp_samples and its last ts_ms.
DELETE FROM main.pp_refresh_series;

-- name: first_series
SELECT uuid, metric FROM main.pp_samples ORDER BY uuid, metric LIMIT 1;

-- name: next_metric_of_gpu
-- (Two seeks per step of the skip scan: a row value (uuid, metric) > (?, ?) would seek on uuid
-- alone and scan the rest.)
SELECT uuid, metric FROM main.pp_samples WHERE uuid = :uuid AND metric > :metric ORDER BY metric LIMIT 1;

-- name: first_series_of_next_gpu
SELECT uuid, metric FROM main.pp_samples WHERE uuid > :uuid ORDER BY uuid, metric LIMIT 1;

-- name: add_series
INSERT INTO main.pp_refresh_series(uuid, metric, last_ms)
VALUES (:uuid, :metric, (SELECT max(ts_ms) FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric));

-- name: intervals_from_setting
INSERT INTO main.pp_intervals(uuid, metric, interval_ms, source)
SELECT uuid, metric, :interval_ms, 'setting' FROM main.pp_refresh_series WHERE true
ON CONFLICT (uuid, metric) DO UPDATE SET interval_ms = excluded.interval_ms, source = 'setting'
 WHERE source <> 'user';

-- name: series_without_interval
SELECT uuid, metric FROM main.pp_refresh_series AS n
 WHERE NOT EXISTS (SELECT 1 FROM main.pp_intervals i WHERE i.uuid = n.uuid AND i.metric = n.metric);

-- name: series_times
SELECT ts_ms FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric ORDER BY ts_ms;

-- name: add_median_interval
INSERT OR IGNORE INTO main.pp_intervals(uuid, metric, interval_ms, source) VALUES (:uuid, :metric, :interval_ms, 'median');

-- name: mixed_spacings
-- A GPU whose metrics' median spacings (pp_intervals, 'median') lie more than 1.5x apart, with
-- each: its metrics are stored at other times (scraped by two jobs at other intervals), where
-- the align step places one grid of windows per GPU.
SELECT uuid, group_concat(metric || ' ' || CAST(round(interval_ms) AS INTEGER) || ' ms', ', ') FROM (
  SELECT uuid, metric, interval_ms FROM main.pp_intervals WHERE uuid = :uuid AND source = 'median' ORDER BY metric)
 GROUP BY uuid HAVING max(interval_ms) > 1.5 * min(interval_ms);

-- name: late_events
-- Unfolded events that start before their GPU's fold point arrived after (some of) their sample
-- windows were folded, so those overlaps are lost (an index range).
SELECT count(*) FROM main.pp_fold_state AS f CROSS JOIN main.pp_events AS e
 WHERE e.gpu_uuid = f.uuid AND e.t_start_ns < f.folded_through_ms * 1000000 AND e.folded = 0;

-- name: gpus_never_sampled
-- GPUs of unfolded events with no samples at all, each with its unfolded events (a block's
-- count: an impossible event counts too), the first of their jobs by id and how many jobs; for
-- a MIG device whose GPU instance is known, the parent GPU and the GPU_I_ID looked for (as
-- pp_mig_devices has it, or read off an R470-era MIG UUID), whether that is a GPU_I_ID at all
-- (a whole number from 0), and whether a pp_mig_devices row said it. Reads only what can match:
-- the GPUs of the event blocks one index seek each, then the blocks of GPUs without samples.
WITH RECURSIVE gpus(uuid) AS (
  SELECT min(gpu_uuid) FROM main.pp_events_blocks
  UNION ALL SELECT (SELECT min(gpu_uuid) FROM main.pp_events_blocks WHERE gpu_uuid > g.uuid)
    FROM gpus AS g WHERE g.uuid IS NOT NULL)
SELECT g.uuid,
       (SELECT sum(events) FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)),
       (SELECT min(job_id) FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)),
       (SELECT count(DISTINCT job_id) FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)),
       coalesce(m.gpu_uuid, CASE WHEN g.uuid GLOB 'MIG-GPU-*/[0-9]*/[0-9]*' THEN substr(g.uuid, 5, instr(g.uuid, '/') - 5) END),
       coalesce(m.gpu_instance_id, CASE WHEN g.uuid GLOB 'MIG-GPU-*/[0-9]*/[0-9]*' THEN CAST(substr(g.uuid, instr(g.uuid, '/') + 1) AS INTEGER) END),
       m.mig_uuid IS NULL OR (typeof(m.gpu_instance_id) = 'integer' AND m.gpu_instance_id >= 0),
       m.mig_uuid IS NOT NULL
  FROM gpus AS g LEFT JOIN main.pp_mig_devices AS m ON m.mig_uuid = g.uuid
 WHERE g.uuid IS NOT NULL AND g.uuid <> 'cpu'
   AND NOT EXISTS (SELECT 1 FROM main.pp_samples s WHERE s.uuid = g.uuid)
   AND EXISTS (SELECT 1 FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns))
   AND NOT (g.uuid GLOB 'MIG-*' AND g.uuid NOT GLOB 'MIG-GPU-*/[0-9]*/[0-9]*'  -- mig_devices_without_mapping
            AND m.mig_uuid IS NULL)
 ORDER BY g.uuid;

-- name: events_before_first_sample
-- On a GPU's first fold (its window from after_ms 0): its unfolded events that end before
-- :cutoff_ns, when its first stored sample's window could begin at the earliest (the sample's
-- time less the GPU's longest window and the exporter's largest lag), per job: how many, the
-- first start and the last end. No window covers them: the fold marks them folded with nothing.
-- Blocks that end before the cutoff count from their own columns; only one the cutoff cuts,
-- or one holding impossible times, is decoded.
WITH blocks AS (
  SELECT * FROM main.pp_events_blocks
   WHERE gpu_uuid = :uuid AND first_start_ns < :cutoff_ns
     AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns))
SELECT job_id, sum(n), min(first_ns), max(last_ns) FROM (
  SELECT job_id, events AS n, first_start_ns AS first_ns, last_end_ns AS last_ns FROM blocks
   WHERE last_end_ns < :cutoff_ns AND impossible = 0 AND folded_through_ns IS NULL
  UNION ALL
  SELECT e.job_id, count(*), min(e.t_start_ns), max(e.t_end_ns)
    FROM blocks AS b CROSS JOIN main.pp_events AS e
   WHERE NOT (b.last_end_ns < :cutoff_ns AND b.impossible = 0 AND b.folded_through_ns IS NULL)
     AND e.block = b.id AND e.folded = 0 AND e.t_end_ns < :cutoff_ns AND e.t_end_ns >= e.t_start_ns
   GROUP BY e.job_id)
 WHERE n > 0
 GROUP BY job_id ORDER BY job_id;

-- name: first_sample_cutoff
-- A GPU's first stored sample (of the metrics of pp_metrics: one index seek each) less its
-- longest window and :lag_ms, in ns; NULL when it has none.
SELECT ((SELECT min((SELECT min(ts_ms) FROM main.pp_samples AS s WHERE s.uuid = :uuid AND s.metric = m.metric))
           FROM main.pp_metrics AS m)
        - coalesce((SELECT max(interval_ms) FROM main.pp_intervals WHERE uuid = :uuid), 0) - :lag_ms) * 1000000;

-- name: metrics_missing
-- Per GPU folded now whose samples were fetched (pp_fetch_state: not those inserted by hand), the
-- metrics of pp_metrics with no sample in its fold window where others have some: an exporter
-- without the profiling metrics, or a DCGM whose profiling was held by another tool (its fields
-- come blank). A MIG device has no driver-window metric (GPU_UTIL) to miss.
SELECT uuid, group_concat(metric, ', ') FROM (
  SELECT w.uuid, m.metric
    FROM main.pp_refresh_fold_window AS w CROSS JOIN main.pp_metrics AS m
   WHERE w.uuid <> 'cpu' AND EXISTS (SELECT 1 FROM main.pp_fetch_state AS f WHERE f.uuid = w.uuid)
     AND NOT (w.uuid GLOB 'MIG-*' AND m.kind = 'driver_window')
     AND NOT EXISTS (SELECT 1 FROM main.pp_samples AS s
                      WHERE s.uuid = w.uuid AND s.metric = m.metric AND s.ts_ms > w.after_ms AND s.ts_ms <= w.through_ms)
     AND EXISTS (SELECT 1 FROM main.pp_metrics AS o JOIN main.pp_samples AS s
                  ON s.uuid = w.uuid AND s.metric = o.metric AND s.ts_ms > w.after_ms AND s.ts_ms <= w.through_ms)
   ORDER BY w.uuid, m.metric)
 GROUP BY uuid ORDER BY uuid;

-- name: mig_devices_without_mapping
-- MIG devices of unfolded events without samples whose GPU instance pp_mig_devices does not
-- say (nor their UUID, as before driver R470), with their unfolded events: the MIG UUIDs in
-- the index's range 'MIG-' .. 'MIG.', one seek each.
WITH RECURSIVE migs(uuid) AS (
  SELECT min(gpu_uuid) FROM main.pp_events_blocks WHERE gpu_uuid >= 'MIG-' AND gpu_uuid < 'MIG.'
  UNION ALL SELECT (SELECT min(gpu_uuid) FROM main.pp_events_blocks WHERE gpu_uuid > g.uuid AND gpu_uuid < 'MIG.')
    FROM migs AS g WHERE g.uuid IS NOT NULL)
SELECT g.uuid, (SELECT count(*) FROM main.pp_events e WHERE e.gpu_uuid = g.uuid AND e.folded = 0) AS events
  FROM migs AS g
 WHERE g.uuid IS NOT NULL AND g.uuid NOT GLOB 'MIG-GPU-*/[0-9]*/[0-9]*'
   AND NOT EXISTS (SELECT 1 FROM main.pp_mig_devices AS m WHERE m.mig_uuid = g.uuid)
   AND NOT EXISTS (SELECT 1 FROM main.pp_samples s WHERE s.uuid = g.uuid)
   AND EXISTS (SELECT 1 FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = g.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns))
 ORDER BY g.uuid;

-- name: fold_windows
-- Per GPU, the sample windows to fold: up to the last aligned sample (pp_alignment), or, while
-- the job may still write events into the last windows, up to the start of its last known
-- event; and, but when final, not from the first stretch among the last :revisable whose
-- window length (or GPU_UTIL's period) is not known yet on: a later stretch may tell it
-- (align_samples.cpp; with a pinned offset, status 'setting', the window's is never told).
-- Each value is an index seek (main.pp_refresh_series, max(t_start_ns) of pp_events_by_gpu_time; the
-- last :revisable stretches of pp_alignment, and the newest one's through_ms: a GPU's stretches
-- follow each other, where max(through_ms) would read each it ever had); the last event's end is read only when it decides (not :final), from the folded spans
-- (pp_gpu_spans) and the unfolded events (their partial index), never the GPU's history. CPU
-- events have no samples: their durations fold at once.
DELETE FROM main.pp_refresh_fold_window;
INSERT INTO main.pp_refresh_fold_window(uuid, after_ms, through_ms)
SELECT s.uuid, coalesce(f.folded_through_ms, 0),
       CASE WHEN :final OR :now - max(coalesce((SELECT max(last_ns) FROM main.pp_gpu_spans AS g WHERE g.uuid = s.uuid), 0),
                                      coalesce((SELECT max(b.last_end_ns) FROM main.pp_events_blocks AS b
                                                 WHERE b.gpu_uuid = s.uuid AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)), 0)) / 1e9 > :margin
            THEN s.last_ms
            ELSE min(s.last_ms, (SELECT max(b.last_start_ns) FROM main.pp_events_blocks AS b
                                  WHERE b.gpu_uuid = s.uuid
                                    AND b.first_start_ns >= (SELECT max(first_start_ns) FROM main.pp_events_blocks
                                                              WHERE gpu_uuid = s.uuid) - 1000000000) / 1000000) END
  FROM (SELECT p.uuid,
               min(max(p.last_ms), (SELECT through_ms FROM main.pp_alignment AS a WHERE a.uuid = p.uuid
                                     ORDER BY from_ms DESC LIMIT 1),
                   coalesce((SELECT min(from_ms)
                               FROM (SELECT from_ms, window_ms, util_window_ms, status FROM main.pp_alignment AS a
                                      WHERE a.uuid = p.uuid AND NOT :final ORDER BY from_ms DESC LIMIT :revisable)
                              WHERE (window_ms IS NOT NULL AND status <> 'setting') OR util_window_ms IS NOT NULL),
                            max(p.last_ms))) AS last_ms
          FROM main.pp_refresh_series AS p GROUP BY p.uuid) AS s
  LEFT JOIN main.pp_fold_state AS f ON f.uuid = s.uuid
 WHERE s.last_ms IS NOT NULL
   AND EXISTS (SELECT 1 FROM main.pp_events_blocks WHERE gpu_uuid = s.uuid)
   AND EXISTS (SELECT 1 FROM main.pp_intervals i WHERE i.uuid = s.uuid);
INSERT INTO main.pp_refresh_fold_window(uuid, after_ms, through_ms)
SELECT 'cpu', 0, 4102444800000
 WHERE EXISTS (SELECT 1 FROM main.pp_events_blocks AS b WHERE b.gpu_uuid = 'cpu' AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns));
-- A GPU with nothing new to fold keeps an empty window (its fold point, twice) where events
-- arrived after their windows were folded (late_events: another job's files refreshed after
-- the first job's, a hook client that flushed late): they are folded without windows, their
-- calls counted and their spans in pp_gpu_spans, so that a job that shared the GPU is seen as
-- sharing it (colocated_spans, the estimator's joint system) instead of waiting unfolded for
-- good, estimated alone from windows that hold both jobs.
DELETE FROM main.pp_refresh_fold_window
 WHERE through_ms <= after_ms
   AND NOT EXISTS (SELECT 1 FROM main.pp_events_blocks AS b
                    WHERE b.gpu_uuid = pp_refresh_fold_window.uuid
                      AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)
                      AND b.first_start_ns < pp_refresh_fold_window.after_ms * 1000000);
UPDATE main.pp_refresh_fold_window SET through_ms = after_ms WHERE through_ms < after_ms;

-- name: fold_windows_list
SELECT uuid, after_ms, through_ms FROM main.pp_refresh_fold_window;

-- name: fold_means_table
-- Per GPU, the overlap means of its windows to fold (fold.cpp: what
--   SELECT w.uuid, m.* FROM main.pp_refresh_fold_window AS w, pp_overlap_means(w.uuid, w.after_ms, w.through_ms) AS m
-- gives), for sql/fold.sql.
DELETE FROM main.pp_refresh_fold_means;

-- name: add_fold_means
INSERT INTO main.pp_refresh_fold_means(uuid, job_id, layer, forward, metric, state, first_id, windows)
VALUES (:uuid, :job_id, :layer, :forward, :metric, :state, :first_id, :windows);

-- name: fold_spans_table
DELETE FROM main.pp_refresh_fold_spans;

-- name: add_fold_span
INSERT INTO main.pp_refresh_fold_spans(job_id, uuid, first_ns, last_ns, events, longest_ns)
VALUES (:job_id, :uuid, :first_ns, :last_ns, :events, :longest_ns);

-- name: impossible_events
-- Events not folded yet whose times cannot be a call (an earlier version imported them, and
-- users may insert them): they end before they start, or lie outside [0, 2^62] ns, where
-- durations would overflow. The fold leaves them out; pp_refresh warns once, since mark_folded
-- then passes them by for good. Only the blocks that hold such events are read (their partial
-- index).
SELECT count(*) FROM main.pp_events_blocks AS b CROSS JOIN main.pp_events AS e
 WHERE b.impossible > 0 AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns)
   AND e.block = b.id AND e.folded = 0
   AND NOT (e.t_start_ns >= 0 AND e.t_end_ns >= e.t_start_ns AND e.t_end_ns <= (1 << 62));

-- name: mark_folded
-- The events whose durations the fold counted: those that start by the GPU's fold point. Each
-- block holding unfolded events moves its own fold point there (one partial index range).
UPDATE main.pp_events_blocks SET folded_through_ns = max(coalesce(folded_through_ns, :through_ms * 1000000),
                                                         :through_ms * 1000000)
 WHERE gpu_uuid = :uuid AND first_start_ns <= :through_ms * 1000000
   AND (folded_through_ns IS NULL OR folded_through_ns < last_start_ns);

-- name: windows_folded
-- Distinct (GPU, ts_ms) windows folded: the overlap means count them for each GPU they gave
-- rows for (main.pp_refresh_fold_means.windows); the others (no event in their windows) are counted here.
SELECT coalesce(sum(coalesce(
  (SELECT max(windows) FROM main.pp_refresh_fold_means AS m WHERE m.uuid = w.uuid),
  (SELECT count(DISTINCT s.ts_ms) FROM main.pp_samples AS s
     JOIN main.pp_intervals AS i ON i.uuid = s.uuid AND i.metric = s.metric
    WHERE s.uuid = w.uuid AND s.ts_ms > w.after_ms AND s.ts_ms <= w.through_ms))), 0)
  FROM main.pp_refresh_fold_window AS w;

-- name: shared_gpus
-- The jobs that shared a GPU, for the pairs where this fold added events of either job
-- (main.pp_refresh_fold_spans), so that a pair is named when its data arrive, not on every refresh.
-- The pairs are found from those jobs' spans (pp_shared_jobs), not from every pair on the GPU.
WITH pairs AS (
  SELECT DISTINCT f.uuid, min(f.job_id, p.other) AS job_a, max(f.job_id, p.other) AS job_b
    FROM main.pp_refresh_fold_spans AS f JOIN main.pp_shared_jobs AS p ON p.job_id = f.job_id AND p.uuid = f.uuid)
SELECT c.uuid, c.job_a, c.job_b,
       strftime('%Y-%m-%d %H:%M:%f', c.t_from, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', c.t_through, 'unixepoch'),
       printf('%.1f', c.seconds)
  FROM pairs JOIN main.colocated_spans AS c USING (uuid, job_a, job_b)
 ORDER BY c.uuid, c.job_a, c.job_b;

-- name: unnamed_gpus_of_several_devices
-- The GPUs this fold added events to whose name is no UUID ('cuda:N': the hook client could not
-- name the device), where the events of that name over the same time came from more than one
-- host or device index: every step keys a GPU by its name, so those devices are one GPU here.
-- Per name: how many devices, and each as 'HOST gpu INDEX'.
WITH folded AS (
  SELECT uuid, min(first_ns) AS first_ns, max(last_ns) AS last_ns FROM main.pp_refresh_fold_spans
   WHERE uuid NOT GLOB 'GPU-*' AND uuid NOT GLOB 'MIG-*' AND uuid <> 'cpu' GROUP BY uuid),
devices AS (
  SELECT DISTINCT f.uuid, b.host_name, b.gpu FROM folded AS f JOIN main.pp_events_blocks AS b
      ON b.gpu_uuid = f.uuid AND b.first_start_ns <= f.last_ns AND b.last_end_ns >= f.first_ns)
SELECT uuid, count(*), group_concat(coalesce(host_name, '(no host)') || ' gpu ' || coalesce(gpu, '(no index)'), ', ')
  FROM (SELECT * FROM devices ORDER BY uuid, host_name, gpu)
 GROUP BY uuid HAVING count(*) > 1 ORDER BY uuid;

-- name: waiting_events
-- After a fold: events of sampled GPUs still unfolded (their partial
-- index), how many seconds of the newest GPU's events they cover (not final: waiting for
-- the margin; final: past the GPU's last sample), and when the last of them ended (unix
-- seconds, NULL when none wait): pp_refresh's warning and its row's events_waiting and
-- waiting_end_time. An event that ends before
-- its GPU's fold point is not waiting: its windows are folded, so it never will be (late_events
-- counts it; one of no length at the fold point is waiting). A block the fold has not reached,
-- that starts at or after the fold point and whose times
-- can all be calls is counted from its own columns; only the others are decoded.
WITH unfolded AS (
  SELECT b.*, coalesce((SELECT f.folded_through_ms FROM main.pp_fold_state AS f WHERE f.uuid = b.gpu_uuid), 0)
              * 1000000 AS fold_point_ns
    FROM main.pp_events_blocks AS b
   WHERE (b.folded_through_ns IS NULL OR b.folded_through_ns < b.last_start_ns) AND b.gpu_uuid <> 'cpu'
     AND EXISTS (SELECT 1 FROM main.pp_samples AS s WHERE s.uuid = b.gpu_uuid)),
parts AS (
  SELECT sum(events) AS events, min(first_start_ns) AS first_ns, max(last_end_ns) AS last_ns FROM unfolded
   WHERE impossible = 0 AND (folded_through_ns IS NULL OR folded_through_ns < first_start_ns)
     AND first_start_ns >= fold_point_ns
  UNION ALL
  SELECT count(*), min(e.t_start_ns), max(e.t_end_ns)
    FROM unfolded AS b CROSS JOIN main.pp_events AS e
   WHERE NOT (b.impossible = 0 AND (b.folded_through_ns IS NULL OR b.folded_through_ns < b.first_start_ns)
              AND b.first_start_ns >= b.fold_point_ns)
     AND e.block = b.id AND e.folded = 0 AND (e.t_end_ns > b.fold_point_ns OR e.t_start_ns >= b.fold_point_ns)
     AND e.t_start_ns >= 0 AND e.t_end_ns >= e.t_start_ns AND e.t_end_ns <= (1 << 62))
SELECT coalesce(sum(events), 0), coalesce((max(last_ns) - min(first_ns)) / 1e9, 0),
       CASE WHEN sum(events) > 0 THEN max(last_ns) / 1e9 END FROM parts;

-- name: empty_work_tables
-- The work tables are empty between refreshes (schema.sql).
DELETE FROM main.pp_refresh_fetch_gpus;
DELETE FROM main.pp_refresh_series;
DELETE FROM main.pp_refresh_fold_window;
DELETE FROM main.pp_refresh_fold_means;
DELETE FROM main.pp_refresh_fold_spans;
DELETE FROM main.pp_refresh_retention_cuts;
