-- A database file may come from anyone. Nothing stored in it may change a setting, make a
-- request or read a file, and the engine writes only to tables that are exactly its own.
-- Each block below runs in a fresh connection; its SQL plays the part of the hostile file.

-- SQLite enforces DIRECTONLY in a CHECK constraint only for deterministic functions; the form
-- of pp_config that changes a setting is marked so, and is refused there.
-- error: unsafe use of pp_config()
CREATE TABLE t(x CHECK (pp_config('prometheus_url', 'http://attacker.example') IS NOT NULL));
INSERT INTO t VALUES (1);
-- error: unsafe use of pp_config()
CREATE TABLE t(x, y DEFAULT (pp_config('timeout_ms', 1)));
INSERT INTO t(x) VALUES (1);
-- error: unsafe use of pp_config()
CREATE TABLE t(x, y AS (pp_config('timeout_ms', x)));
INSERT INTO t(x) VALUES (1);
SELECT y FROM t;
-- error: unsafe use of pp_config()
CREATE TABLE t(x);
CREATE INDEX t_by_config ON t(pp_config('timeout_ms', x));
INSERT INTO t VALUES (1);
-- error: unsafe use of pp_config()
CREATE VIEW v AS SELECT pp_config('prometheus_url', 'http://attacker.example');
SELECT * FROM v;
-- error: unsafe use of pp_config()
CREATE TABLE t(x);
CREATE TABLE log(x);
CREATE TRIGGER t_insert AFTER INSERT ON t BEGIN INSERT INTO log VALUES (pp_config('timeout_ms', 1)); END;
INSERT INTO t VALUES (1);
-- Nor may a stored view copy the connection's settings or state into what a user is shown.
-- error: unsafe use of virtual table "pp_settings"
CREATE VIEW v AS SELECT group_concat(name || '=' || value) FROM pp_settings;
SELECT * FROM v;
-- error: unsafe use of pp_last_warnings()
CREATE VIEW v AS SELECT pp_last_warnings();
SELECT * FROM v;
-- error: unsafe use of pp_http_stats()
CREATE VIEW v AS SELECT pp_http_stats();
SELECT * FROM v;
-- error: unsafe use of virtual table "pp_refresh"
CREATE VIEW v AS SELECT * FROM pp_refresh(NULL);
SELECT * FROM v;
-- Nor a CHECK constraint: there, a trigger's INSERT OR IGNORE would keep the rows whose guess of
-- a character of the warnings (event files' paths, Prometheus' messages) was right, spelling
-- them out in the file.
-- error: unsafe use of pp_last_warnings()
CREATE TABLE notes(x);
CREATE TABLE guesses(k INTEGER, c TEXT, CHECK (substr(pp_last_warnings(), k, 1) = c));
CREATE TRIGGER copy_warnings AFTER INSERT ON notes BEGIN
  INSERT OR IGNORE INTO guesses VALUES (1, '['), (1, 'x');
END;
SELECT count(*) FROM layer_events('${SOURCE_DIR}/tests/data/events/damaged');
INSERT INTO notes VALUES ('a note');
-- error: unsafe use of pp_http_stats()
CREATE TABLE t(x CHECK (pp_http_stats() LIKE '{"bytes":0,%'));
INSERT INTO t VALUES (1);

-- Nor may a CHECK constraint read a setting, or install the engine's tables and views.
-- error: unsafe use of pp_config()
CREATE TABLE t(x CHECK (pp_config('prometheus_url') LIKE 'http://127%'));
INSERT INTO t VALUES (1);
-- error: unsafe use of pp_install_views()
CREATE TABLE t(x CHECK (pp_install_views() IS NOT NULL));
INSERT INTO t VALUES (1);
-- error: unsafe use of pp_install_views()
CREATE TABLE t(x, y DEFAULT (pp_install_views()));
INSERT INTO t(x) VALUES (1);
-- An attribution table that differs in any way from the engine's own is refused before
-- anything is written.
-- error: pp_refresh: table 'pp_events' is not as precisionprobe creates it (its columns or constraints differ)
CREATE TABLE pp_events(
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL, host_name TEXT, ip TEXT, pod TEXT, namespace TEXT,
  gpu_uuid TEXT NOT NULL, gpu INTEGER, rank INTEGER, pid INTEGER, epoch INTEGER, batch INTEGER,
  layer TEXT NOT NULL, layer_type TEXT, forward INTEGER NOT NULL,
  t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL,
  t_start REAL NOT NULL, t_end REAL NOT NULL, cpu_num REAL,
  source_file TEXT NOT NULL, line INTEGER NOT NULL,
  folded INTEGER NOT NULL DEFAULT 0 CHECK (length(hex(folded)) < 1000),
  UNIQUE (source_file, line));
