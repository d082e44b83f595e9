-- prom_range evaluates PromQL at start + k*step; points repeat the last sample (lookback).
-- pp_test_long has one sample every 10 s from LONG_START, value = sample index.

-- 50,000 points per series come back whole, each point once, through 11,000-point chunks.
CREATE TEMP VIEW long AS
  SELECT * FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 49999, 1);
SELECT count(*) = 50000 AND count(DISTINCT ts) = 50000 FROM long;
SELECT min(ts) = ${LONG_START} AND max(ts) = ${LONG_START} + 49999 FROM long;
SELECT count(*) = 0 FROM long WHERE value <> CAST((ts - ${LONG_START}) / 10 AS INTEGER);

-- Smaller chunks, same answer.
SELECT pp_config('max_points_per_series', 777) = '777';
SELECT count(*) = 50000 AND count(DISTINCT ts) = 50000 AND sum(value) = (SELECT sum(value) FROM long)
  FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 49999, 1);
-- `@ end()` and `@ start()` name the call's ends whatever its requests: every point of a range
-- in 777-point chunks reads the sample at its end, or at its start, as one request would.
SELECT count(*) = 5000 AND min(value) = 499 AND max(value) = 499
  FROM prom_range('pp_test_long @ end()', ${LONG_START}, ${LONG_START} + 4999, 1);
SELECT count(*) = 5000 AND min(value) = 0 AND max(value) = 0
  FROM prom_range('max_over_time(pp_test_long[5s] @ start())', ${LONG_START}, ${LONG_START} + 4999, 1);
SELECT pp_config('max_points_per_series', 11000) = '11000';

-- Steps as Prometheus durations; a step that does not divide the range stops before end.
SELECT count(*) = 101 FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 9000, '1m30s');
SELECT count(*) = 4 AND max(ts) = ${LONG_START} + 30 FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 39, '10s');
SELECT count(*) = 11 FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 10, 1.0);
-- Fractional steps keep milliseconds.
SELECT group_concat(printf('%.3f', ts)) = printf('%d.000,%d.250,%d.500', ${LONG_START}, ${LONG_START}, ${LONG_START})
  FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 0.5, '250ms');

-- Without a step: about 1,000 points.
SELECT count(*) BETWEEN 990 AND 1001 FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 50000);
-- start = end: one point.
SELECT count(*) = 1 FROM prom_range('pp_test_long', ${LONG_START} + 100, ${LONG_START} + 100);

-- Expressions: aggregation drops __name__ (metric is NULL), keeps the grouping labels.
SELECT count(*) = 2 FROM prom_range('sum by (Hostname) (DCGM_FI_DEV_FB_USED)', ${T0}, ${T0});
SELECT metric IS NULL AND labels = '{"Hostname":"node-a"}' AND value = 1000 + 1100
  FROM prom_range('sum by (Hostname) (DCGM_FI_DEV_FB_USED)', ${T0}, ${T0})
 WHERE json_extract(labels, '$.Hostname') = 'node-a';
-- Hidden argument columns show the arguments.
SELECT query = 'pp_test_long' AND step = '10s'
  FROM prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 10, '10s') LIMIT 1;
-- Identical requests in one statement are sent once: a correlated join stays cheap and exact.
SELECT count(*) = 3 * 5 FROM generate_series(1, 3) AS g,
       prom_range('pp_test_long', ${LONG_START}, ${LONG_START} + 40, '10s') AS r;

-- Times relative to now, as Grafana and PromQL users type them: '-1h' to 'now' is the last
-- hour (vector(1) has a point at every step whatever the data), and 'now-1h' the same.
SELECT count(*) = 5 AND max(ts) - min(ts) = 3600 AND abs(max(ts) - unixepoch('now')) < 60
  FROM prom_range('vector(1)', '-1h', 'now', '15m');
SELECT count(*) = 5 AND abs(min(ts) - (unixepoch('now') - 3600)) < 60
  FROM prom_range('vector(1)', 'now-1h', 'NOW', 900);
-- Called again for each row of an outer table, one cursor reads the clock once: every call
-- asks for the same range, whatever the plan.
SELECT count(DISTINCT ts) = 3 AND count(*) = 9
  FROM (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) AS o
  CROSS JOIN prom_range('vector(1)', '-2m', 'now', '1m') AS r;
-- So does a correlated subquery, which opens a cursor for each outer row: each row's own query
-- (and some work between the rows) still sees the statement's one 'now'.
SELECT count(DISTINCT t) = 1 AND count(*) = 3 FROM (
  SELECT (SELECT count(*) FROM generate_series(1, 1000000 + o.k)) AS work,
         (SELECT max(ts) FROM prom_range('vector(' || o.k || ')', 'now-2s', 'now', 1)) AS t
    FROM (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) AS o);
