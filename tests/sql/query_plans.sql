-- The file and attribution tables give the same rows under every plan SQLite may choose: the
-- arguments constant, taken from a table, a CTE, a subquery, a parameter, a TEMP view or a TEMP
-- trigger, named as columns, and the rows filtered with OR, IN, NOT, BETWEEN, LIMIT/OFFSET,
-- ORDER BY, DISTINCT and GROUP BY. Each check compares with the constant-argument form, copied
-- into a TEMP table first. The prom_* tables: prom_query_plans.sql; errors: query_plans_errors.sql.
CREATE TEMP TABLE dirs(name TEXT, path TEXT);
INSERT INTO dirs VALUES ('job1', '${SOURCE_DIR}/tests/data/events/job1'),
                        ('rank0', '${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl'),
                        ('all', '${SOURCE_DIR}/tests/data/events');
CREATE TEMP TABLE ev AS SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events');
CREATE TEMP TABLE jobs AS SELECT * FROM layer_jobs('${SOURCE_DIR}/tests/data/events');
SELECT count(*) = 18 AND count(DISTINCT job_id) = 2 FROM ev;
SELECT count(*) = 2 FROM jobs;

-- layer_events --------------------------------------------------------------------------------
-- OR of visible columns: SQLite plans each branch without the argument; that plan is costed out.
SELECT (SELECT group_concat(source_file || line) FROM layer_events('${SOURCE_DIR}/tests/data/events')
         WHERE layer = 'top_l.0' OR layer = 'bot_l.0')
     = (SELECT group_concat(source_file || line) FROM ev WHERE layer = 'top_l.0' OR layer = 'bot_l.0');
SELECT count(*) = (SELECT count(*) FROM ev WHERE layer = 'top_l.0' OR forward = 0)
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE layer = 'top_l.0' OR forward = 0;
-- OR of two arguments: one call per path.
SELECT count(*) = 10 FROM layer_events
 WHERE path = '${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl' OR path = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl';
