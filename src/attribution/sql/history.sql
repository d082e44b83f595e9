-- The paper's dedup rule, applied after each refresh: a layer's six current means are kept as
-- a new layer_history row only when they differ from its last kept row beyond :dedup_rel_tol
-- (relative tolerance); similar results are not persisted. :refreshed_at is the refresh time.
-- fold.cpp runs it for each job in pp_report_pending: the others' means have not changed since
-- the refresh that last checked them. Each layer's last kept row is one index seek.
WITH current AS (
  SELECT job_id, layer, forward, data_num,
         json_array(gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, sm_active) AS metrics
    FROM main.layer_metrics WHERE data_num > 0 AND job_id = :job_id)
INSERT INTO main.layer_history(job_id, layer, forward, refreshed_at, data_num, metrics)
SELECT c.job_id, c.layer, c.forward, :refreshed_at, c.data_num, c.metrics
  FROM current AS c
  LEFT JOIN main.layer_history AS k
    ON k.rowid = (SELECT max(h.rowid) FROM main.layer_history AS h
                   WHERE h.job_id = c.job_id AND h.layer = c.layer AND h.forward = c.forward)
 WHERE k.metrics IS NULL OR NOT pp_similar(c.metrics, k.metrics, :dedup_rel_tol);
