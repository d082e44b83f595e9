-- layer_events: JSON Lines layer events as a table. ${SOURCE_DIR} is the repository's root
-- (the fixtures in tests/data/events/, written like the Python hook client writes them).
-- A directory: every *.jsonl below it, in path order; the job header lines are not rows.
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1');
SELECT pp_last_warnings() = '[]';
SELECT group_concat(substr(source_file, length('${SOURCE_DIR}/tests/data/events/job1/') + 1) || ':' || line, ' ') =
       'rank0.jsonl:2 rank0.jsonl:3 rank0.jsonl:4 rank0.jsonl:5 rank0.jsonl:6 rank0.jsonl:7 '
       || 'rank1.jsonl:2 rank1.jsonl:3 rank1.jsonl:4 rank1.jsonl:5'
  FROM layer_events('${SOURCE_DIR}/tests/data/events/job1');
-- One file, and a glob.
SELECT count(*) = 6 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl');
SELECT count(*) = 4 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1/rank[1-9].jsonl');
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/*/rank?.jsonl');
-- Every column: type and value.
SELECT typeof(job_id) || typeof(host_name) || typeof(ip) || typeof(pod) || typeof(namespace)
       || typeof(gpu_uuid) || typeof(gpu) || typeof(rank) || typeof(local_rank)
       || typeof(world_size) || typeof(pid) || typeof(epoch) || typeof(batch) || typeof(layer)
       || typeof(layer_type) || typeof(forward) || typeof(t_start_ns) || typeof(t_end_ns)
       || typeof(cpu_num) || typeof(t_start) || typeof(t_end) || typeof(source_file)
       || typeof(line) || typeof(path)
     = 'texttexttexttexttexttextintegerintegerintegerintegerintegerintegerintegertexttext'
       || 'integerintegerintegerrealrealrealtextintegertext'
  FROM layer_events('${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl') WHERE line = 5;
SELECT job_id = 'dlrm-a1b2' AND host_name = 'gpu-node-3' AND ip = '10.42.0.17'
       AND pod = 'dlrm-train-0' AND namespace = 'ml-team'
       AND gpu_uuid = 'GPU-8f6a2c1e-0000-4000-8000-000000000001' AND gpu = 1 AND rank = 1
       AND local_rank = 1 AND world_size = 2 AND pid = 4101 AND epoch = 0 AND batch = 0
       AND layer = 'top_l.0' AND layer_type = 'Linear' AND forward = 0
       AND t_start_ns = 1714000000100870000 AND t_end_ns = 1714000000101670000 AND cpu_num = 8.0
       AND t_start = 1714000000.10087 AND t_end = 1714000000.10167
       AND source_file = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl' AND line = 5
       AND path = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl'
  FROM layer_events('${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl') WHERE line = 5;
-- On a CPU, outside Kubernetes: gpu, pod and namespace are NULL; an integer cpu_num is REAL.
SELECT gpu_uuid = 'cpu' AND gpu IS NULL AND pod IS NULL AND namespace IS NULL
       AND typeof(cpu_num) = 'real' AND forward = 1
  FROM layer_events('${SOURCE_DIR}/tests/data/events/cpu.jsonl');
-- Layer durations, the kind of query the table is for.
SELECT group_concat(layer || (CASE forward WHEN 1 THEN '>' ELSE '<' END) || round(ms, 2), ' ')
       = 'bot_l.0<0.5 bot_l.0>0.25 bot_l.1<0.1 bot_l.1>0.05 top_l.0<0.8 top_l.0>0.4'
  FROM (SELECT layer, forward, avg(t_end - t_start) * 1e3 AS ms
          FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') GROUP BY layer, forward);
-- A torn last line and malformed lines are skipped, one warning per file.
SELECT count(*) = 3 FROM layer_events('${SOURCE_DIR}/tests/data/events/damaged/torn.jsonl');
SELECT pp_last_warnings() = json_array('layer_events: skipped 1 malformed line in '
       || '${SOURCE_DIR}/tests/data/events/damaged/torn.jsonl (first at line 4: incomplete last line '
       || '(invalid JSON at byte 58))');
SELECT group_concat(line) = '1,2,4,7' FROM layer_events('${SOURCE_DIR}/tests/data/events/damaged/malformed.jsonl');
SELECT pp_last_warnings() = json_array('layer_events: skipped 3 malformed lines in '
       || '${SOURCE_DIR}/tests/data/events/damaged/malformed.jsonl (first at line 3: field ''forward'' is not '
       || 'true or false)');
SELECT count(*) = 18 FROM layer_events('${SOURCE_DIR}/tests/data/events');
SELECT json_array_length(pp_last_warnings()) = 2;
-- An empty file: no rows, no error, no warning.
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events/empty.jsonl');
SELECT pp_last_warnings() = '[]';
-- Push-down of job_id = and time ranges returns what SQLite's own filtering returns.
SELECT (SELECT group_concat(line) FROM layer_events('${SOURCE_DIR}/tests/data/events/job1')
         WHERE t_start >= 1714000000.1004 AND t_end < 1714000000.1017 AND job_id = 'dlrm-a1b2')
     = (SELECT group_concat(line) FROM (SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') LIMIT -1)
         WHERE t_start >= 1714000000.1004 AND t_end < 1714000000.1017 AND job_id = 'dlrm-a1b2');
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE job_id = 'other';
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE job_id = 'DLRM-A1B2' COLLATE NOCASE;
SELECT count(*) = 5 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE t_start > 1714000000.1004;
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE t_start > NULL;
-- The argument may come from another table.
SELECT group_concat(n) = '6,4' FROM (
  SELECT count(*) AS n FROM (SELECT '${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl' AS p UNION ALL
                             SELECT '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl') AS f,
                            layer_events(f.p) GROUP BY f.p ORDER BY f.p);
-- DIRECTONLY: TEMP views may read files (persistent ones may not: layer_events_errors.sql).
CREATE TEMP VIEW job1_events AS SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/job1');
SELECT count(*) = 10 FROM job1_events;
-- A glob's matches that are not regular files are skipped, each with a warning.
SELECT count(*) = 0 FROM layer_events('/dev/zer[o]');
SELECT pp_last_warnings() = json_array('layer_events: skipped ''/dev/zero'': a character device, not a regular file');