-- Two calls as the branches of an OR that SQLite does not make an IN list (a MULTI-INDEX OR):
-- it drops a row whose rowid an earlier branch gave, so each call's rows need their own rowids,
-- and a call repeated with the same arguments the same ones (its rows are the same rows).
SELECT count(*) = 6 + 3 FROM layer_events
 WHERE path = '${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl'
    OR (path = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl' AND forward = 1);
SELECT count(*) = 4 FROM layer_events
 WHERE (path = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl' AND forward = 1)
    OR (path = '${SOURCE_DIR}/tests/data/events/job1/rank1.jsonl' AND layer IS NOT NULL);
-- The same call in both branches, with different push-downs (job_id in one, t_start or nothing
-- in the other): an event both keep is one row, kept once, and none is lost. (The subquery and
-- the || '' keep SQLite from seeing one path: it runs the call once per branch.)
CREATE TEMP TABLE events_dir(path TEXT);
INSERT INTO events_dir VALUES ('${SOURCE_DIR}/tests/data/events');
SELECT (SELECT group_concat(row) FROM (SELECT source_file || ':' || line AS row FROM layer_events
         WHERE (path = '${SOURCE_DIR}/tests/data/events' AND job_id = 'dlrm-a1b2')
            OR (path = (SELECT path FROM events_dir) AND t_start > 1714000000.05) ORDER BY row))
     = (SELECT group_concat(row) FROM (SELECT source_file || ':' || line AS row FROM ev
         WHERE job_id = 'dlrm-a1b2' OR t_start > 1714000000.05 ORDER BY row));
SELECT (SELECT group_concat(row) FROM (SELECT source_file || ':' || line AS row FROM layer_events
         WHERE (path = '${SOURCE_DIR}/tests/data/events' AND job_id = 'dlrm-cpu-7')
            OR (path = '${SOURCE_DIR}/tests/data/events' || '' AND layer LIKE '%l.0') ORDER BY row))
     = (SELECT group_concat(row) FROM (SELECT source_file || ':' || line AS row FROM ev
         WHERE job_id = 'dlrm-cpu-7' OR layer LIKE '%l.0' ORDER BY row));
SELECT (SELECT count(*) FROM layer_events
         WHERE (path = '${SOURCE_DIR}/tests/data/events' AND t_end < 1714000000.15)
            OR (path = (SELECT path FROM events_dir) AND t_start > 1714000000.1))
     = (SELECT count(*) FROM ev WHERE t_end < 1714000000.15 OR t_start > 1714000000.1);
-- Calls with different paths are different calls even where they read the same file: each
-- keeps its rows (their hidden path differs), as UNION ALL of the two has them.
SELECT (SELECT count(*) FROM layer_events
         WHERE (path = '${SOURCE_DIR}/tests/data/events' AND job_id = 'dlrm-a1b2')
            OR (path = '${SOURCE_DIR}/tests/data/events/job1' AND t_start > 1714000000.05))
     = (SELECT count(*) FROM (SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id = 'dlrm-a1b2'
                              UNION ALL
                              SELECT * FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE t_start > 1714000000.05));
-- The named-column form, with = and with IS.
SELECT count(*) = 10 FROM layer_events WHERE path = '${SOURCE_DIR}/tests/data/events/job1';
SELECT count(*) = 10 FROM layer_events WHERE path IS '${SOURCE_DIR}/tests/data/events/job1';
SELECT count(*) = 7 FROM layer_events
 WHERE path IN ('${SOURCE_DIR}/tests/data/events/job1/rank0.jsonl', '${SOURCE_DIR}/tests/data/events/cpu.jsonl');
-- A WHERE condition on the argument beside the call's own: the rows where both hold, never a
-- call with the condition's value instead (that would read a file that the query excludes).
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE path = '${SOURCE_DIR}/no/such/dir';
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1')
 WHERE path IN ('${SOURCE_DIR}/no/such/dir', '${SOURCE_DIR}/tests/data/events/job1');
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE path IS '${SOURCE_DIR}/tests/data/events/job1';
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1') WHERE path = 1;
SELECT count(*) = 10 FROM layer_events('${SOURCE_DIR}/tests/data/events/job1')
 WHERE path = upper('${SOURCE_DIR}/tests/data/events/job1') COLLATE NOCASE;
SELECT count(*) = 0 FROM layer_jobs('${SOURCE_DIR}/tests/data/events/job1') WHERE path = '${SOURCE_DIR}/no/such/dir';
SELECT count(*) = 0 FROM dirs AS d, layer_events('${SOURCE_DIR}/tests/data/events/job1') AS e WHERE e.path = d.path AND d.name = 'all';
SELECT count(*) = 10 FROM dirs AS d, layer_events('${SOURCE_DIR}/tests/data/events/job1') AS e WHERE e.path = d.path;
-- IN: twenty values, one pass over the files; NULL and values of other types in the list.
SELECT (SELECT group_concat(source_file || line) FROM layer_events('${SOURCE_DIR}/tests/data/events')
         WHERE job_id IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q',
                          'dlrm-a1b2', 'dlrm-cpu-7', NULL))
     = (SELECT group_concat(source_file || line) FROM ev WHERE job_id IN ('dlrm-a1b2', 'dlrm-cpu-7'));
SELECT count(*) = 0 FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id IN (NULL, 1, 2.5, x'00');
SELECT count(*) = (SELECT count(*) FROM ev WHERE job_id = 'dlrm-a1b2')
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id IN ('dlrm-a1b2', 3);
SELECT count(*) = (SELECT count(*) FROM ev WHERE job_id IN (SELECT job_id FROM jobs))
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id IN (SELECT job_id FROM jobs);
-- The collation of IN is the left side's: NOCASE there is not pushed down.
SELECT count(*) = (SELECT count(*) FROM ev WHERE job_id IN ('DLRM-A1B2' COLLATE NOCASE, 'x'))
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id IN ('DLRM-A1B2' COLLATE NOCASE, 'x');
SELECT count(*) = 17 FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id COLLATE NOCASE IN ('DLRM-A1B2', 'x');
SELECT count(*) = (SELECT count(*) FROM ev WHERE job_id = 'dlrm-a1b2' AND job_id IN ('dlrm-a1b2', 'y'))
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id = 'dlrm-a1b2' AND job_id IN ('dlrm-a1b2', 'y');
-- NOT and BETWEEN (the range is pushed down; SQLite still checks it).
SELECT count(*) = (SELECT count(*) FROM ev WHERE NOT (layer = 'top_l.0' AND forward = 1))
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE NOT (layer = 'top_l.0' AND forward = 1);
SELECT count(*) = (SELECT count(*) FROM ev WHERE job_id NOT IN ('dlrm-a1b2'))
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE job_id NOT IN ('dlrm-a1b2');
SELECT (SELECT group_concat(line) FROM layer_events('${SOURCE_DIR}/tests/data/events')
         WHERE t_start BETWEEN 1714000000.1004 AND 1714000000.1017)
     = (SELECT group_concat(line) FROM ev WHERE t_start BETWEEN 1714000000.1004 AND 1714000000.1017);
SELECT count(*) = (SELECT count(*) FROM ev WHERE t_start NOT BETWEEN 1714000000.1004 AND 1714000000.1017)
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE t_start NOT BETWEEN 1714000000.1004 AND 1714000000.1017;
SELECT count(*) = (SELECT count(*) FROM ev WHERE t_start > '1714000000.1004')
  FROM layer_events('${SOURCE_DIR}/tests/data/events') WHERE t_start > '1714000000.1004';
-- LIMIT and OFFSET, ORDER BY, DISTINCT, GROUP BY.
SELECT (SELECT group_concat(line) FROM (SELECT line FROM layer_events('${SOURCE_DIR}/tests/data/events') LIMIT 4 OFFSET 3))
     = (SELECT group_concat(line) FROM (SELECT line FROM ev ORDER BY rowid LIMIT 4 OFFSET 3));
SELECT (SELECT group_concat(line) FROM (SELECT line FROM layer_events('${SOURCE_DIR}/tests/data/events')
                                          ORDER BY t_start DESC, source_file, line LIMIT 5))
     = (SELECT group_concat(line) FROM (SELECT line FROM ev ORDER BY t_start DESC, source_file, line LIMIT 5));
SELECT (SELECT group_concat(layer) FROM (SELECT DISTINCT layer FROM layer_events('${SOURCE_DIR}/tests/data/events') ORDER BY 1))
     = (SELECT group_concat(layer) FROM (SELECT DISTINCT layer FROM ev ORDER BY 1));
SELECT (SELECT group_concat(layer || forward || ':' || n) FROM (
          SELECT layer, forward, count(*) AS n FROM layer_events('${SOURCE_DIR}/tests/data/events') GROUP BY 1, 2))
     = (SELECT group_concat(layer || forward || ':' || n) FROM (SELECT layer, forward, count(*) AS n FROM ev GROUP BY 1, 2));
-- The argument from another table, in either order, CROSS JOIN and LEFT JOIN.
SELECT group_concat(name || ':' || n) = 'all:18,job1:10,rank0:6' FROM (
  SELECT d.name, count(*) AS n FROM dirs AS d, layer_events(d.path) GROUP BY 1 ORDER BY 1);
SELECT group_concat(name || ':' || n) = 'all:18,job1:10,rank0:6' FROM (
  SELECT d.name, count(*) AS n FROM layer_events(d.path) AS e, dirs AS d GROUP BY 1 ORDER BY 1);
SELECT count(*) = 34 FROM dirs AS d CROSS JOIN layer_events(d.path);
SELECT count(*) = 34 FROM dirs AS d LEFT JOIN layer_events(d.path) AS e ON e.layer IS NOT NULL;
SELECT count(*) = 34 FROM dirs AS d, layer_events AS e WHERE e.path = d.path;
-- ... from a CTE, a correlated subquery, a scalar subquery.
WITH wanted(p) AS (SELECT path FROM dirs WHERE name <> 'all')
SELECT count(*) = 16 FROM wanted, layer_events(wanted.p);
SELECT group_concat(name || ':' || n) = 'all:18,job1:10,rank0:6' FROM (
  SELECT name, (SELECT count(*) FROM layer_events(dirs.path)) AS n FROM dirs ORDER BY name);
SELECT count(*) = 2 FROM dirs WHERE EXISTS (SELECT 1 FROM layer_events(dirs.path) WHERE job_id = 'dlrm-cpu-7')
    OR name = 'rank0';
SELECT count(*) = 10 FROM layer_events((SELECT path FROM dirs WHERE name = 'job1'));
-- ... from a bound parameter.
.parameter set @events '${SOURCE_DIR}/tests/data/events'
SELECT count(*) = 18 FROM layer_events(@events);
SELECT count(*) = 18 FROM layer_events WHERE path = @events;
-- ... in a TEMP view and a TEMP trigger.
CREATE TEMP VIEW events_per_dir AS SELECT d.name, e.* FROM dirs AS d, layer_events(d.path) AS e;
SELECT count(*) = 10 FROM events_per_dir WHERE name = 'job1';
SELECT count(*) = (SELECT count(*) FROM ev WHERE layer = 'top_l.0' OR layer = 'bot_l.1')
  FROM events_per_dir WHERE name = 'all' AND (layer = 'top_l.0' OR layer = 'bot_l.1');
CREATE TEMP TABLE requested(path TEXT);
CREATE TEMP TABLE counted(path TEXT, events INTEGER, jobs INTEGER);
CREATE TEMP TRIGGER count_events AFTER INSERT ON requested BEGIN
  INSERT INTO counted SELECT NEW.path, (SELECT count(*) FROM layer_events(NEW.path)),
                             (SELECT count(*) FROM layer_jobs WHERE path = NEW.path);
END;
INSERT INTO requested SELECT path FROM dirs;
SELECT group_concat(events || '/' || jobs) = '10/2,6/1,18/2' FROM counted;
-- Argument types: a BLOB of the path's bytes reads the same files; numbers are paths too.
SELECT count(*) = 10 FROM layer_events(CAST('${SOURCE_DIR}/tests/data/events/job1' AS BLOB));

-- layer_jobs ----------------------------------------------------------------------------------
SELECT count(*) = (SELECT count(*) FROM jobs WHERE job_id = 'dlrm-a1b2' OR pid = 0)
  FROM layer_jobs('${SOURCE_DIR}/tests/data/events') WHERE job_id = 'dlrm-a1b2' OR pid = 0;
SELECT count(*) = (SELECT count(*) FROM jobs WHERE job_id IN ('dlrm-a1b2', 'zzz'))
  FROM layer_jobs('${SOURCE_DIR}/tests/data/events') WHERE job_id IN ('dlrm-a1b2', 'zzz');
SELECT count(*) = (SELECT count(*) FROM jobs WHERE NOT job_id = 'dlrm-a1b2')
  FROM layer_jobs('${SOURCE_DIR}/tests/data/events') WHERE NOT job_id = 'dlrm-a1b2';
SELECT count(*) = (SELECT count(*) FROM jobs WHERE start_time BETWEEN 0 AND 1714000000)
  FROM layer_jobs('${SOURCE_DIR}/tests/data/events') WHERE start_time BETWEEN 0 AND 1714000000;
SELECT (SELECT group_concat(source_file) FROM (SELECT DISTINCT source_file FROM layer_jobs('${SOURCE_DIR}/tests/data/events')
                                                 ORDER BY 1 LIMIT 2 OFFSET 1))
     = (SELECT group_concat(source_file) FROM (SELECT DISTINCT source_file FROM jobs ORDER BY 1 LIMIT 2 OFFSET 1));
SELECT (SELECT group_concat(job_id || n) FROM (SELECT job_id, count(*) AS n FROM layer_jobs('${SOURCE_DIR}/tests/data/events') GROUP BY 1))
     = (SELECT group_concat(job_id || n) FROM (SELECT job_id, count(*) AS n FROM jobs GROUP BY 1));
SELECT group_concat(name || ':' || n) = 'all:2,job1:2,rank0:1' FROM (
  SELECT d.name, count(*) AS n FROM layer_jobs(d.path) AS j, dirs AS d GROUP BY 1 ORDER BY 1);
WITH wanted(p) AS (SELECT path FROM dirs WHERE name = 'job1') SELECT count(*) = 2 FROM wanted, layer_jobs(wanted.p);
SELECT count(*) = 2 FROM layer_jobs(@events);
SELECT count(*) = 2 FROM layer_jobs WHERE path IS @events;
CREATE TEMP VIEW jobs_per_dir AS SELECT d.name, j.* FROM dirs AS d, layer_jobs(d.path) AS j;
SELECT count(*) = 2 FROM jobs_per_dir WHERE name = 'job1' OR name = 'rank0' AND job_id = 'nobody';

-- pp_refresh, pp_overlaps, pp_overlap_means, pp_fractions, pp_estimates ------------------------
-- (the attribution fixtures of attribution.sql: samples stamped at their window's end)
SELECT pp_install_views() LIKE 'tables: %';
SELECT pp_config('sample_offset_ms', 0) = '0';
UPDATE pp_metrics SET kind = 'window';
SELECT pp_config('attribution_margin_seconds', 1000000000) = '1000000000';
-- final from another table is used: with a margin this large only final folds the windows.
CREATE TEMP TABLE refresh_options(want_final INTEGER);
INSERT INTO refresh_options VALUES (1);
SELECT count(*) = 1 AND max(windows_folded) > 0 AND max(final) = 1
  FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl', refresh_options.want_final), refresh_options;
SELECT count(*) = 1 AND max(windows_folded) = 0 AND max(events_added) = 0
  FROM refresh_options, pp_refresh WHERE path = '${SOURCE_DIR}/tests/data/attribution/*.jsonl' AND final = refresh_options.want_final;
CREATE TEMP TABLE gpus AS SELECT DISTINCT uuid, min(ts_ms) + 2000 AS after_ms FROM pp_samples GROUP BY uuid;
SELECT count(*) = 2 FROM gpus;
CREATE TEMP TABLE overlaps AS SELECT g.uuid AS gpu, o.* FROM gpus AS g, pp_overlaps(g.uuid) AS o;
SELECT count(*) > 0 FROM overlaps;
-- pp_overlaps(uuid, b.after_ms): the bound is used, whichever table is named first.
SELECT (SELECT count(*) FROM pp_overlaps(g.uuid, g.after_ms) AS o, gpus AS g)
     = (SELECT count(*) FROM overlaps AS o JOIN gpus AS g ON o.gpu = g.uuid WHERE o.ts_ms > g.after_ms);
SELECT (SELECT count(*) FROM gpus AS g, pp_overlaps AS o WHERE o.uuid = g.uuid AND o.after_ms = g.after_ms)
     = (SELECT count(*) FROM overlaps AS o JOIN gpus AS g ON o.gpu = g.uuid WHERE o.ts_ms > g.after_ms);
SELECT (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid) AS o WHERE o.layer = 'l1' OR o.layer = 'emb')
     = (SELECT count(*) FROM overlaps WHERE layer = 'l1' OR layer = 'emb');
SELECT (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid) AS o WHERE o.metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x') AND NOT o.forward)
     = (SELECT count(*) FROM overlaps WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x') AND NOT forward);
SELECT (SELECT group_concat(gpu || event_id || ts_ms) FROM (SELECT g.uuid AS gpu, o.* FROM gpus AS g, pp_overlaps(g.uuid) AS o
                                                            ORDER BY ts_ms DESC, gpu, event_id LIMIT 7 OFFSET 2))
     = (SELECT group_concat(gpu || event_id || ts_ms) FROM (SELECT * FROM overlaps ORDER BY ts_ms DESC, gpu, event_id LIMIT 7 OFFSET 2));
WITH one(u) AS (SELECT uuid FROM gpus ORDER BY uuid LIMIT 1)
SELECT (SELECT count(*) FROM one, pp_overlaps(one.u)) = (SELECT count(*) FROM overlaps WHERE gpu = (SELECT u FROM one));
-- The bounds as INTEGER, REAL, TEXT and NULL give the same rows.
SELECT (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid, g.after_ms))
     = (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid, g.after_ms + 0.5))
   AND (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid, g.after_ms))
     = (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid, CAST(g.after_ms AS TEXT)))
   AND (SELECT count(*) FROM gpus AS g, pp_overlaps(g.uuid, NULL)) = (SELECT count(*) FROM overlaps);
