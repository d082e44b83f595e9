-- The prom_* tables give the same rows under every plan SQLite may choose (query_plans.sql: the
-- file and attribution tables). Each check compares with the constant-argument form, copied
-- into a TEMP table first; `metric` push-down must never change the rows, and a metric IN list
-- is one request. Fixture: tests/fixtures/dcgm_data.py (six metrics, three GPUs, 1 s samples).
CREATE TEMP TABLE samples AS
  SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59);
CREATE TEMP TABLE series AS SELECT * FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600);
SELECT count(*) = 6 * 3 * 60 FROM samples;
SELECT count(*) = 6 * 3 FROM series;
CREATE TEMP TABLE spans(name TEXT, start INTEGER, "end" INTEGER);
INSERT INTO spans VALUES ('first', ${T0}, ${T0} + 9), ('second', ${T0} + 10, ${T0} + 29);
CREATE TEMP TABLE requests(n INTEGER);
INSERT INTO requests VALUES (0);

-- A WHERE condition on an argument beside the call's own: no request for the condition's range,
-- and the rows where both hold (numbers compared by value).
UPDATE requests SET n = json_extract(pp_http_stats(), '$.requests');
SELECT count(*) = 0 FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) WHERE start = 5;
SELECT json_extract(pp_http_stats(), '$.requests') = n FROM requests;
SELECT count(*) = 6 * 3 * 60 FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) WHERE start = ${T0}.0;
SELECT count(*) = 0 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE match = 'up';
-- The other value from a typed column (TEXT here, as .import makes them): SQLite compares it
-- with the argument under the column's affinity, so every join order gives the same rows.
CREATE TEMP TABLE text_starts(s TEXT);
INSERT INTO text_starts VALUES ('${T0}');
SELECT count(*) = 6 * 3 * 60 FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) AS p CROSS JOIN text_starts AS t
 WHERE p.start = t.s;
SELECT count(*) = 6 * 3 * 60 FROM text_starts AS t CROSS JOIN prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) AS p
 WHERE p.start = t.s;
SELECT count(p.ts) = 6 * 3 * 60 FROM text_starts AS t LEFT JOIN prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) AS p
  ON p.start = t.s;

-- metric IN (ten values): one request with __name__=~"a|b|...", values escaped exactly.
UPDATE requests SET n = json_extract(pp_http_stats(), '$.requests');
SELECT (SELECT group_concat(metric || labels || ts || value) FROM (
          SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
           WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'a.b', 'a|b', '.*', 'x"y', 'x\y', 'x{y}',
                            'DCGM_FI_DEV_GPU_UTIL', 'dcgm_fi_dev_fb_used') ORDER BY metric, labels, ts))
     = (SELECT group_concat(metric || labels || ts || value) FROM (SELECT * FROM samples
         WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED') ORDER BY metric, labels, ts));
SELECT json_extract(pp_http_stats(), '$.requests') = (SELECT n FROM requests) + 1;
UPDATE requests SET n = json_extract(pp_http_stats(), '$.requests');
SELECT count(*) = 6 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600)
 WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'up', 'DCGM_FI_DEV_GPU_UTIL', NULL, '', x'00', 42);
SELECT json_extract(pp_http_stats(), '$.requests') = (SELECT n FROM requests) + 1;
SELECT count(*) = 0 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric IN (NULL, '');
SELECT count(*) = 3 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', ${T0}, ${T0} + 600) WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x');
SELECT count(*) = 0 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', ${T0}, ${T0} + 600) WHERE metric IN ('x');
-- Text with a NUL byte, which no metric name holds, matches nothing pushed down as when SQLite
-- filters (+metric).
SELECT count(*) = 3 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', ${T0}, ${T0} + 600)
 WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x' || char(0));
SELECT count(*) = 0 FROM prom_series('DCGM_FI_DEV_GPU_UTIL', ${T0}, ${T0} + 600) WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' || char(0);
SELECT (SELECT count(*) FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
         WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x' || char(0)))
     = (SELECT count(*) FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
         WHERE +metric IN ('DCGM_FI_DEV_GPU_UTIL', 'x' || char(0)));
SELECT count(*) = 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600)
 WHERE metric IN (SELECT DISTINCT metric FROM series WHERE metric LIKE '%GPU_UTIL');
