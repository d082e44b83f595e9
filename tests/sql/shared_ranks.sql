-- Two processes of ONE job on one GPU (a torchrun whose ranks all chose cuda:0, or ranks that
-- share a GPU by design, under time-slicing or MPS). Events inserted directly, folded by
-- pp_refresh(NULL); T0 = 1700000500, 1 s windows, GPU_UTIL. A call of layer a alone would read
-- 80, one of layer b 20, the GPU between their calls 10.
-- GPU a: job twoRanks, rank 0 (pid 1) runs a, rank 1 (pid 2) runs b; they take turns in
-- windows 2-5 (the turns of colocation.sql's sliceX and sliceY), but in window 1 they ran at the
-- same time, as under MPS (a [0, 0.6), b [0.3, 0.8)).
--   window 1: the GPU's value 60 (what MPS gives is not the sum of the parts)
--   window 2: a [1, 1.3), b [1.3, 1.8), neither [1.8, 2)   -> 24 + 10 + 2 = 36
--   window 3: a [2, 2.1), b [2.1, 2.9), neither [2.9, 3)   -> 8 + 16 + 1 = 25
--   window 4: a [3, 3.5), b [3.5, 3.8), neither [3.8, 4)   -> 40 + 6 + 2 = 48
--   window 5: a [4, 4.4), b [4.4, 4.5), neither [4.5, 5)   -> 32 + 2 + 5 = 39
--   window 6: b [5, 5.2), a [5.2, 5.3), the job has ended  -> 4 + 8 = 12
-- As for two jobs, the window in which the processes ran at once is left out (the model is
-- time slicing), and the turns identify each layer; no window may stop the job's estimates.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH ev(pid, layer, layer_type, t0, t1) AS (VALUES
  (1, 'a', 'Linear', 0, 0.6), (2, 'b', 'EmbeddingBag', 0.3, 0.8),
  (1, 'a', 'Linear', 1, 1.3), (2, 'b', 'EmbeddingBag', 1.3, 1.8),
  (1, 'a', 'Linear', 2, 2.1), (2, 'b', 'EmbeddingBag', 2.1, 2.9),
  (1, 'a', 'Linear', 3, 3.5), (2, 'b', 'EmbeddingBag', 3.5, 3.8),
  (1, 'a', 'Linear', 4, 4.4), (2, 'b', 'EmbeddingBag', 4.4, 4.5),
  (2, 'b', 'EmbeddingBag', 5, 5.2), (1, 'a', 'Linear', 5.2, 5.3))
INSERT INTO pp_events(job_id, gpu_uuid, pid, rank, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT 'twoRanks', 'GPU-a2000000-0000-4000-8000-000000000000', pid, pid - 1, layer, layer_type, 1,
       CAST(round((1700000500 + t0) * 1e3) AS INTEGER) * 1000000, CAST(round((1700000500 + t1) * 1e3) AS INTEGER) * 1000000,
       1700000500 + t0, 1700000500 + t1, 'ranks', row_number() OVER ()
  FROM ev;
WITH w(n, util) AS (VALUES (1, 60), (2, 36), (3, 25), (4, 48), (5, 39), (6, 12), (7, 0))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-a2000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000500 + n) * 1000, util FROM w;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);

-- Each layer's own value, from the windows in which the processes took turns.
SELECT abs(estimate - 80) < 1e-6 AND confidence = 'identified' AND windows = 5
  FROM layer_estimates WHERE job_id = 'twoRanks' AND layer = 'a' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT abs(estimate - 20) < 1e-6 AND confidence = 'identified'
  FROM layer_estimates WHERE job_id = 'twoRanks' AND layer = 'b' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND sum(concurrent_windows) = 2
  FROM pp_estimates('layer') WHERE job_id = 'twoRanks' AND layer <> '(untracked)'
   AND metric = 'DCGM_FI_DEV_GPU_UTIL';

