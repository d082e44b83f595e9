-- Jobs that share a GPU: detected, warned about, and never called identified.
-- Events: tests/data/colocation/shared.jsonl and separate.jsonl, T0 = 1700000100 (unix s).
--   GPU c (shared): jobP's mlp runs [k, k + 0.5] and jobQ's emb [k + 0.5, k + 1] for k = 0..3,
--     the two jobs taking turns on the GPU as under time-slicing; jobW runs mlp on the same GPU
--     later, [10, 11] and [11.5, 12], after both have ended: one GPU, but not at the same time.
--   GPU d runs jobR and GPU e runs jobT over the same seconds: no GPU shared.
--   jobU and jobV both run on 'cpu' at the same time: a CPU is not a shared GPU.
-- Samples, 1 s windows stored at their ends (so sample_offset_ms is 0), inserted directly:
--   GPU c: jobP's layer alone would read GPU_UTIL 80, jobQ's 20; each of windows 1-4 holds half
--     of each, 50. Window 11 is jobW's mlp whole (60), window 12 half of it (30); idle 0.
--   GPU d: 40 in windows 1-4 (jobR's mlp at 80 half of each); GPU e: 10 (jobT's emb at 20).
-- SM_ACTIVE is GPU_UTIL / 100 throughout.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 14),
gpu(uuid, util) AS (VALUES ('GPU-c0000000-0000-4000-8000-000000000000', 50),
                           ('GPU-d0000000-0000-4000-8000-000000000000', 40),
                           ('GPU-e0000000-0000-4000-8000-000000000000', 10)),
v AS (SELECT g.uuid, (1700000100 + i.n) * 1000 AS ts_ms,
             CASE WHEN i.n <= 4 THEN g.util
                  WHEN g.uuid LIKE 'GPU-c%' AND i.n = 11 THEN 60
                  WHEN g.uuid LIKE 'GPU-c%' AND i.n = 12 THEN 30 ELSE 0 END AS util
        FROM gpu AS g, i)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT uuid, 'DCGM_FI_DEV_GPU_UTIL', ts_ms, util FROM v
UNION ALL SELECT uuid, 'DCGM_FI_PROF_SM_ACTIVE', ts_ms, util / 100.0 FROM v;
SELECT count(*) = 2 * 3 * 14 FROM pp_samples;
SELECT events_added = 20 FROM pp_refresh('${SOURCE_DIR}/tests/data/colocation/*.jsonl', 1);

-- One row: jobP and jobQ on GPU c, from jobQ's first event (T0 + 0.5) to jobP's last (T0 + 3.5).
SELECT group_concat(name, ',') = 'uuid,job_a,job_b,t_from,t_through,seconds,events_a,events_b'
  FROM pragma_table_info('colocated_spans');
SELECT count(*) = 1 FROM colocated_spans;
SELECT uuid = 'GPU-c0000000-0000-4000-8000-000000000000' AND job_a = 'jobP' AND job_b = 'jobQ'
   AND t_from = 1700000100.5 AND t_through = 1700000103.5 AND seconds = 3.0
   AND events_a = 4 AND events_b = 4
  FROM colocated_spans;
-- jobW used GPU c after both had ended; jobR and jobT ran at once on GPUs of their own; jobU
-- and jobV on CPUs: none of them is in a pair.
SELECT count(*) = 0 FROM colocated_spans WHERE 'jobW' IN (job_a, job_b) OR 'jobR' IN (job_a, job_b)
    OR 'jobT' IN (job_a, job_b) OR uuid = 'cpu';
-- The spans it compares: one row per job and GPU, every event counted once.
SELECT count(*) = 7 AND sum(events) = 20 FROM pp_gpu_spans;