-- pp_overlap_means: the same through a TEMP view, a parameter and a trigger.
CREATE TEMP TABLE means AS SELECT g.uuid AS gpu, m.* FROM gpus AS g, pp_overlap_means(g.uuid) AS m;
-- Each state is pp_mean over its group's pp_overlaps rows: the same count, min and max, and to
-- rounding the same mean and spread (a sample's rows of one layer are added as one value with
-- their summed weight). The fixtures have samples that hold several calls of one layer.
SELECT count(*) > 0 FROM (SELECT 1 FROM overlaps WHERE event_id IS NOT NULL
                           GROUP BY gpu, metric, ts_ms, job_id, layer, forward HAVING count(*) > 1);
SELECT count(*) = (SELECT count(*) FROM means WHERE metric <> '_duration') AND count(*) > 0
  FROM means AS m
  JOIN (SELECT gpu, job_id, layer, forward, metric, pp_mean(value, weight_ns / 1e9) AS state
          FROM overlaps GROUP BY gpu, job_id, layer, forward, metric) AS o USING (gpu, job_id, layer, forward, metric)
 WHERE m.state IS o.state
    OR (pp_mean_count(m.state) = pp_mean_count(o.state)
        AND pp_mean_min(m.state) = pp_mean_min(o.state) AND pp_mean_max(m.state) = pp_mean_max(o.state)
        AND abs(pp_mean_value(m.state) - pp_mean_value(o.state)) <= 1e-12 * abs(pp_mean_value(o.state))
        AND abs(pp_mean_stddev(m.state) - pp_mean_stddev(o.state)) <= 1e-9 * pp_mean_stddev(o.state) + 1e-15);