-- Collations other than BINARY are not pushed down: NOCASE matches as SQLite says.
SELECT count(*) = 3 * 60 FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
 WHERE metric = 'dcgm_fi_dev_gpu_util' COLLATE NOCASE;
SELECT count(*) = 6 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600)
 WHERE metric COLLATE NOCASE IN ('dcgm_fi_dev_gpu_util', 'DCGM_FI_DEV_FB_USED');
SELECT count(*) = 0 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric = 'dcgm_fi_dev_gpu_util';
-- REGEXP is pushed down only where Go's regexp reads it as RE2 does; the rest is filtered here.
SELECT count(*) = 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric REGEXP 'GPU_UTI\C';
SELECT count(*) = 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric REGEXP 'GPU_U(TI){1}L$';
SELECT count(*) = 3 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric REGEXP '\pL_UTIL';
SELECT count(*) = 6 FROM prom_series('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 600) WHERE metric REGEXP '(?i)gpu_util|fb_USED';
SELECT count(*) = 3 * 60 FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) WHERE metric REGEXP '^DCGM_FI_DEV_G';

-- One call in both branches of a MULTI-INDEX OR (the subquery keeps SQLite from seeing one
-- selector), one branch pushing a metric down and the other not, or another: a sample or series
-- both keep is one row, kept once, and none is lost.
CREATE TEMP TABLE selectors(selector TEXT);
INSERT INTO selectors VALUES ('{__name__=~"DCGM_FI_.*"}');
SELECT (SELECT group_concat(metric || labels || ts || value) FROM (SELECT * FROM prom_samples
         WHERE (selector = '{__name__=~"DCGM_FI_.*"}' AND start = ${T0} AND "end" = ${T0} + 59 AND metric = 'DCGM_FI_DEV_GPU_UTIL')
            OR (selector = (SELECT selector FROM selectors) AND start = ${T0} AND "end" = ${T0} + 59 AND value > 0.5)
         ORDER BY metric, labels, ts))
     = (SELECT group_concat(metric || labels || ts || value) FROM (SELECT * FROM samples
         WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' OR value > 0.5 ORDER BY metric, labels, ts));
SELECT (SELECT count(*) FROM prom_samples
         WHERE (selector = '{__name__=~"DCGM_FI_.*"}' AND start = ${T0} AND "end" = ${T0} + 59 AND metric = 'DCGM_FI_DEV_GPU_UTIL')
            OR (selector = (SELECT selector FROM selectors) AND start = ${T0} AND "end" = ${T0} + 59
                AND metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED')))
     = (SELECT count(*) FROM samples WHERE metric IN ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED'));
SELECT (SELECT group_concat(uuid || metric || ts_ms || value) FROM (SELECT * FROM pp_gpu_samples
         WHERE (selector = '{__name__=~"DCGM_FI_.*"}' AND start = ${T0} AND "end" = ${T0} + 59 AND metric = 'DCGM_FI_DEV_GPU_UTIL')
            OR (selector = (SELECT selector FROM selectors) AND start = ${T0} AND "end" = ${T0} + 59 AND value > 0.5)
         ORDER BY metric, uuid, ts_ms))
     = (SELECT group_concat(json_extract(labels, '$.UUID') || metric || CAST(round(ts * 1000) AS INTEGER) || value)
          FROM (SELECT * FROM samples WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' OR value > 0.5
                 ORDER BY metric, json_extract(labels, '$.UUID'), ts));
SELECT (SELECT group_concat(metric || labels) FROM (SELECT * FROM prom_series
         WHERE (match = '{__name__=~"DCGM_FI_.*"}' AND start = ${T0} AND "end" = ${T0} + 600 AND metric = 'DCGM_FI_DEV_GPU_UTIL')
            OR (match = (SELECT selector FROM selectors) AND start = ${T0} AND "end" = ${T0} + 600 AND labels LIKE '%"gpu":"0"%')
         ORDER BY metric, labels))
     = (SELECT group_concat(metric || labels) FROM (SELECT * FROM series
         WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' OR labels LIKE '%"gpu":"0"%' ORDER BY metric, labels));
-- OR, NOT, BETWEEN, LIMIT/OFFSET, ORDER BY, DISTINCT, GROUP BY over prom_samples.
SELECT (SELECT group_concat(labels || ts || value) FROM (SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
         WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' OR value > 0.99 ORDER BY metric, labels, ts))
     = (SELECT group_concat(labels || ts || value) FROM (SELECT * FROM samples
         WHERE metric = 'DCGM_FI_DEV_GPU_UTIL' OR value > 0.99 ORDER BY metric, labels, ts));
SELECT count(*) = (SELECT count(*) FROM samples WHERE NOT metric LIKE '%PROF%' AND ts BETWEEN ${T0} + 5 AND ${T0} + 7)
  FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) WHERE NOT metric LIKE '%PROF%' AND ts BETWEEN ${T0} + 5 AND ${T0} + 7;
SELECT count(*) = (SELECT count(*) FROM samples WHERE metric NOT IN ('DCGM_FI_DEV_GPU_UTIL'))
  FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) WHERE metric NOT IN ('DCGM_FI_DEV_GPU_UTIL');
SELECT (SELECT group_concat(ts || value) FROM (SELECT ts, value FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59)
                                                ORDER BY metric, labels, ts LIMIT 5 OFFSET 100))
     = (SELECT group_concat(ts || value) FROM (SELECT ts, value FROM samples ORDER BY metric, labels, ts LIMIT 5 OFFSET 100));
SELECT (SELECT group_concat(metric || ':' || n) FROM (SELECT metric, count(DISTINCT labels) AS n
          FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) GROUP BY metric ORDER BY metric))
     = (SELECT group_concat(metric || ':' || n) FROM (SELECT metric, count(DISTINCT labels) AS n FROM samples
                                                     GROUP BY metric ORDER BY metric));
SELECT count(*) = 5 FROM (SELECT * FROM prom_samples('{__name__=~"DCGM_FI_.*"}', ${T0}, ${T0} + 59) LIMIT 5);
-- Named columns, IS, and start/end as INTEGER, REAL and TEXT (RFC3339).
SELECT count(*) = 3 * 60 FROM prom_samples WHERE selector = 'DCGM_FI_DEV_FB_USED' AND start = ${T0} AND "end" IS ${T0} + 59;
SELECT count(*) = 3 * 60 FROM prom_samples('DCGM_FI_DEV_FB_USED', ${T0} + 0.0, '2023-11-14T22:14:19Z');
SELECT count(*) = 3 * 60 FROM prom_samples('DCGM_FI_DEV_FB_USED', CAST(${T0} AS TEXT), ${T0} + 59.5);

-- Arguments from another table, a CTE, a correlated subquery, a parameter.
SELECT group_concat(name || ':' || n) = 'first:30,second:60' FROM (
  SELECT s.name, count(*) AS n FROM spans AS s, prom_samples('DCGM_FI_DEV_FB_USED', s.start, s."end") GROUP BY 1 ORDER BY 1);
SELECT group_concat(name || ':' || n) = 'first:30,second:60' FROM (
  SELECT s.name, count(*) AS n FROM prom_samples('DCGM_FI_DEV_FB_USED', s.start, s."end"), spans AS s GROUP BY 1 ORDER BY 1);
SELECT group_concat(name || ':' || n) = 'first:3,second:3' FROM (
  SELECT s.name, count(*) AS n FROM spans AS s, prom_series('DCGM_FI_DEV_FB_USED', s.start, s."end") GROUP BY 1 ORDER BY 1);
SELECT count(*) = 6 FROM spans AS s, prom_series AS p
 WHERE p."match" = 'DCGM_FI_DEV_FB_USED' AND p.start = s.start AND p."end" = s."end";
SELECT group_concat(name || ':' || n) = 'first:30,second:60' FROM (
  SELECT s.name, count(*) AS n FROM prom_range('DCGM_FI_DEV_FB_USED', s.start, s."end", 1), spans AS s GROUP BY 1 ORDER BY 1);
SELECT group_concat(name || ':' || n) = 'first:6,second:6' FROM (
  SELECT s.name, count(*) AS n FROM prom_range('DCGM_FI_DEV_FB_USED', s.start, s."end", s."end" - s.start) AS r, spans AS s
   GROUP BY 1 ORDER BY 1);
WITH labels(name) AS (VALUES ('Hostname'), ('UUID'))
SELECT group_concat(name || ':' || n) = 'Hostname:2,UUID:3' FROM (
  SELECT l.name, count(*) AS n FROM labels AS l, prom_label_values(l.name, '{__name__=~"DCGM_FI_.*"}') GROUP BY 1 ORDER BY 1);
SELECT count(*) = 2 FROM prom_label_values('Hostname', (SELECT '{__name__="' || metric || '"}' FROM series LIMIT 1));
SELECT group_concat(name || ':' || n) = 'first:10,second:20' FROM (
  SELECT name, (SELECT count(*) FROM prom_samples('DCGM_FI_DEV_FB_USED{UUID="${UUID0}"}', spans.start, spans."end")) AS n
    FROM spans ORDER BY name);
.parameter set @start ${T0}
SELECT count(*) = 3 * 10 FROM prom_samples('DCGM_FI_DEV_FB_USED', @start, @start + 9);
-- A TEMP view over a join, and a TEMP trigger.
CREATE TEMP VIEW span_series AS SELECT s.name, p.* FROM spans AS s, prom_series('{__name__=~"DCGM_FI_.*"}', s.start, s."end") AS p;
SELECT count(*) = 2 * 3 FROM span_series WHERE metric IN ('DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_GPU_UTIL') AND name = 'first';
CREATE TEMP TABLE span_counts(name TEXT, samples INTEGER, hosts INTEGER);
CREATE TEMP TRIGGER count_span AFTER INSERT ON spans BEGIN
  INSERT INTO span_counts SELECT NEW.name,
    (SELECT count(*) FROM prom_samples('DCGM_FI_DEV_FB_USED', NEW.start, NEW."end")),
    (SELECT count(*) FROM prom_label_values('Hostname', 'DCGM_FI_DEV_FB_USED'));
END;
INSERT INTO spans VALUES ('third', ${T0} + 100, ${T0} + 104);
SELECT samples = 15 AND hosts = 2 FROM span_counts WHERE name = 'third';

-- prom_range and prom_label_values under OR, IN, NOT, LIMIT, DISTINCT, GROUP BY, a parameter.
CREATE TEMP TABLE ranged AS SELECT * FROM prom_range('{__name__=~"DCGM_FI_DEV_.*"}', ${T0}, ${T0} + 59, 10);
SELECT count(*) = 2 * 3 * 6 FROM ranged;
SELECT (SELECT group_concat(labels || ts || value) FROM (SELECT * FROM prom_range('{__name__=~"DCGM_FI_DEV_.*"}', ${T0}, ${T0} + 59, 10)
         WHERE (metric = 'DCGM_FI_DEV_FB_USED' OR value < 10) AND NOT ts IN (${T0}, ${T0} + 50) ORDER BY metric, labels, ts))
     = (SELECT group_concat(labels || ts || value) FROM (SELECT * FROM ranged
         WHERE (metric = 'DCGM_FI_DEV_FB_USED' OR value < 10) AND NOT ts IN (${T0}, ${T0} + 50) ORDER BY metric, labels, ts));
SELECT (SELECT group_concat(metric || n) FROM (SELECT metric, count(DISTINCT labels) AS n
          FROM prom_range('{__name__=~"DCGM_FI_DEV_.*"}', ${T0}, ${T0} + 59, 10) GROUP BY 1 ORDER BY 1))
     = (SELECT group_concat(metric || n) FROM (SELECT metric, count(DISTINCT labels) AS n FROM ranged GROUP BY 1 ORDER BY 1));
SELECT count(*) = 4 FROM (SELECT * FROM prom_range('DCGM_FI_DEV_FB_USED', @start, @start + 59, 10) LIMIT 4 OFFSET 2);
SELECT count(*) = 3 * 6 FROM prom_range WHERE query = 'DCGM_FI_DEV_FB_USED' AND start = @start AND "end" = @start + 59 AND step IS 10;
SELECT count(*) = 2 FROM prom_label_values('Hostname') WHERE value = 'node-a' OR value = 'node-b';
SELECT count(*) = 1 FROM prom_label_values('Hostname') WHERE value IN ('node-a', 'x') AND NOT value LIKE 'x%';
SELECT group_concat(value) = 'node-b' FROM (SELECT DISTINCT value FROM prom_label_values('Hostname') ORDER BY 1 LIMIT 1 OFFSET 1);
SELECT count(*) = 3 FROM prom_label_values WHERE label IS 'UUID' AND "match" = 'DCGM_FI_DEV_FB_USED';