-- The refresh said so, naming the GPU, the jobs and when, and what it means.
SELECT pp_last_warnings() LIKE '%pp_refresh: GPU GPU-c0000000-0000-4000-8000-000000000000 was shared by jobs jobP and jobQ'
       || ' from 2023-11-14 22:15:00.500 to 2023-11-14 22:15:03.500 UTC (3.0 s): its samples describe both jobs'
       || ' at once, so their overlap means blend the two; the estimator solves them jointly'
       || ' (layer_estimates.shared_with); see colocated_spans%';
-- Once: about that pair and no other.
SELECT (length(pp_last_warnings()) - length(replace(pp_last_warnings(), 'was shared by', ''))) = length('was shared by');

-- Table II: jobP's mlp reads 50, the blend of its own 80 and jobQ's 20, and its note says why.
SELECT abs(gpu_util - 50) < 1e-9
   AND note = 'GPU shared with another job (colocated_spans): the means blend both jobs; see layer_estimates'
  FROM layer_metrics WHERE job_id = 'jobP' AND layer = 'mlp';
SELECT note = 'GPU shared with another job (colocated_spans): the means blend both jobs; see layer_estimates'
  FROM layer_metrics WHERE job_id = 'jobQ' AND layer = 'emb';
-- jobQ's layer is not jobP's untracked time: one of the two ran throughout jobP's span.
SELECT count(*) = 0 FROM layer_metrics WHERE job_id = 'jobP' AND layer = '(untracked)';
-- The jobs that shared nothing keep their notes.
SELECT count(*) = 0 FROM layer_metrics WHERE job_id NOT IN ('jobP', 'jobQ') AND note LIKE 'GPU shared%';
SELECT note = 'GPU time in the job not covered by any layer event'
  FROM layer_metrics WHERE job_id = 'jobR' AND layer = '(untracked)';
SELECT count(*) = 2 AND min(note) = 'ran on CPU: no GPU samples' AND max(note) = 'ran on CPU: no GPU samples'
  FROM layer_metrics WHERE job_id IN ('jobU', 'jobV');
SELECT abs(gpu_util - 40) < 1e-9 AND note IS NULL FROM layer_metrics WHERE job_id = 'jobR' AND layer = 'mlp';
-- Table III names the job each shared a GPU with; the others shared with no one.
SELECT group_concat(job_id || ':' || shared_with, ' ') = 'jobP:jobQ jobQ:jobP'
  FROM (SELECT * FROM job_overview WHERE shared_with IS NOT NULL ORDER BY job_id);
SELECT count(*) = 5 FROM job_overview WHERE shared_with IS NULL;

-- jobP and jobQ are solved in one system, but every window holds half of each: it cannot tell
-- mlp from emb, and says so (jobR's mlp, alone on its GPU, gets its 80).
SELECT count(*) = 2 AND sum(confidence = 'not identified: the interval is the honest answer') = 2
   AND group_concat(job_id || ':' || shared_with, ' ') = 'jobP:jobQ jobQ:jobP'
  FROM (SELECT * FROM layer_estimates WHERE job_id IN ('jobP', 'jobQ') AND metric = 'DCGM_FI_DEV_GPU_UTIL'
         ORDER BY job_id);
SELECT abs(estimate - 80) < 1e-6 AND shared_with IS NULL FROM layer_estimates
 WHERE job_id = 'jobR' AND layer = 'mlp' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) > 0 AND count(*) = sum(confidence LIKE 'not identified: %')
  FROM layer_type_estimates WHERE job_id IN ('jobP', 'jobQ');
-- Everyone else's confidence is the estimator's own.
SELECT count(*) > 0 AND count(*) = sum(confidence IN ('identified', 'not identified: the interval is the honest answer'))
  FROM layer_estimates WHERE job_id NOT IN ('jobP', 'jobQ');
SELECT count(*) > 0 AND count(*) = sum(confidence IN ('identified', 'not identified: the interval is the honest answer'))
  FROM layer_type_estimates WHERE job_id NOT IN ('jobP', 'jobQ');