SELECT * FROM pp_refresh(NULL);
-- error: pp_install_views: table 'pp_metrics' is not as precisionprobe creates it (its columns or constraints differ)
CREATE TABLE pp_metrics(metric TEXT PRIMARY KEY, column_name TEXT NOT NULL, extra TEXT);
SELECT pp_install_views();
-- error: pp_refresh: table 'layer_history' is not as precisionprobe creates it (the trigger 'keep_copy' on it is not the extension's)
SELECT pp_install_views();
CREATE TABLE copies(x);
CREATE TRIGGER keep_copy AFTER INSERT ON layer_history BEGIN INSERT INTO copies VALUES (new.metrics); END;
SELECT * FROM pp_refresh(NULL);
-- A trigger named as one of the extension's, on another table, would leave the extension's missing.
-- error: pp_refresh: table 'pp_layers' is not as precisionprobe creates it (the trigger 'pp_report_layer_update' is on table 'mine', where the extension keeps one of that name on this table)
SELECT pp_install_views();
DROP TRIGGER pp_report_layer_update;
CREATE TABLE mine(x);
CREATE TRIGGER pp_report_layer_update AFTER UPDATE ON mine BEGIN SELECT 1; END;
SELECT * FROM pp_refresh(NULL);
-- pp_mig_devices is written by the import, so a trigger on it would run there.
-- error: pp_refresh: table 'pp_mig_devices' is not as precisionprobe creates it (the trigger 'keep_mig' on it is not the extension's)
SELECT pp_install_views();
CREATE TABLE copies(x);
CREATE TRIGGER keep_mig AFTER INSERT ON pp_mig_devices BEGIN INSERT INTO copies VALUES (new.mig_uuid); END;
SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: table 'pp_mig_devices' is not as precisionprobe creates it (its columns or constraints differ)
CREATE TABLE pp_mig_devices(mig_uuid TEXT PRIMARY KEY, gpu_uuid TEXT NOT NULL,
                            gpu_instance_id INTEGER NOT NULL CHECK (gpu_instance_id >= -1), profile TEXT);
SELECT * FROM pp_refresh(NULL);
-- pp_mig_devices as versions made it for the hour before its MIG- check: refused as no version
-- this one upgrades, saying so rather than only that the file may have been altered.
-- error: pp_install_views: table 'pp_mig_devices' is not as precisionprobe creates it (its columns or constraints differ); nothing was written. The database file was made by a version of precisionprobe this one cannot upgrade, or altered to run code when the engine writes to it: inspect SELECT type, name, sql FROM sqlite_schema WHERE tbl_name = 'pp_mig_devices', or refresh the run's event files into a fresh database
CREATE TABLE pp_mig_devices(mig_uuid TEXT PRIMARY KEY, gpu_uuid TEXT NOT NULL, gpu_instance_id INTEGER NOT NULL,
                            profile TEXT);
SELECT pp_install_views();
-- error: pp_refresh: table 'pp_samples' is not as precisionprobe creates it (the index 'pp_samples_by_value' on it is not the extension's)
SELECT pp_install_views();
CREATE INDEX pp_samples_by_value ON pp_samples(value);
SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: table 'pp_events_blocks' is not as precisionprobe creates it (the index 'pp_events_blocks_unfolded' on it is not the extension's)
SELECT pp_install_views();
DROP INDEX pp_events_blocks_unfolded;
CREATE INDEX pp_events_blocks_unfolded ON pp_events_blocks(gpu_uuid, first_start_ns)
 WHERE (folded_through_ns IS NULL OR folded_through_ns < last_start_ns) AND abs(id) >= 0;
SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: table 'pp_jobs' is not as precisionprobe creates it (it is a view, not a table)
CREATE VIEW pp_jobs AS SELECT 1 AS job_id;
SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: table 'pp_meta' is not as precisionprobe creates it (it is named 'PP_META')
CREATE TABLE PP_META(key TEXT PRIMARY KEY, value TEXT);
SELECT * FROM pp_refresh(NULL);

-- While pp_refresh writes, no setting may change, whoever asks: here a TEMP trigger of the
-- user's own, which SQLite allows to call pp_config.
-- error: settings cannot change while pp_refresh writes the attribution tables
SELECT pp_install_views();
DELETE FROM pp_meta;
CREATE TEMP TRIGGER redirect AFTER INSERT ON main.pp_meta BEGIN SELECT pp_config('timeout_ms', 1); END;
SELECT * FROM pp_refresh(NULL);
-- error: pp_install_views: table 'pp_metric_bounds' is not as precisionprobe creates it (its columns or constraints differ)
CREATE TABLE pp_metric_bounds(metric TEXT PRIMARY KEY, lower REAL, upper REAL CHECK (upper > -1e308));
SELECT pp_install_views();
-- error: pp_refresh: table 'layer_metrics' is not as precisionprobe creates it (it is a table where the extension keeps a view)
CREATE TABLE layer_metrics(job_id TEXT);
SELECT * FROM pp_refresh(NULL);