-- The refresh above folded every window at once, each GPU's means made on a worker beside the
-- other GPUs' reads: layer_state holds what pp_overlap_means gives, merged over the GPUs.
SELECT count(*) = (SELECT count(DISTINCT job_id || '|' || layer || '|' || forward || '|' || metric) FROM means
                    WHERE metric <> '_duration' AND state IS NOT NULL) AND count(*) > 0
  FROM layer_state AS s
  JOIN (SELECT job_id, layer, forward, metric, pp_mean_merge(state) AS state FROM means
         WHERE metric <> '_duration' AND state IS NOT NULL GROUP BY job_id, layer, forward, metric) AS m
       USING (job_id, layer, forward, metric)
 WHERE pp_mean_count(s.state) = pp_mean_count(m.state) AND pp_mean_min(s.state) = pp_mean_min(m.state)
   AND pp_mean_max(s.state) = pp_mean_max(m.state)
   AND abs(pp_mean_value(s.state) - pp_mean_value(m.state)) <= 1e-12 * abs(pp_mean_value(m.state));
CREATE TEMP VIEW means_per_gpu AS SELECT g.uuid AS gpu, m.* FROM gpus AS g, pp_overlap_means(g.uuid) AS m;
SELECT (SELECT count(*) FROM means_per_gpu WHERE metric = '_duration' OR layer = 'l2')
     = (SELECT count(*) FROM means WHERE metric = '_duration' OR layer = 'l2');