-- Refreshing again with nothing new warns about nothing.
SELECT events_added = 0 FROM pp_refresh('${SOURCE_DIR}/tests/data/colocation/*.jsonl', 1);
SELECT coalesce(pp_last_warnings(), '') NOT LIKE '%shared%';
SELECT count(*) = 1 FROM colocated_spans;

-- A database made before pp_gpu_spans gets the spans of its folded events once, on install.
CREATE TEMP TABLE spans_before AS SELECT * FROM pp_gpu_spans;
DELETE FROM pp_gpu_spans;
DELETE FROM pp_meta WHERE key = 'gpu_spans';
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_install_views() LIKE 'tables: %';
SELECT (SELECT count(*) FROM pp_gpu_spans) = 7
   AND (SELECT count(*) FROM (SELECT * FROM spans_before EXCEPT SELECT * FROM pp_gpu_spans)) = 0;

-- Six jobs on one GPU at once (events inserted directly, folded by pp_refresh(NULL)): fifteen
-- pairs, ten named, then how many more.
WITH RECURSIVE j(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM j WHERE n < 6)
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'many' || n, 'GPU-f0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000200 + n) * 1000000000, (1700000210 + n) * 1000000000, 1700000200 + n, 1700000210 + n, 'many', n
  FROM j;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-f0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000200 + n) * 1000, 90 FROM i;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 15 FROM colocated_spans WHERE uuid = 'GPU-f0000000-0000-4000-8000-000000000000';
SELECT shared_with = 'many1,many2,many4,many5,many6' FROM job_overview WHERE job_id = 'many3';
SELECT (length(pp_last_warnings()) - length(replace(pp_last_warnings(), 'was shared by', ''))) = 10 * length('was shared by')
   AND pp_last_warnings() LIKE '%pp_refresh: 5 more pairs of jobs shared a GPU; see colocated_spans%';

-- Jobs taking turns on a GPU, estimated jointly. T0 = 1700000300, 1 s windows, GPU_UTIL; a
-- layer of sliceX alone would read 80, one of sliceY 20, the GPU between their layers 10:
--   window 1: X runs [0, 0.6), Y [0.6, 0.8), neither [0.8, 1)  -> 48 + 4 + 2 = 54
--   window 2: X [1, 1.3), Y [1.3, 1.8), neither [1.8, 2)       -> 24 + 10 + 2 = 36
--   window 3: X [2, 2.1), Y [2.1, 2.9), neither [2.9, 3)       -> 8 + 16 + 1 = 25
--   window 4: X [3, 3.5), Y [3.5, 3.8), neither [3.8, 4)       -> 40 + 6 + 2 = 48
--   window 5: X [4, 4.2), Y [4.2, 4.4), then both have ended    -> 16 + 4 + 0.6 * 10 = 26
-- GPU b holds the same turns in windows 2-5 for mpsM and mpsN, but in window 1 the two ran at
-- the same time (M [0, 0.6), N [0.3, 0.8)), as under MPS, and window 6 ends them (N [5, 5.2),
-- M [5.2, 5.3)): window 5 is M [4, 4.4), N [4.4, 4.5), neither [4.5, 5) -> 32 + 2 + 5 = 39.
WITH ev(job_id, uuid, layer, layer_type, t0, t1) AS (VALUES
  ('sliceX', 'a', 'a', 'Linear', 0, 0.6), ('sliceY', 'a', 'b', 'EmbeddingBag', 0.6, 0.8),
  ('sliceX', 'a', 'a', 'Linear', 1, 1.3), ('sliceY', 'a', 'b', 'EmbeddingBag', 1.3, 1.8),
  ('sliceX', 'a', 'a', 'Linear', 2, 2.1), ('sliceY', 'a', 'b', 'EmbeddingBag', 2.1, 2.9),
  ('sliceX', 'a', 'a', 'Linear', 3, 3.5), ('sliceY', 'a', 'b', 'EmbeddingBag', 3.5, 3.8),
  ('sliceX', 'a', 'a', 'Linear', 4, 4.2), ('sliceY', 'a', 'b', 'EmbeddingBag', 4.2, 4.4),
  ('mpsM', 'b', 'a', 'Linear', 0, 0.6), ('mpsN', 'b', 'b', 'EmbeddingBag', 0.3, 0.8),
  ('mpsM', 'b', 'a', 'Linear', 1, 1.3), ('mpsN', 'b', 'b', 'EmbeddingBag', 1.3, 1.8),
  ('mpsM', 'b', 'a', 'Linear', 2, 2.1), ('mpsN', 'b', 'b', 'EmbeddingBag', 2.1, 2.9),
  ('mpsM', 'b', 'a', 'Linear', 3, 3.5), ('mpsN', 'b', 'b', 'EmbeddingBag', 3.5, 3.8),
  ('mpsM', 'b', 'a', 'Linear', 4, 4.4), ('mpsN', 'b', 'b', 'EmbeddingBag', 4.4, 4.5),
  ('mpsN', 'b', 'b', 'EmbeddingBag', 5, 5.2), ('mpsM', 'b', 'a', 'Linear', 5.2, 5.3))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT job_id, 'GPU-' || uuid || '1000000-0000-4000-8000-000000000000', layer, layer_type, 1,
       CAST(round((1700000300 + t0) * 1e3) AS INTEGER) * 1000000, CAST(round((1700000300 + t1) * 1e3) AS INTEGER) * 1000000,
       1700000300 + t0, 1700000300 + t1, 'turns', row_number() OVER ()
  FROM ev;
