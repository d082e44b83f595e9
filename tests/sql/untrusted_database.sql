-- Databases the engine made, in this version or an earlier one, pass its check of the stored
-- schema (tests/sql/untrusted_database_errors.sql shows what it refuses).

-- pp_metrics as versions before metric kinds made it: upgraded, then refreshed like any other.
CREATE TABLE pp_metrics(metric TEXT PRIMARY KEY, column_name TEXT NOT NULL);
SELECT pp_install_views() LIKE 'tables: %';
SELECT count(*) = 1 FROM pragma_table_info('pp_metrics') WHERE name = 'kind';
SELECT events_added = 0 FROM pp_refresh(NULL);
SELECT events_added = 0 FROM pp_refresh(NULL);

-- A table whose comments and line breaks differ from this version's is the same table.
DROP TABLE pp_event_files;
CREATE TABLE pp_event_files(source_file TEXT PRIMARY KEY,  -- an older comment
                            bytes INTEGER NOT NULL, lines INTEGER NOT NULL);
SELECT events_added = 0 FROM pp_refresh(NULL);

-- TEMP objects are the user's own: a TEMP trigger on an attribution table is not the file's.
CREATE TEMP TRIGGER count_history AFTER INSERT ON main.layer_history BEGIN SELECT 1; END;
SELECT events_added = 0 FROM pp_refresh(NULL);

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
