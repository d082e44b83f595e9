-- The statements of pp_refresh's align step (src/attribution/align_samples.cpp and
-- alignment_data.cpp), one named part each.

-- name: gpus_to_align
-- GPUs with events whose newest sample is past what is aligned (main.pp_refresh_series: the series of
-- pp_samples and their last stored time, listed by the intervals step). What is aligned ends with
-- the newest stretch (a GPU's stretches follow each other, as the align step reads them back):
-- one seek, where max(through_ms) would read every stretch the GPU ever had, 8,640 a day.
SELECT s.uuid
  FROM (SELECT uuid, max(last_ms) AS last_ms FROM main.pp_refresh_series GROUP BY uuid) AS s
 WHERE s.uuid <> 'cpu'
   AND s.last_ms > coalesce((SELECT through_ms FROM main.pp_alignment AS a WHERE a.uuid = s.uuid
                              ORDER BY from_ms DESC LIMIT 1), -1)
   AND EXISTS (SELECT 1 FROM main.pp_events_blocks AS e WHERE e.gpu_uuid = s.uuid);

-- name: metrics_of_gpu
SELECT m.metric, m.kind FROM main.pp_metrics AS m
 WHERE EXISTS (SELECT 1 FROM main.pp_refresh_series AS s WHERE s.uuid = :uuid AND s.metric = m.metric)
 ORDER BY m.metric;

-- name: samples_of_metric
SELECT ts_ms, value FROM main.pp_samples WHERE uuid = :uuid AND metric = :metric AND ts_ms >= :from ORDER BY ts_ms;

-- name: job_spans
-- Each job's span of folded events on the GPU, and its longest event (how far back an event
-- overlapping a time may have started); alignment_data.cpp adds the spans of the unfolded
-- events, so that the GPU's history is never read. Here and below, events whose times cannot
-- be a call (ending before they start, outside [0, 2^62] ns: an earlier version imported such)
-- are left out, and so are the spans an earlier version made of them.
SELECT job_id, first_ns, last_ns, longest_ns FROM main.pp_gpu_spans
 WHERE uuid = :uuid AND first_ns >= 0 AND last_ns >= first_ns AND last_ns <= (1 << 62);

-- name: samples_after
-- How long after a job's last event the GPU's samples are needed (ms): :after_ms, or two of
-- its windows and the exporter's lag where that is longer (the sample covering the last event
-- is stored that much later at most).
SELECT max(:after_ms, 2 * coalesce((SELECT max(interval_ms) FROM main.pp_intervals WHERE uuid = :uuid), 0) + :lag_ms);

-- name: previous_segments
-- The GPU's stretches that aligning the next ones reads, as if it went on from them in one
-- refresh: the last 8, and back to the sixth newest 'estimated' one (the drift is fitted to the
-- last six; a long pause of stretches without layers lies between) and to the newest with a
-- driver phase. Each with its first stored time (how long no sample was stored before it).
SELECT from_ms, through_ms, offset_ns, timing_ns, status, util_phase_ns, drift_ppm, window_ms, util_window_ms,
       (SELECT min(w.ts_ms) FROM main.pp_windows AS w WHERE w.uuid = :uuid AND w.ts_ms > a.from_ms)
  FROM main.pp_alignment AS a
 WHERE uuid = :uuid
   AND from_ms >= min(
         coalesce((SELECT from_ms FROM main.pp_alignment WHERE uuid = :uuid ORDER BY from_ms DESC LIMIT 1 OFFSET 7),
                  -9223372036854775808),
         coalesce((SELECT min(from_ms) FROM (SELECT from_ms FROM main.pp_alignment
                                              WHERE uuid = :uuid AND status = 'estimated' ORDER BY from_ms DESC LIMIT 6)),
                  9223372036854775807),
         coalesce((SELECT from_ms FROM main.pp_alignment WHERE uuid = :uuid AND util_phase_ns IS NOT NULL
                    ORDER BY from_ms DESC LIMIT 1),
                  9223372036854775807))
 ORDER BY from_ms DESC;

-- name: folded_through
SELECT folded_through_ms FROM main.pp_fold_state WHERE uuid = :uuid;

-- name: forget_window_lengths
-- A stretch aligned earlier whose window length (:window) or driver period (:util) the data
-- told now: its windows take the length of pp_intervals.
UPDATE main.pp_alignment SET window_ms = iif(:window, NULL, window_ms), util_window_ms = iif(:util, NULL, util_window_ms)
 WHERE uuid = :uuid AND from_ms = :from_ms;
UPDATE main.pp_windows SET window_ms = iif(:window, NULL, window_ms), util_window_ms = iif(:util, NULL, util_window_ms)
 WHERE uuid = :uuid AND ts_ms > :from_ms AND ts_ms <= :through_ms;

-- name: window_of
SELECT end_ns, util_end_ns FROM main.pp_windows WHERE uuid = :uuid AND ts_ms = :ts_ms;

-- name: own_windows_before
-- The newest :count windows placed at or before :through_ms, but stored copies, newest first: a
-- stretch without layers places its own as these were (idle_windows.hpp).
SELECT ts_ms, end_ns FROM main.pp_windows
 WHERE uuid = :uuid AND ts_ms <= :through_ms AND copy_of_ms IS NULL
 ORDER BY ts_ms DESC LIMIT :count;

-- name: series_window
-- A window declared in pp_metrics wins over everything and is copied to pp_intervals.
INSERT INTO main.pp_intervals(uuid, metric, interval_ms, source)
SELECT :uuid, metric, window_ms, 'user' FROM main.pp_metrics WHERE metric = :metric AND window_ms IS NOT NULL
ON CONFLICT (uuid, metric) DO UPDATE SET interval_ms = excluded.interval_ms, source = 'user';
SELECT interval_ms, source FROM main.pp_intervals WHERE uuid = :uuid AND metric = :metric;

-- name: save_estimated_window
INSERT INTO main.pp_intervals(uuid, metric, interval_ms, source) VALUES (:uuid, :metric, :window_ms, 'estimated')
ON CONFLICT (uuid, metric) DO UPDATE SET interval_ms = excluded.interval_ms, source = 'estimated'
 WHERE source NOT IN ('setting', 'user');

-- name: insert_segment
INSERT INTO main.pp_alignment(uuid, from_ms, through_ms, offset_ns, timing_ns, drift_ppm, util_phase_ns,
                              util_timing_ns, samples, repeats, skipped, moved, status, window_ms, util_window_ms,
                              reason)
VALUES (:uuid, :from_ms, :through_ms, :offset_ns, :timing_ns, :drift_ppm, :util_phase_ns, :util_timing_ns,
        :samples, :repeats, :skipped, :moved, :status, :window_ms, :util_window_ms, nullif(:reason, ''));

-- name: insert_window
INSERT OR REPLACE INTO main.pp_windows(uuid, ts_ms, end_ns, util_end_ns, copy_of_ms, util_copy, window_ms,
                                       util_window_ms)
VALUES (:uuid, :ts_ms, :end_ns, :util_end_ns, :copy_of_ms, :util_copy, :window_ms, :util_window_ms);