UPDATE pp_metrics SET kind = 'instant' WHERE metric = 'DCGM_FI_DEV_FB_USED';
WITH w(uuid, n, util) AS (VALUES ('a', 1, 54), ('a', 2, 36), ('a', 3, 25), ('a', 4, 48), ('a', 5, 26),
                                 ('a', 6, 0), ('a', 7, 0), ('b', 1, 60), ('b', 2, 36), ('b', 3, 25), ('b', 4, 48),
                                 ('b', 5, 39), ('b', 6, 12), ('b', 7, 0))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-' || uuid || '1000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000300 + n) * 1000, util FROM w
UNION ALL
SELECT 'GPU-' || uuid || '1000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_FB_USED', (1700000300 + n) * 1000, 3000 FROM w;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT pp_last_warnings() LIKE '%GPU GPU-a1000000-0000-4000-8000-000000000000 was shared by jobs sliceX and sliceY%'
       || 'the estimator solves them jointly (layer_estimates.shared_with)%';

-- One system for both jobs recovers each layer's own value, and the time neither ran.
SELECT abs(estimate - 80) < 1e-6 AND confidence = 'identified' AND shared_with = 'sliceY'
  FROM layer_estimates WHERE job_id = 'sliceX' AND layer = 'a' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT abs(estimate - 20) < 1e-6 AND confidence = 'identified' AND shared_with = 'sliceX'
  FROM layer_estimates WHERE job_id = 'sliceY' AND layer = 'b' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND min(abs(estimate - 10)) < 1e-6 AND max(abs(estimate - 10)) < 1e-6
  FROM layer_estimates WHERE job_id IN ('sliceX', 'sliceY') AND layer = '(untracked)' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT abs(estimate - 20) < 1e-6 AND confidence = 'identified' AND shared_with = 'sliceX'
  FROM layer_type_estimates WHERE job_id = 'sliceY' AND layer_type = 'EmbeddingBag' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- Memory in use is every sharing process's at once: never identified, the bounds its interval.
SELECT count(*) > 0 AND count(*) = sum(confidence = 'not identified: an instant gauge of a shared GPU holds every'
                                                     || ' sharing job''s part at once')
   AND count(*) = sum(lower90 = 0 AND upper90 IS NULL)
  FROM layer_estimates WHERE job_id IN ('sliceX', 'sliceY') AND metric = 'DCGM_FI_DEV_FB_USED';
