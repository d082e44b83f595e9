-- Databases the engine made, in this version or an earlier one, pass its check of the stored
-- schema (tests/sql/untrusted_database_errors.sql shows what it refuses).

-- pp_metrics as versions before metric kinds made it: upgraded, then refreshed like any other.
CREATE TABLE pp_metrics(metric TEXT PRIMARY KEY, column_name TEXT NOT NULL);
SELECT pp_install_views() LIKE 'tables: %';
SELECT count(*) = 1 FROM pragma_table_info('pp_metrics') WHERE name = 'kind';
SELECT events_added = 0 FROM pp_refresh(NULL);
SELECT events_added = 0 FROM pp_refresh(NULL);

-- pp_gpu_spans as the version before spans kept their longest event made it: upgraded, its
-- spans recomputed from the folded events whose times can be a call (the event of 2^62 ns is
-- not), with their longest events (0 where none is left), then refreshed.
DROP TABLE pp_gpu_spans;
CREATE TABLE pp_gpu_spans(job_id TEXT NOT NULL, uuid TEXT NOT NULL, first_ns INTEGER NOT NULL,
                          last_ns INTEGER NOT NULL, events INTEGER NOT NULL,
                          PRIMARY KEY (uuid, job_id)) WITHOUT ROWID;
INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end,
                      source_file, line, folded)
VALUES ('old', 'GPU-0ld00000-0000-4000-8000-000000000000', 'fc', 'Linear', 1, 1000, 5000, 1e-6, 5e-6, 'old', 1, 1),
       ('old', 'GPU-0ld00000-0000-4000-8000-000000000000', 'fc', 'Linear', 1, 6000, 7000, 6e-6, 7e-6, 'old', 2, 1),
       ('old', 'GPU-0ld00000-0000-4000-8000-000000000000', 'fc', 'Linear', 1, 8000, (1 << 62) + 1, 8e-6, 4.6e9, 'old', 3, 1);
INSERT INTO pp_gpu_spans VALUES ('old', 'GPU-0ld00000-0000-4000-8000-000000000000', 1000, (1 << 62) + 1, 3),
                                ('gone', 'GPU-0ld00000-0000-4000-8000-000000000000', 1000, 2000, 1);
SELECT pp_install_views() LIKE 'tables: %';
SELECT group_concat(job_id || ':' || first_ns || '-' || last_ns || ':' || events || ':' || longest_ns, ' ')
       = 'gone:1000-2000:1:0 old:1000-7000:2:4000'
  FROM (SELECT * FROM pp_gpu_spans ORDER BY job_id);
SELECT events_added = 0 FROM pp_refresh(NULL);
DELETE FROM pp_events WHERE job_id = 'old';
DELETE FROM pp_gpu_spans;

-- A table whose comments and line breaks differ from this version's is the same table.
DROP TABLE pp_event_files;
CREATE TABLE pp_event_files(source_file TEXT PRIMARY KEY,  -- an older comment
                            bytes INTEGER NOT NULL, lines INTEGER NOT NULL);
SELECT events_added = 0 FROM pp_refresh(NULL);

-- TEMP objects are the user's own: a TEMP trigger on an attribution table is not the file's.
CREATE TEMP TRIGGER count_history AFTER INSERT ON main.layer_history BEGIN SELECT 1; END;
SELECT events_added = 0 FROM pp_refresh(NULL);
-- A TEMP table named like an attribution table is the user's too: the engine writes main's.
CREATE TEMP TABLE pp_metrics(metric TEXT PRIMARY KEY, column_name TEXT, kind TEXT);
CREATE TEMP TABLE pp_metric_bounds(metric TEXT PRIMARY KEY, lower REAL, upper REAL);
DELETE FROM main.pp_metrics; DELETE FROM main.pp_metric_bounds;
SELECT pp_install_views() LIKE 'tables: %';
SELECT (SELECT count(*) FROM main.pp_metrics) = 6 AND (SELECT count(*) FROM temp.pp_metrics) = 0
   AND (SELECT count(*) FROM main.pp_metric_bounds) = 6 AND (SELECT count(*) FROM temp.pp_metric_bounds) = 0;
DROP TABLE temp.pp_metrics; DROP TABLE temp.pp_metric_bounds;

-- The user's own SQL changes settings as before; a TEMP view may too.
SELECT pp_config('timeout_ms', 1500) = '1500';
CREATE TEMP VIEW set_timeout AS SELECT pp_config('timeout_ms', 2500) AS value;
SELECT value = '2500' FROM set_timeout;

-- A view of the extension's name that is not its own (even with pp_meta's fingerprint left as
-- the extension wrote it) is replaced at the next refresh: the refresh reads layer_metrics.
DROP VIEW layer_metrics;
CREATE VIEW layer_metrics AS SELECT 'forged' AS job_id;
SELECT events_added = 0 FROM pp_refresh(NULL);
SELECT count(*) = 0 FROM layer_metrics WHERE job_id = 'forged';
SELECT sql NOT LIKE '%forged%' FROM sqlite_schema WHERE name = 'layer_metrics';