-- Hand-overs are not concurrency: on GPU b, job handOver's two processes take the turns of
-- GPU a's windows 2-5 in windows 1-4, then a [4, 4.3), b [4.3, 4.6) (24 + 6 + 4 = 34), but each call of rank 1 is recorded starting 50 us before
-- rank 0's ends (each process turns its GPU times into unix time with its own anchor). No
-- window is left out (the 50 us, counted twice, are scaled back into the window).
-- On GPU c, job allAtOnce's processes ran at the same time in every window: every window is left
-- out, and each layer keeps its row, saying why it has no estimate.
WITH ev(job_id, uuid, pid, layer, layer_type, t0, t1) AS (VALUES
  ('handOver', 'b', 1, 'a', 'Linear', 0, 0.3), ('handOver', 'b', 2, 'b', 'EmbeddingBag', 0.29995, 0.8),
  ('handOver', 'b', 1, 'a', 'Linear', 1, 1.1), ('handOver', 'b', 2, 'b', 'EmbeddingBag', 1.09995, 1.9),
  ('handOver', 'b', 1, 'a', 'Linear', 2, 2.5), ('handOver', 'b', 2, 'b', 'EmbeddingBag', 2.49995, 2.8),
  ('handOver', 'b', 1, 'a', 'Linear', 3, 3.4), ('handOver', 'b', 2, 'b', 'EmbeddingBag', 3.39995, 3.5),
  ('handOver', 'b', 1, 'a', 'Linear', 4, 4.3), ('handOver', 'b', 2, 'b', 'EmbeddingBag', 4.29995, 4.6),
  ('allAtOnce', 'c', 1, 'a', 'Linear', 0, 0.6), ('allAtOnce', 'c', 2, 'b', 'EmbeddingBag', 0.2, 0.9),
  ('allAtOnce', 'c', 1, 'a', 'Linear', 1, 1.5), ('allAtOnce', 'c', 2, 'b', 'EmbeddingBag', 1.1, 1.7),
  ('allAtOnce', 'c', 1, 'a', 'Linear', 2, 2.8), ('allAtOnce', 'c', 2, 'b', 'EmbeddingBag', 2.3, 2.9))
INSERT INTO pp_events(job_id, gpu_uuid, pid, rank, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
SELECT job_id, 'GPU-' || uuid || '2000000-0000-4000-8000-000000000000', pid, pid - 1, layer, layer_type, 1,
       CAST(round((1700000600 + t0) * 1e5) AS INTEGER) * 10000, CAST(round((1700000600 + t1) * 1e5) AS INTEGER) * 10000,
       1700000600 + t0, 1700000600 + t1, 'ranks-2', row_number() OVER ()
  FROM ev;
WITH w(uuid, n, util) AS (VALUES ('b', 1, 36), ('b', 2, 25), ('b', 3, 48), ('b', 4, 39), ('b', 5, 34), ('b', 6, 0),
                                 ('c', 1, 90), ('c', 2, 90), ('c', 3, 90), ('c', 4, 0), ('c', 5, 0))
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT 'GPU-' || uuid || '2000000-0000-4000-8000-000000000000', 'DCGM_FI_DEV_GPU_UTIL', (1700000600 + n) * 1000, util FROM w;
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);
SELECT abs(estimate - 80) < 0.08 AND confidence = 'identified'
  FROM layer_estimates WHERE job_id = 'handOver' AND layer = 'a' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT abs(estimate - 20) < 0.02 AND confidence = 'identified'
  FROM layer_estimates WHERE job_id = 'handOver' AND layer = 'b' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 3 AND sum(concurrent_windows IS NULL) = 3
  FROM pp_estimates('layer') WHERE job_id = 'handOver' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
SELECT count(*) = 2 AND sum(estimate IS NULL AND windows = 0 AND identified = 0 AND concurrent_windows = 3
                            AND reason = '3 windows in which two processes of the job ran at the same time on one GPU were left out') = 2
  FROM pp_estimates('layer') WHERE job_id = 'allAtOnce' AND layer <> '(untracked)' AND metric = 'DCGM_FI_DEV_GPU_UTIL';