-- The window in which mpsM and mpsN ran at once is left out; the turns identify them.
SELECT abs(estimate - 80) < 1e-6 AND confidence = 'identified' AND shared_with = 'mpsN' AND windows = 5
  FROM layer_estimates WHERE job_id = 'mpsM' AND layer = 'a' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND sum(concurrent_windows) = 2
  FROM pp_estimates('layer') WHERE job_id IN ('mpsM', 'mpsN') AND layer <> '(untracked)'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- Table II: sliceX's untracked time is the time in its span in which no job's layer ran (0.2 s
-- of window 1, 0.2 of 2, 0.1 of 3, 0.2 of 4), not sliceY's layers: its overlap mean is
-- (0.2 * 54 + 0.2 * 36 + 0.1 * 25 + 0.2 * 48) / 0.7 = 43, and sliceY's the same.
SELECT count(*) = 2 AND max(abs(gpu_util - 43)) < 1e-6
  FROM layer_metrics WHERE job_id IN ('sliceX', 'sliceY') AND layer = '(untracked)';

-- Hand-overs are not concurrency: on GPU e, hoX and hoY take the turns of GPU a, but each of
-- hoY's layers is recorded starting 50 us before hoX's ends (two processes' clocks, each turned
-- into unix time with its own anchor). No window is left out, and the estimates stay within
-- 0.1% of 80 and 20 (the 50 us, counted twice, are scaled back into the window).
-- On GPU f, allM and allN ran at the same time in every window, as under MPS: every window is
-- left out, and each of their layers still has a row, saying why it has no estimate.
WITH ev(job_id, uuid, layer, layer_type, t0, t1) AS (VALUES
  ('hoX', 'e', 'a', 'Linear', 0, 0.6), ('hoY', 'e', 'b', 'EmbeddingBag', 0.59995, 0.8),
  ('hoX', 'e', 'a', 'Linear', 1, 1.3), ('hoY', 'e', 'b', 'EmbeddingBag', 1.29995, 1.8),
  ('hoX', 'e', 'a', 'Linear', 2, 2.1), ('hoY', 'e', 'b', 'EmbeddingBag', 2.09995, 2.9),
  ('hoX', 'e', 'a', 'Linear', 3, 3.5), ('hoY', 'e', 'b', 'EmbeddingBag', 3.49995, 3.8),
  ('hoX', 'e', 'a', 'Linear', 4, 4.2), ('hoY', 'e', 'b', 'EmbeddingBag', 4.19995, 4.4),
  ('allM', 'f', 'a', 'Linear', 0, 0.6), ('allN', 'f', 'b', 'EmbeddingBag', 0.2, 0.9),
  ('allM', 'f', 'a', 'Linear', 1, 1.5), ('allN', 'f', 'b', 'EmbeddingBag', 1.1, 1.7),
  ('allM', 'f', 'a', 'Linear', 2, 2.8), ('allN', 'f', 'b', 'EmbeddingBag', 2.5, 2.9))
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT job_id, 'GPU-' || uuid || '1000000-0000-4000-8000-000000000000', layer, layer_type, 1,
       CAST(round((1700000300 + t0) * 1e6) AS INTEGER) * 1000, CAST(round((1700000300 + t1) * 1e6) AS INTEGER) * 1000,
       1700000300 + t0, 1700000300 + t1, 'turns-2', row_number() OVER ()
  FROM ev;
