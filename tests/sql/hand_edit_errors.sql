-- pp_refresh's own reads of the tables a user may edit by hand refuse a value that is not a
-- number (text SQLite kept as text in an INTEGER or REAL column, a BLOB) with an error naming
-- table, column and row: each read as 0 before, and the refresh went on with it.
-- (tests/sql/timing_errors.sql: the reads of pp_fractions and the other timelines.)
SELECT pp_install_views() LIKE 'tables: %';
-- A window length declared in pp_metrics (copied to pp_intervals, and read from there) is
-- checked before the refresh's first step.
-- error: pp_refresh: pp_metrics' window_ms of metric DCGM_FI_DEV_FB_USED is 'abc' (a window length of more than 0 ms and at most 86400000, a day)
UPDATE pp_metrics SET window_ms = 'abc';
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
-- The stretches aligned before, which aligning the next ones goes on from.
-- error: pp_refresh: pp_alignment's timing_ns of GPU ${UUID0} at from_ms 1700000008000 is 'abc' (a whole number of ns)
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
UPDATE pp_alignment SET timing_ns = 'abc';
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl', 1);
-- error: pp_refresh: pp_alignment's drift_ppm of GPU ${UUID0} at from_ms 1700000008000 is a BLOB of 1 byte (a number of ppm)
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
UPDATE pp_alignment SET drift_ppm = x'00';
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl', 1);
-- error: pp_refresh: pp_alignment's drift_ppm of GPU ${UUID0} at from_ms 1700000008000 is Inf (a drift of -5000 to 5000 ppm)
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
UPDATE pp_alignment SET drift_ppm = 1e999;
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl', 1);
-- A block whose row claims more events than a block can hold is reported as damaged when it is
-- read, not met first as room reserved for them (an allocation failure naming nothing).
-- error: pp_refresh: block 1 of pp_events_blocks is damaged (it holds
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
UPDATE pp_events_blocks SET events = 4611686018427387904 WHERE id = 1;
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl', 1);
-- A layer's type is read where the report tables are written: a layer left without one names
-- its row, where SQLite's NOT NULL of report_layer_types named none.
-- error: pp_refresh: pp_layers' layer_type of layer l1 (forward) of job jobA is NULL (the name of the layer's type, as its events give it)
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part1.jsonl', 0);
UPDATE pp_layers SET layer_type = NULL WHERE layer = 'l1';
SELECT count(*) FROM pp_refresh('${SOURCE_DIR}/tests/data/attribution/part2.jsonl', 1);
