-- The statements of the import of event files (src/attribution/event_import.cpp), one named part
-- each. An event's fields bind by their names in the event line (events/event_fields.hpp).

-- name: resume_positions
-- Positions of files whose rows are still there: rows deleted to start over are read again.
SELECT source_file, bytes, lines FROM main.pp_event_files AS f
 WHERE EXISTS (SELECT 1 FROM main.pp_events AS e WHERE e.source_file = f.source_file)
    OR EXISTS (SELECT 1 FROM main.pp_jobs AS j WHERE j.source_file = f.source_file);

-- name: insert_event
INSERT OR IGNORE INTO main.pp_events(job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch,
                                     layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num,
                                     source_file, line)
VALUES (:job_id, :host_name, :ip, :pod, :namespace, :gpu_uuid, :gpu, :rank, :pid, :epoch, :batch,
        :layer, :layer_type, :forward, :t_start_ns, :t_end_ns, :t_start, :t_end, :cpu_num,
        :source_file, :line);

-- name: insert_job
INSERT OR IGNORE INTO main.pp_jobs(job_id, host_name, pid, params, command, torch_version, start_time,
                                   source_file, line)
VALUES (:job_id, :host_name, :pid, :params, :command, :torch_version, :start_time, :source_file, :line);

-- name: save_position
INSERT INTO main.pp_event_files(source_file, bytes, lines) VALUES (:source_file, :bytes, :lines)
ON CONFLICT (source_file) DO UPDATE SET bytes = excluded.bytes, lines = excluded.lines;
