-- The plain result tables (schema.sql: report_layers, report_layer_types, report_jobs),
-- rewritten from the views at the end of each refresh; :refreshed_at is the refresh time.
DELETE FROM main.report_layers;
INSERT INTO main.report_layers
SELECT job_id, layer, CASE WHEN layer = '(untracked)' THEN 'untracked' WHEN forward THEN 'forward' ELSE 'backward' END,
       layer_type, host_name, data_num, calls, mean_duration_ms, calls * mean_duration_ms / 1e3,
       gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, sm_active, resolution, note, :refreshed_at
  FROM main.layer_metrics;
DELETE FROM main.report_layer_types;
INSERT INTO main.report_layer_types
SELECT job_id, layer_type,
       CASE WHEN layer_type = '(untracked)' THEN 'untracked' WHEN forward THEN 'forward' ELSE 'backward' END,
       layers, data_num, calls, mean_duration_ms, calls * mean_duration_ms / 1e3,
       gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, sm_active, :refreshed_at
  FROM main.layer_type_metrics;
DELETE FROM main.report_jobs;
INSERT INTO main.report_jobs
SELECT job_id, parameters, host_name, gpus, layers, gpu_seconds, gpu_util, gpu_mem_gib, gpu_mem_peak_gib,
       dram_active, fp32_active, sm_active, sm_occupancy, shared_with, :refreshed_at
  FROM main.job_overview;