WITH w(uuid, n, util) AS (VALUES ('e', 1, 54), ('e', 2, 36), ('e', 3, 25), ('e', 4, 48), ('e', 5, 26),
                                 ('e', 6, 0), ('e', 7, 0), ('f', 1, 70), ('f', 2, 80), ('f', 3, 90), ('f', 4, 0),
                                 ('f', 5, 0), ('f', 6, 0), ('f', 7, 0))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-' || uuid || '1000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000300 + n) * 1000, util FROM w;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT count(*) = 2 AND sum(identified) = 2 AND max(concurrent_windows) = 0
   AND sum(abs(estimate - CASE job_id WHEN 'hoX' THEN 80 ELSE 20 END) < 0.1 / 100 * 80) = 2
  FROM pp_estimates('layer') WHERE job_id IN ('hoX', 'hoY') AND layer <> '(untracked)'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND count(estimate) = 0 AND sum(identified) = 0 AND min(concurrent_windows) = 3
   AND min(reason) = '3 windows in which the sharing jobs ran at the same time were left out'
   AND min(lower90) = 0 AND max(upper90) = 100
  FROM pp_estimates('layer') WHERE job_id IN ('allM', 'allN') AND layer <> '(untracked)'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND min(confidence) = 'not identified: 3 windows in which the sharing jobs ran at the same time'
                                          || ' were left out'
  FROM layer_type_estimates WHERE job_id IN ('allM', 'allN') AND layer_type <> '(untracked)'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';

-- Two jobs taking turns on GPU g, the second's events refreshed only after the first's windows
-- were folded (its files on another host, read later): its events are late, their overlaps
-- lost; the refresh that reads them folds them without windows, so that the two are seen
-- sharing the GPU and solved together, where the second job was estimated alone from windows
-- holding both (its memory "identified" at both jobs' sum) and no pair was named.
-- firstA's mlp runs [k, k + 0.5] and lateB's emb [k + 0.5, k + 1] for k = 0..9 from T2 =
-- 1700000400; GPU_UTIL 50 in each window (80 and 20 by halves).
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 9)
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'firstA', 'GPU-g0000000-0000-4000-8000-000000000000', 'mlp', 'Linear', 1,
       (1700000400 + n) * 1000000000, (1700000400 + n) * 1000000000 + 500000000,
       1700000400 + n, 1700000400 + n + 0.5, 'firstA', n + 1
  FROM k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 12)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-g0000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000400 + n) * 1000,
       CASE WHEN n <= 10 THEN 50 ELSE 0 END FROM i;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 9)
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'lateB', 'GPU-g0000000-0000-4000-8000-000000000000', 'emb', 'EmbeddingBag', 1,
       (1700000400 + n) * 1000000000 + 500000000, (1700000401 + n) * 1000000000,
       1700000400 + n + 0.5, 1700000401 + n, 'lateB', n + 1
  FROM k;
SELECT windows_folded = 0 FROM pp_refresh(NULL, 1);
SELECT pp_last_warnings() LIKE '%10 events arrived after their sample windows were folded and are not attributed%'
   AND pp_last_warnings() LIKE '%GPU GPU-g0000000-0000-4000-8000-000000000000 was shared by jobs firstA and lateB%';
SELECT count(*) = 1 FROM colocated_spans WHERE uuid = 'GPU-g0000000-0000-4000-8000-000000000000';
SELECT count(*) = 0 FROM pp_events WHERE job_id = 'lateB' AND folded = 0;
-- lateB's calls count; its overlaps are lost (no value); the estimates solve the two together.
SELECT data_num = 0 AND gpu_util IS NULL FROM layer_metrics WHERE job_id = 'lateB' AND layer = 'emb';
SELECT count(*) = 1 AND max(shared_with) = 'firstA' AND sum(identified) = 0
  FROM pp_estimates('layer') WHERE job_id = 'lateB' AND layer = 'emb' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
-- The next refresh says nothing more of them.
SELECT events_added = 0 FROM pp_refresh(NULL, 1);
SELECT coalesce(pp_last_warnings(), '') NOT LIKE '%arrived after%' AND coalesce(pp_last_warnings(), '') NOT LIKE '%shared%';