.parameter set @gpu "(SELECT min(uuid) FROM gpus)"
SELECT (SELECT count(*) FROM pp_overlap_means(@gpu)) = (SELECT count(*) FROM means WHERE gpu = @gpu);
SELECT (SELECT count(*) FROM pp_overlap_means WHERE uuid = @gpu) = (SELECT count(*) FROM means WHERE gpu = @gpu);
-- An OR whose branches give the same uuid and different bounds: SQLite takes the uuid out of
-- the OR, and a call without the bound (its column NULL, equal to neither) must not run instead
-- of each branch's own call, whose rows the OR keeps as `after_ms IN (...)` does.
SELECT (SELECT count(*) FROM pp_overlaps(@gpu, g.after_ms)) > 0 AND
       (SELECT count(*) FROM pp_overlaps WHERE (uuid = @gpu AND after_ms = 0) OR (uuid = @gpu AND after_ms = g.after_ms))
     = (SELECT count(*) FROM pp_overlaps(@gpu, 0)) + (SELECT count(*) FROM pp_overlaps(@gpu, g.after_ms))
  FROM gpus AS g WHERE g.uuid = @gpu;
SELECT (SELECT count(*) FROM pp_overlap_means WHERE (uuid = @gpu AND through_ms = 0) OR (uuid = @gpu AND through_ms = g.after_ms))
     = (SELECT count(*) FROM pp_overlap_means WHERE uuid = @gpu AND through_ms IN (0, g.after_ms))
   AND (SELECT count(*) FROM pp_overlap_means(@gpu, NULL, g.after_ms)) > 0
  FROM gpus AS g WHERE g.uuid = @gpu;
