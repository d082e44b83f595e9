-- GPUs whose hook client could not name their UUID (no nvidia-smi, torch before 2.0): the events
-- say 'cuda:N', and pp_refresh matches them to series by host and index. Events are attributed
-- by the GPU they name, so two devices under one such name are one GPU to every step: their
-- samples mix and their jobs read as sharing it. The refresh says so.
-- Events inserted directly, folded by pp_refresh(NULL); T0 = 1700000700, 1 s windows.
--   jobA on node-a and jobB on node-b both ran on their host's first GPU, named 'cuda:0';
--   jobC ran on node-c's 'cuda:1' alone: one device, nothing to say.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 5),
job(job_id, host, uuid, gpu) AS (VALUES ('jobA', 'node-a', 'cuda:0', 0), ('jobB', 'node-b', 'cuda:0', 0),
                                        ('jobC', 'node-c', 'cuda:1', 1))
INSERT INTO pp_events(job_id, host_name, gpu_uuid, gpu, layer, layer_type, forward, t_start_ns, t_end_ns,
                      t_start, t_end, source_file, line)
SELECT job_id, host, uuid, gpu, 'mlp', 'Linear', 1, (1700000700 + n) * 1000000000, (1700000700 + n) * 1000000000 + 500000000,
       1700000700 + n, 1700000700 + n + 0.5, 'unnamed-' || job_id, n + 1
  FROM job, k;
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 8)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT uuid, 'DCGM_FI_DEV_GPU_UTIL', (1700000700 + n) * 1000, 40 FROM i, (SELECT 'cuda:0' AS uuid UNION ALL SELECT 'cuda:1');
SELECT windows_folded > 0 FROM pp_refresh(NULL, 1);

SELECT pp_last_warnings() LIKE '%pp_refresh: GPU ''cuda:0'' of the events is 2 devices (node-a gpu 0, node-b gpu 0):'
       || ' their hook clients could not name their GPUs'' UUIDs, and events are attributed by the GPU they name,'
       || ' so these devices are one GPU here: the samples matched to them by host and index mix under one name'
       || ' (one per time), and their jobs read as sharing it; do not trust these jobs'' numbers.'
       || ' Give the hook client the UUIDs (nvidia-smi in the container, torch 2.0 or later, or'
       || ' CUDA_VISIBLE_DEVICES=GPU-...)%';
SELECT pp_last_warnings() NOT LIKE '%cuda:1%';
-- Said when the events are folded, not on every refresh.
SELECT windows_folded = 0 FROM pp_refresh(NULL, 1);
SELECT coalesce(pp_last_warnings(), '') NOT LIKE '%devices%';
