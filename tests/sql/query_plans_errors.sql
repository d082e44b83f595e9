-- Where no plan can supply an argument, or its value is of no use, the error names the
-- function, the argument and what is wrong (query_plans.sql: the plans that work).
CREATE TEMP TABLE dirs(name TEXT, path TEXT);
INSERT INTO dirs VALUES ('job1', '${SOURCE_DIR}/tests/data/events/job1');
-- error: layer_events: missing required argument 'path'
SELECT count(*) FROM layer_events WHERE layer = 'a' OR layer = 'b';
-- error: layer_events: missing required argument 'path'
SELECT count(*) FROM layer_events WHERE path > '/';
-- error: layer_jobs: missing required argument 'path'
SELECT count(*) FROM layer_jobs WHERE path LIKE '%';
-- error: layer_events: missing required argument 'path'
SELECT count(*) FROM layer_events(d.path) CROSS JOIN dirs AS d;
-- error: layer_jobs: missing required argument 'path'
SELECT count(*) FROM layer_jobs AS j CROSS JOIN dirs AS d WHERE j.path = d.path;
-- error: layer_events: argument 'path' is NULL
SELECT count(*) FROM dirs AS d LEFT JOIN layer_events(NULL);
-- error: layer_events: no such file or directory: '42'
SELECT count(*) FROM layer_events(42);
-- error: layer_events: no such file or directory: '4.5'
SELECT count(*) FROM layer_events(4.5);
-- error: pp_refresh: argument 'final' needs 0 or 1 (FALSE or TRUE), got 'yes'
SELECT * FROM pp_refresh(NULL, 'yes');
-- error: pp_refresh: missing required argument 'path'
SELECT * FROM pp_refresh WHERE final = 1;
-- A refresh's arguments come by = or IS: any other test of them would drop the row of a refresh
-- that ran all the same, so none runs.
-- error: pp_refresh: argument 'final' must be given with = (or IS); a filter on it such as >, LIKE or != would drop the row
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/*.jsonl') WHERE final > 0;
-- error: pp_refresh: argument 'path' must be given with = (or IS)
SELECT count(*) FROM pp_refresh(NULL) WHERE path LIKE 'x%';
-- IS NULL tests a column without giving a value; = NULL gives the argument NULL.
-- error: pp_refresh: argument 'path' is tested with IS NULL, which gives the call no value: write path = NULL, or pass NULL in its place
SELECT count(*) FROM pp_refresh WHERE path IS NULL;
SELECT count(*) = 1 FROM pp_refresh WHERE path = NULL;
-- A refresh runs once per statement: a plan that would run the same call again for each row of
-- another table (here the LEFT JOIN's right side) stops at the second run.
-- error: pp_refresh: runs each call once per statement, but this plan runs the same call again
SELECT count(*) FROM (SELECT 1 UNION ALL SELECT 2) AS two LEFT JOIN pp_refresh(NULL);
-- Also in a correlated subquery, which opens a cursor for each of its runs.
-- error: pp_refresh: runs each call once per statement, but this plan runs the same call again
SELECT (SELECT count(*) FROM pp_refresh(NULL) WHERE two.x = two.x) FROM (SELECT 1 AS x UNION ALL SELECT 2) AS two;
-- Also where calls with other arguments come between (each row's call, twice over).
-- error: pp_refresh: runs each call once per statement, but this plan runs the same call again
SELECT count(*) FROM (SELECT 1 UNION ALL SELECT 2) AS outer_rows
 CROSS JOIN (SELECT '${SOURCE_DIR}/tests/data/events/cpu.jsonl' AS p UNION ALL SELECT '${SOURCE_DIR}/tests/data/events/job1') AS d
 CROSS JOIN pp_refresh(d.p);
-- A refresh writes under a savepoint, which SQLite refuses inside a statement that writes: it
-- says so, and nothing is written (the row goes in by a statement of its own).
-- error: pp_refresh: cannot run inside a statement that writes (INSERT ... SELECT
CREATE TEMP TABLE refreshes(events_added, samples_added, windows_folded, history_kept, http_requests,
                             events_waiting, waiting_end_time);
INSERT INTO refreshes SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: cannot run inside a statement that writes (INSERT ... SELECT
CREATE TEMP TABLE refreshed AS SELECT * FROM pp_refresh(NULL);
-- error: pp_refresh: cannot run inside a statement that writes (INSERT ... SELECT
CREATE TEMP TABLE arrivals(path TEXT);
CREATE TEMP TRIGGER refresh_on_arrival AFTER INSERT ON arrivals BEGIN SELECT * FROM pp_refresh(new.path); END;
INSERT INTO arrivals SELECT path FROM dirs;
-- error: pp_overlaps: argument 'after_ms' is not a number: 'soon'
SELECT * FROM pp_overlaps('GPU-0', 'soon');
-- error: pp_overlap_means: argument 'uuid' is NULL
SELECT * FROM pp_overlap_means(NULL);
-- error: pp_fractions: argument 'timing_shift' must be -1, 0 or 1
SELECT * FROM pp_fractions('GPU-0', 2);
-- error: pp_fractions: argument 'timing_shift' is a BLOB; it needs a number
SELECT * FROM pp_fractions('GPU-0', x'79');
-- error: pp_estimates: argument 'grouping' must be 'layer' or 'layer_type', got 'gpu'
SELECT * FROM pp_estimates('gpu');
-- error: pp_estimates: missing required argument 'grouping'
SELECT * FROM pp_estimates WHERE layer = 'a' OR grouping > 'a';
-- error: prom_series: missing required argument 'match'
SELECT * FROM prom_series WHERE metric IN ('a', 'b');
-- error: prom_range: missing required argument 'start'
SELECT * FROM prom_range('up', d.name, 1, 1) CROSS JOIN dirs AS d;
-- error: prom_label_values: argument 'label' is NULL
SELECT * FROM prom_label_values(NULL);
-- error: prom_samples: argument 'selector' is NULL
SELECT * FROM prom_samples(NULL, 1, 2);
-- error: pp_estimates: argument 'grouping' must be 'layer' or 'layer_type', got '1'
SELECT * FROM pp_estimates(1);
-- One argument too many is taken by the hidden column 'database' (the views pass their
-- database's id there): said as what it is, not as a call from an ATTACHed database's view.
-- error: pp_overlaps: argument 'database' ('3') is not a database's id (pp_meta's database_id, which the views pass); a direct call takes no such argument (too many arguments?)
SELECT count(*) FROM pp_overlaps('GPU-0', 1, 2, 3);
-- error: pp_fractions: argument 'database' ('3') is not a database's id (pp_meta's database_id, which the views pass); a direct call takes no such argument (too many arguments?)
SELECT * FROM pp_fractions('GPU-0', 0, 3);
-- error: pp_estimates: argument 'database' ('1') is not a database's id (pp_meta's database_id, which the views pass); a direct call takes no such argument (too many arguments?)
SELECT * FROM pp_estimates('layer', 1);