CREATE TEMP TABLE gpu_requests(uuid TEXT);
CREATE TEMP TABLE gpu_counts(uuid TEXT, rows INTEGER);
CREATE TEMP TRIGGER count_means AFTER INSERT ON gpu_requests BEGIN
  INSERT INTO gpu_counts SELECT NEW.uuid, count(*) FROM pp_overlap_means(NEW.uuid);
END;
INSERT INTO gpu_requests SELECT uuid FROM gpus;
SELECT (SELECT sum(rows) FROM gpu_counts) = (SELECT count(*) FROM means);
-- pp_fractions: timing_shift from another table; grouping for pp_estimates from a CTE.
CREATE TEMP TABLE fractions AS SELECT g.uuid AS gpu, f.* FROM gpus AS g, pp_fractions(g.uuid) AS f;
SELECT count(*) > 0 FROM fractions;
CREATE TEMP TABLE shifts(shift INTEGER);
INSERT INTO shifts VALUES (0);
SELECT (SELECT count(*) FROM pp_fractions(g.uuid, s.shift) AS f, gpus AS g, shifts AS s) = (SELECT count(*) FROM fractions);
SELECT (SELECT count(*) FROM pp_fractions WHERE (uuid = @gpu AND timing_shift = 0) OR (uuid = @gpu AND timing_shift = 1))
     = (SELECT count(*) FROM pp_fractions(@gpu, 0)) + (SELECT count(*) FROM pp_fractions(@gpu, 1))
   AND (SELECT count(*) FROM pp_fractions(@gpu, 1)) > 0;
