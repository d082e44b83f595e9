-- layer_jobs: the job header line of each process (written once by the hook client), as a table.
-- tests/data/jobs/headers.jsonl: a header exactly as python/precisionprobe writes it, an event,
-- a blank line, an older header ("params"), four broken headers and a torn last line.
SELECT count(*) = 3 FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/headers.jsonl');
SELECT group_concat(job_id || ':' || line, ' ') = 'dlrm-7f3a:1 older:4 hyper:8'
  FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/headers.jsonl');
-- The client's header: every column, with its type.
SELECT job_id = 'dlrm-7f3a' AND host_name = 'gpu-node-3' AND pid = 4242 AND params = 514363393
   AND command = '["python3","-m","precisionprobe","run","--","python3","dlrm.py","--arch-mlp-bot=512-512-64"]'
   AND json_extract(command, '$[6]') = 'dlrm.py' AND torch_version = '1.13.1'
   AND start_time = 1714000000.1234567 AND source_file = '${SOURCE_DIR}/tests/data/jobs/headers.jsonl'
   AND line = 1 AND path = source_file
   AND typeof(job_id) || typeof(host_name) || typeof(pid) || typeof(params) || typeof(command)
       || typeof(torch_version) || typeof(start_time) || typeof(source_file) || typeof(line)
     = 'texttextintegerintegertexttextrealtextinteger'
  FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/headers.jsonl') WHERE line = 1;
-- "params" counts when it is an integer (earlier writers); absent fields are NULL.
SELECT params = 1234 AND host_name IS NULL AND pid IS NULL AND command IS NULL
   AND torch_version IS NULL AND start_time IS NULL
  FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/headers.jsonl') WHERE job_id = 'older';
-- "params" as an object is something else (hyperparameters): no count. A command that is a
-- string stays JSON text.
SELECT params IS NULL AND command = '"python3 train.py"'
  FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs/headers.jsonl') WHERE job_id = 'hyper';
-- Broken headers and the torn last line are counted in one warning for the file.
SELECT pp_last_warnings() = json_array('layer_jobs: skipped 4 malformed lines in '
       || '${SOURCE_DIR}/tests/data/jobs/headers.jsonl (first at line 5: job header without field ''job_id'')');
-- The same path rules as layer_events: a directory, a glob; events give no rows here.
SELECT count(*) = 2 AND group_concat(pid) = '4100,4101' AND count(DISTINCT job_id) = 1
  FROM layer_jobs('${SOURCE_DIR}/tests/data/events/job1');
SELECT count(*) = 1 FROM layer_jobs('${SOURCE_DIR}/tests/data/events/*/rank1.jsonl');
SELECT pp_last_warnings() = '[]';
SELECT count(*) = 0 FROM layer_jobs('${SOURCE_DIR}/tests/data/events/cpu.jsonl');
SELECT count(*) = 0 FROM layer_jobs('${SOURCE_DIR}/tests/data/events/empty.jsonl');
-- Malformed events are counted here too (the file is the same).
SELECT count(*) = 0 FROM layer_jobs('${SOURCE_DIR}/tests/data/events/damaged');
SELECT json_array_length(pp_last_warnings()) = 2 AND pp_last_warnings() LIKE '%layer_jobs: skipped 1 malformed line in %torn.jsonl%';
-- Model size per job, the query the table is for.
SELECT group_concat(job_id || '=' || coalesce(p, 'NULL'), ' ') = 'dlrm-7f3a=514363393 hyper=NULL older=1234'
  FROM (SELECT job_id, max(params) AS p FROM layer_jobs('${SOURCE_DIR}/tests/data/jobs') GROUP BY job_id ORDER BY job_id);
