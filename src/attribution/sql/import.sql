-- The statements of the import of event files (src/attribution/event_import.cpp), one named part
-- each. An event's fields bind by their names in the event line (events/event_fields.hpp).

-- name: resume_positions
-- Positions of files whose rows are still there, or were removed by the retention setting
-- (pp_dropped_events): rows a user deleted to start over are read again.
SELECT source_file, bytes, lines, head_bytes, head_hash,
       coalesce((SELECT state FROM main.pp_event_file_state AS s WHERE s.source_file = f.source_file), ''),
       coalesce(real_path, '')
  FROM main.pp_event_files AS f
 WHERE EXISTS (SELECT 1 FROM main.pp_events_blocks AS e WHERE e.source_file = f.source_file)
    OR EXISTS (SELECT 1 FROM main.pp_jobs AS j WHERE j.source_file = f.source_file)
    OR EXISTS (SELECT 1 FROM main.pp_dropped_events AS d WHERE d.source_file = f.source_file);

-- name: last_line_stored
-- The last line of a file that pp_events holds (index pp_events_blocks_by_file), so that a file
-- read again from the start adds no line twice.
SELECT max(last_line) FROM main.pp_events_blocks WHERE source_file = :source_file;

-- name: last_block_of_file
-- The latest end of the last block stored of a file, and its last line (index
-- pp_events_blocks_by_file): what the first line a refresh reads of it is checked against.
SELECT last_end_ns, last_line FROM main.pp_events_blocks WHERE source_file = :source_file
 ORDER BY last_line DESC LIMIT 1;

-- name: stored_lines
-- What pp_events holds of a file read again from the start, to tell the lines still as they
-- were read from lines rewritten (the blocks of the file: index pp_events_blocks_by_file).
SELECT line, job_id, gpu_uuid, layer, forward, t_start_ns, t_end_ns
  FROM main.pp_events WHERE source_file = :source_file;

-- name: dropped_from_file
-- Whether retention removed events of the file (pp_dropped_events).
SELECT count(*) FROM main.pp_dropped_events WHERE source_file = :source_file AND events > 0;

-- name: insert_job
INSERT OR IGNORE INTO main.pp_jobs(job_id, host_name, pid, params, command, torch_version, start_time,
                                   source_file, line)
VALUES (:job_id, :host_name, :pid, :params, :command, :torch_version, :start_time, :source_file, :line);

-- name: insert_mig_device
-- A row a user inserted, or an earlier record, is kept: a MIG UUID names one GPU instance for
-- as long as it exists.
INSERT OR IGNORE INTO main.pp_mig_devices(mig_uuid, gpu_uuid, gpu_instance_id, profile)
VALUES (:mig_uuid, :gpu_uuid, :gpu_instance_id, :profile);

-- name: save_position
INSERT INTO main.pp_event_files(source_file, bytes, lines, head_bytes, head_hash, real_path)
VALUES (:source_file, :bytes, :lines, :head_bytes, :head_hash, nullif(:real_path, ''))
ON CONFLICT (source_file) DO UPDATE SET bytes = excluded.bytes, lines = excluded.lines,
  head_bytes = excluded.head_bytes, head_hash = excluded.head_hash,
  real_path = coalesce(excluded.real_path, real_path);

-- name: save_state
-- What reading a compact file on from its position needs (JSON Lines files need nothing).
INSERT INTO main.pp_event_file_state(source_file, state) VALUES (:source_file, :state)
ON CONFLICT (source_file) DO UPDATE SET state = excluded.state;

-- name: name_taken
SELECT EXISTS (SELECT 1 FROM main.pp_event_files WHERE source_file = :kept)
    OR EXISTS (SELECT 1 FROM main.pp_events_blocks WHERE source_file = :kept)
    OR EXISTS (SELECT 1 FROM main.pp_jobs WHERE source_file = :kept)
    OR EXISTS (SELECT 1 FROM main.pp_dropped_events WHERE source_file = :kept);

-- name: keep_replaced_rows
-- A file replaced by new content under its name: the rows read from it before are real events
-- of the old content, kept under another name (with its position, so the name stays taken),
-- and the new content is read under the file's name.
UPDATE main.pp_events_blocks SET source_file = :kept WHERE source_file = :source_file;
UPDATE main.pp_jobs SET source_file = :kept WHERE source_file = :source_file;
UPDATE main.pp_event_files SET source_file = :kept WHERE source_file = :source_file;
UPDATE main.pp_dropped_events SET source_file = :kept WHERE source_file = :source_file;
DELETE FROM main.pp_event_file_state WHERE source_file = :source_file;