SELECT (SELECT count(*) FROM gpus AS g, pp_fractions(g.uuid) AS f WHERE f.layer IN ('l1', 'l2') OR f.fraction BETWEEN 0.4 AND 0.6)
     = (SELECT count(*) FROM fractions WHERE layer IN ('l1', 'l2') OR fraction BETWEEN 0.4 AND 0.6);
CREATE TEMP TABLE estimates AS SELECT * FROM pp_estimates('layer');
WITH g(grouping) AS (VALUES ('layer'))
SELECT (SELECT count(*) FROM g, pp_estimates(g.grouping)) = (SELECT count(*) FROM estimates);
SELECT (SELECT count(*) FROM pp_estimates WHERE grouping = 'layer' AND (layer = 'l1' OR metric = 'DCGM_FI_DEV_GPU_UTIL'))
     = (SELECT count(*) FROM estimates WHERE layer = 'l1' OR metric = 'DCGM_FI_DEV_GPU_UTIL');
SELECT (SELECT group_concat(DISTINCT job_id) FROM (SELECT job_id FROM pp_estimates('layer') ORDER BY 1))
     = (SELECT group_concat(DISTINCT job_id) FROM (SELECT job_id FROM estimates ORDER BY 1));
-- pp_fractions and pp_estimates: a CTE, a parameter, a TEMP view, LIMIT/OFFSET, ORDER BY,
-- DISTINCT, GROUP BY, and the arguments as TEXT, INTEGER, REAL and BLOB.
WITH one(u) AS (SELECT uuid FROM gpus ORDER BY uuid LIMIT 1)
SELECT (SELECT count(*) FROM one, pp_fractions(one.u)) = (SELECT count(*) FROM fractions WHERE gpu = (SELECT u FROM one));
SELECT (SELECT count(*) FROM pp_fractions(@gpu, 0)) = (SELECT count(*) FROM fractions WHERE gpu = @gpu)
   AND (SELECT count(*) FROM pp_fractions(@gpu, 0.0)) = (SELECT count(*) FROM fractions WHERE gpu = @gpu)
   AND (SELECT count(*) FROM pp_fractions(@gpu, '0')) = (SELECT count(*) FROM fractions WHERE gpu = @gpu)
   AND (SELECT count(*) FROM pp_fractions(CAST(@gpu AS BLOB), NULL)) = (SELECT count(*) FROM fractions WHERE gpu = @gpu);
