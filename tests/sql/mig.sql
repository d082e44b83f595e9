-- MIG: jobs on two GPU instances of one GPU, and a job on a whole GPU, each attributed to its own
-- samples; a MIG device without a mapping is named in a warning.
-- Events: tests/data/mig/*.jsonl, T0 = 1700000100 (unix s), each job's layer running
-- [k, k + 0.5] for k = 0..3, all four jobs at the same times on host node-m:
--   jobA on MIG-a1.. (GPU instance 1 of GPU-153b..), jobB on MIG-b2.. (GPU instance 2), each
--     file with the hook client's mig_device record before its first event;
--   jobM on MIG-c3.., without a record (a process where NVML could not be loaded);
--   jobW on the whole GPU GPU-d0...
-- Samples, 1 s windows stored at their ends, inserted directly under the keys pp_refresh stores
-- them under (an instance's under its MIG UUID): instance 1 reads SM_ACTIVE 0.4 in windows 1-4
-- (jobA's mlp at 0.8 half of each), instance 2 reads 0.1 (jobB's emb at 0.2), GPU-d0.. reads
-- 0.3 (jobW's mlp at 0.6); idle 0. GPU_UTIL is not reported for MIG instances (NVML has no
-- per-instance utilization), so only the whole GPU has it: 100 x SM_ACTIVE.
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 8),
gpu(uuid, sm) AS (VALUES ('MIG-a1000000-0000-4000-8000-000000000000', 0.4),
                         ('MIG-b2000000-0000-4000-8000-000000000000', 0.1),
                         ('GPU-d0000000-0000-4000-8000-000000000000', 0.3)),
v AS (SELECT g.uuid, (1700000100 + i.n) * 1000 AS ts_ms, CASE WHEN i.n <= 4 THEN g.sm ELSE 0 END AS sm
        FROM gpu AS g, i)
INSERT INTO pp_samples(uuid, metric, ts_ms, value)
SELECT uuid, 'DCGM_FI_PROF_SM_ACTIVE', ts_ms, sm FROM v
UNION ALL SELECT uuid, 'DCGM_FI_DEV_GPU_UTIL', ts_ms, sm * 100 FROM v WHERE uuid LIKE 'GPU-%';
SELECT events_added = 16 FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/*.jsonl', 1);

-- The hook client's records: which GPU instance each MIG device is.
SELECT group_concat(mig_uuid || '=' || gpu_uuid || '/' || gpu_instance_id || ':' || profile, ' ')
     = 'MIG-a1000000-0000-4000-8000-000000000000=GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa/1:3g.40gb '
    || 'MIG-b2000000-0000-4000-8000-000000000000=GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa/2:3g.40gb'
  FROM (SELECT * FROM pp_mig_devices ORDER BY mig_uuid);
-- Records are not events: layer_events and layer_jobs pass over them without a warning.
SELECT count(*) = 16 FROM layer_events('${SOURCE_DIR}/tests/data/mig');
SELECT count(*) = 4 FROM layer_jobs('${SOURCE_DIR}/tests/data/mig');
SELECT pp_last_warnings() = '[]';

-- Each job reads its own instance: jobA 0.4 / 0.5 of each window = 0.8 ... as overlap means, the
-- window's value (0.4, 0.1, 0.3), never a blend of the instances.
SELECT abs(sm_active - 0.4) < 1e-9 FROM layer_metrics WHERE job_id = 'jobA' AND layer = 'mlp';
SELECT abs(sm_active - 0.1) < 1e-9 FROM layer_metrics WHERE job_id = 'jobB' AND layer = 'emb';
SELECT abs(sm_active - 0.3) < 1e-9 AND abs(gpu_util - 30) < 1e-9 FROM layer_metrics WHERE job_id = 'jobW' AND layer = 'mlp';
-- No GPU_UTIL on an instance: NULL, not 0 and not the whole GPU's.
SELECT gpu_util IS NULL FROM layer_metrics WHERE job_id = 'jobA' AND layer = 'mlp';
-- The estimator separates each job's layer from idle on its own instance: 0.8, 0.2 and 0.6.
SELECT abs(estimate - 0.8) < 1e-6 FROM layer_estimates
 WHERE job_id = 'jobA' AND layer = 'mlp' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT abs(estimate - 0.2) < 1e-6 FROM layer_estimates
 WHERE job_id = 'jobB' AND layer = 'emb' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';
SELECT abs(estimate - 0.6) < 1e-6 FROM layer_estimates
 WHERE job_id = 'jobW' AND layer = 'mlp' AND metric = 'DCGM_FI_PROF_SM_ACTIVE';

-- Two instances of one GPU at the same time are not a shared GPU: no pair, no warning.
SELECT count(*) = 0 FROM colocated_spans;
SELECT events_added >= 0 FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/*.jsonl', 1);
SELECT pp_last_warnings() NOT LIKE '%was shared by%';
SELECT count(*) = 0 FROM job_overview WHERE shared_with IS NOT NULL;

-- jobM's MIG device has no mapping: every refresh says which device, what to insert and where
-- to read it, and its events wait unfolded (not the generic 'no DCGM samples' warning).
SELECT pp_last_warnings() LIKE '%pp_refresh: MIG device MIG-c3000000-0000-4000-8000-000000000000 (4 events) has no row'
       || ' in pp_mig_devices, so its GPU instance''s samples cannot be found (dcgm-exporter labels them with the'
       || ' parent GPU''s UUID and GPU_I_ID) and its events are not attributed; add it with INSERT INTO'
       || ' pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id) VALUES (''MIG-c3000000-0000-4000-8000-000000000000'','
       || ' ''GPU-<parent>'', <GPU_I_ID>) (nvidia-smi -L lists each MIG device under its GPU, nvidia-smi mig -lgi'
       || ' the GPU instance IDs) and refresh again%';
SELECT pp_last_warnings() NOT LIKE '%have no DCGM samples%';
SELECT count(*) = 4 FROM pp_events WHERE job_id = 'jobM' AND folded = 0;
SELECT count(*) = 0 FROM layer_metrics WHERE job_id = 'jobM' AND layer = 'mlp';
-- The user adds it with an ID that is no GPU_I_ID (a CHECK-free table: any row is taken as
-- said): no series can match it, and the refresh says so with the UPDATE that mends the row.
INSERT INTO pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id, profile)
VALUES ('MIG-c3000000-0000-4000-8000-000000000000', 'GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa', 'three', '1g.10gb');
SELECT pp_last_warnings() LIKE '%pp_refresh: MIG device MIG-c3000000-0000-4000-8000-000000000000 (4 events of job ''jobM'')'
       || ' has gpu_instance_id ''three'' in pp_mig_devices, which is not a GPU_I_ID (a whole number from 0), so no'
       || ' series of its GPU instance can match and its events are not attributed; mend the row with UPDATE'
       || ' pp_mig_devices SET gpu_instance_id = <GPU_I_ID> WHERE mig_uuid = ''MIG-c3000000-0000-4000-8000-000000000000'''
       || ' (nvidia-smi mig -lgi lists the GPU instance IDs) and refresh again%'
   AND pp_last_warnings() NOT LIKE '%has no row in pp_mig_devices%'
   AND pp_last_warnings() NOT LIKE '%GPU(s) of the events have no DCGM samples%'
  FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/*.jsonl', 1);
-- Mended: the next refresh looks for GPU instance 3's series, and, as the test Prometheus has
-- none, says what it looked for (the parent's UUID with that GPU_I_ID), not the words for a
-- whole GPU (UUID label, or Hostname and gpu).
UPDATE pp_mig_devices SET gpu_instance_id = 3 WHERE mig_uuid = 'MIG-c3000000-0000-4000-8000-000000000000';
SELECT pp_last_warnings() LIKE '%pp_refresh: MIG device MIG-c3000000-0000-4000-8000-000000000000 (4 events of job ''jobM'')'
       || ' has no DCGM samples at http://127.0.0.1:%: no series there carries UUID (or uuid)'
       || ' GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa with GPU_I_ID 3, its GPU instance as pp_mig_devices gives it'
       || ' (check that row against nvidia-smi -L and nvidia-smi mig -lgi%'
   AND pp_last_warnings() NOT LIKE '%GPU(s) of the events have no DCGM samples%'
  FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/*.jsonl', 1);

-- A row of pp_mig_devices that names another GPU instance than the hook client's record of the
-- device: kept (a row a user inserted wins), and said with both, where the record was dropped
-- unsaid and the device's events took the other instance's samples.
DELETE FROM pp_events; DELETE FROM pp_event_files; DELETE FROM pp_event_file_state; DELETE FROM pp_mig_devices;
INSERT INTO pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id)
VALUES ('MIG-a1000000-0000-4000-8000-000000000000', 'GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa', 2);
SELECT pp_last_warnings() LIKE '%pp_refresh: pp_mig_devices says MIG device MIG-a1000000-0000-4000-8000-000000000000 is'
       || ' GPU instance 2 of GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa, and %instance1.jsonl records instance 1 of'
       || ' GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa (NVML, as its process saw it): the row is kept, so its samples'
       || ' are that instance''s; delete the row if it is wrong%'
  FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/instance1.jsonl', 1);
SELECT gpu_instance_id = 2 FROM pp_mig_devices WHERE mig_uuid = 'MIG-a1000000-0000-4000-8000-000000000000';
-- The same record again (instance2.jsonl's device, as the row says) is nothing to say.
INSERT INTO pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id)
VALUES ('MIG-b2000000-0000-4000-8000-000000000000', 'GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa', 2);
SELECT coalesce(pp_last_warnings(), '') NOT LIKE '%pp_mig_devices says%'
  FROM pp_refresh('${SOURCE_DIR}/tests/data/mig/instance2.jsonl', 1);

-- A MIG UUID as drivers before R470 printed it names its GPU instance itself (no row): without
-- samples, the warning says what it looked for, and that the UUID (not a row) gave it.
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line)
VALUES ('jobR', 'MIG-GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa/5/0', 'fc', 'Linear', 1,
        1700000130000000000, 1700000130500000000, 1700000130.0, 1700000130.5, 'by hand', 1);
SELECT pp_last_warnings() LIKE '%pp_refresh: MIG device MIG-GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa/5/0 (1 events of'
       || ' job ''jobR'') has no DCGM samples at %: no series there carries UUID (or uuid)'
       || ' GPU-153bdcb7-df30-40e2-3f2c-379902ba72fa with GPU_I_ID 5, its GPU instance as its MIG UUID (a driver'
       || ' before R470''s) names it (check that dcgm-exporter runs on that GPU with MIG support%'
  FROM pp_refresh(NULL);
