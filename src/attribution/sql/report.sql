-- The plain result tables (schema.sql: report_layers, report_layer_types, report_jobs): one
-- job's rows rewritten from the views. At the end of each refresh fold.cpp runs this for each
-- job in pp_report_pending (those whose data changed since the last refresh); :refreshed_at is
-- the refresh time, so a row's refreshed_at says which refresh last changed it.
-- The untracked row's call_seconds: the time of the job's windows in which no layer of any job
-- ran (its state's weight, the most any window metric's covers): on a GPU it shared, the span
-- less its own layers' calls would count the other job's layers too.
DELETE FROM main.report_layers WHERE job_id = :job_id;
INSERT INTO main.report_layers
SELECT job_id, layer, CASE WHEN layer = '(untracked)' THEN 'untracked' WHEN forward THEN 'forward' ELSE 'backward' END,
       layer_type, host_name, data_num, calls, mean_duration_ms,
       CASE WHEN layer = '(untracked)'
            THEN (SELECT max(json_extract(pp_mean_json(s.state), '$.weight')) FROM main.layer_state AS s
                   WHERE s.job_id = m.job_id AND s.layer = '(untracked)' AND s.forward = 0
                     AND s.metric IN (SELECT metric FROM main.pp_metrics WHERE kind IN ('window', 'driver_window')))
            ELSE calls * mean_duration_ms / 1e3 END,
       gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, sm_active, resolution, note, :refreshed_at
  FROM main.layer_metrics AS m WHERE job_id = :job_id;
DELETE FROM main.report_layer_types WHERE job_id = :job_id;
INSERT INTO main.report_layer_types
SELECT job_id, layer_type,
       CASE WHEN layer_type = '(untracked)' THEN 'untracked' WHEN forward THEN 'forward' ELSE 'backward' END,
       layers, data_num, calls, mean_duration_ms,
       CASE WHEN layer_type = '(untracked)'
            THEN (SELECT max(json_extract(pp_mean_json(s.state), '$.weight')) FROM main.layer_state AS s
                   WHERE s.job_id = m.job_id AND s.layer = '(untracked)' AND s.forward = 0
                     AND s.metric IN (SELECT metric FROM main.pp_metrics WHERE kind IN ('window', 'driver_window')))
            ELSE calls * mean_duration_ms / 1e3 END,
       gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, sm_active, :refreshed_at
  FROM main.layer_type_metrics AS m WHERE job_id = :job_id;
DELETE FROM main.report_jobs WHERE job_id = :job_id;
INSERT INTO main.report_jobs
SELECT job_id, parameters, host_name, gpus, layers, gpu_seconds, gpu_util, gpu_mem_gib, gpu_mem_peak_gib,
       dram_active, fp32_active, sm_active, sm_occupancy, shared_with, :refreshed_at
  FROM main.job_overview WHERE job_id = :job_id;