SELECT (SELECT group_concat(metric || ts_ms || layer || forward) FROM (
          SELECT f.* FROM gpus AS g, pp_fractions(g.uuid) AS f ORDER BY g.uuid, ts_ms DESC, metric, layer, forward LIMIT 9 OFFSET 4))
     = (SELECT group_concat(metric || ts_ms || layer || forward) FROM (
          SELECT * FROM fractions ORDER BY gpu, ts_ms DESC, metric, layer, forward LIMIT 9 OFFSET 4));
SELECT (SELECT group_concat(layer || forward || ':' || n) FROM (
          SELECT layer, forward, count(DISTINCT ts_ms) AS n FROM gpus AS g, pp_fractions(g.uuid) GROUP BY 1, 2 ORDER BY 1, 2))
     = (SELECT group_concat(layer || forward || ':' || n) FROM (
          SELECT layer, forward, count(DISTINCT ts_ms) AS n FROM fractions GROUP BY 1, 2 ORDER BY 1, 2));
CREATE TEMP VIEW estimates_by_type AS SELECT * FROM pp_estimates('layer_type');
SELECT (SELECT count(*) FROM estimates_by_type WHERE layer_type IN ('Linear', 'x') OR NOT identified)
     = (SELECT count(*) FROM pp_estimates(CAST('layer_type' AS BLOB)) WHERE layer_type IN ('Linear', 'x') OR NOT identified);
.parameter set @grouping layer
SELECT (SELECT group_concat(job_id || ':' || n) FROM (SELECT job_id, count(*) AS n FROM pp_estimates(@grouping) GROUP BY 1 ORDER BY 1))
     = (SELECT group_concat(job_id || ':' || n) FROM (SELECT job_id, count(*) AS n FROM estimates GROUP BY 1 ORDER BY 1));

-- pp_refresh compared with a table: it runs only where every value of its arguments agrees,
-- whichever table SQLite would read first (a refresh is not undone by the rows SQLite drops).
CREATE TEMP TABLE finals(f INTEGER);
INSERT INTO finals VALUES (1);
SELECT count(*) = 0 FROM finals AS t, pp_refresh('${SOURCE_DIR}/tests/data/events/cpu.jsonl', 0) AS r WHERE r.final = t.f;
SELECT count(*) = 0 FROM pp_refresh('${SOURCE_DIR}/tests/data/events/cpu.jsonl', 0) AS r JOIN finals AS t ON r.final = t.f;
SELECT count(*) = 0 FROM pp_events WHERE source_file LIKE '%cpu.jsonl';
INSERT INTO finals VALUES (0);
SELECT count(*) = 1 AND sum(events_added) > 0
  FROM finals AS t, pp_refresh('${SOURCE_DIR}/tests/data/events/cpu.jsonl', 0) AS r WHERE r.final = t.f;
-- An OR whose branches give the same path and different finals: each branch's call runs and
-- gives its row, never a call without final (run, and its row then dropped: NULL equals neither).
SELECT count(*) = 2 AND count(DISTINCT final) = 2 FROM pp_refresh
 WHERE (path = '${SOURCE_DIR}/tests/data/events/cpu.jsonl' AND final = 0)
    OR (path = '${SOURCE_DIR}/tests/data/events/cpu.jsonl' AND final = 1);
-- The same refresh as statements of their own, one after the other: each runs (the rule against a
-- call run twice holds within one statement only, wherever the next statement is allocated).
SELECT events_added >= 0 FROM pp_refresh(NULL);
SELECT events_added >= 0 FROM pp_refresh(NULL);
SELECT events_added >= 0 FROM pp_refresh(NULL);
