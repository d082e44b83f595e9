-- Incremental means: pp_mean states, merging them, reading them (docs/reference/mean.md).
-- Every row printed must be 1.
CREATE TABLE textbook(x);
INSERT INTO textbook VALUES (2), (4), (4), (4), (5), (5), (7), (9), (NULL);

-- The readers of one state. NULL x is skipped; stddev is the sample one.
SELECT pp_mean_value(pp_mean(x)) = 5.0 FROM textbook;
SELECT pp_mean_count(pp_mean(x)) = 8 FROM textbook;
SELECT abs(pp_mean_stddev(pp_mean(x)) - sqrt(32.0 / 7)) < 1e-15 FROM textbook;
SELECT pp_mean_min(pp_mean(x)) = 2.0 AND pp_mean_max(pp_mean(x)) = 9.0 FROM textbook;
SELECT pp_mean_json(pp_mean(x)) =
       '{"count":8,"weight":8.0,"mean":5.0,"stddev":2.138089935299395,"min":2.0,"max":9.0,"m2":32.0}'
  FROM textbook;
SELECT typeof(pp_mean_count(pp_mean(x))) = 'integer' FROM textbook;
-- Text that is a number counts as the number.
SELECT pp_mean_value(pp_mean(column1)) = 2.5 FROM (VALUES ('2'), (' 3 '));

-- The stored form: a 60-byte BLOB, magic "pm", version 1, flags (both extrema known), count.
SELECT typeof(pp_mean(x)) = 'blob' AND length(pp_mean(x)) = 60 FROM textbook;
SELECT hex(substr(pp_mean(x), 1, 12)) = '706D01030800000000000000' FROM textbook;

-- No rows, or only NULLs: the empty state is NULL, like avg(); readers pass NULL through.
SELECT pp_mean(x) IS NULL FROM textbook WHERE x IS NULL;
SELECT pp_mean(x) IS NULL FROM textbook WHERE 0;
SELECT pp_mean_value(NULL) IS NULL AND pp_mean_count(NULL) IS NULL AND pp_mean_stddev(NULL) IS NULL
       AND pp_mean_min(NULL) IS NULL AND pp_mean_max(NULL) IS NULL AND pp_mean_json(NULL) IS NULL;
-- One value: a mean, but no sample stddev.
SELECT pp_mean_value(pp_mean(7)) = 7 AND pp_mean_stddev(pp_mean(7)) IS NULL;

-- Weighted: NULL or zero weight skips the row; weights are frequency weights, so weight k
-- equals the value repeated k times (mean, stddev), while count is the rows folded in.
CREATE TABLE weighted(x, w);
INSERT INTO weighted VALUES (1.5, 3), (-2.0, 1), (7.25, 4), (0.0, 2), (100, NULL), (200, 0), (NULL, 5);
CREATE TABLE repeated AS
  WITH RECURSIVE r(x, w) AS (SELECT x, w FROM weighted WHERE w > 0 AND x IS NOT NULL
                             UNION ALL SELECT x, w - 1 FROM r WHERE w > 1)
  SELECT x FROM r;
SELECT count(*) = 10 FROM repeated;
SELECT abs(pp_mean_value((SELECT pp_mean(x, w) FROM weighted)) - (SELECT avg(x) FROM repeated)) < 1e-15;
SELECT abs(pp_mean_stddev((SELECT pp_mean(x, w) FROM weighted))
           - pp_mean_stddev((SELECT pp_mean(x) FROM repeated))) < 1e-14;
SELECT pp_mean_count(pp_mean(x, w)) = 4 FROM weighted;
SELECT json_extract(pp_mean_json(pp_mean(x, w)), '$.weight') = 10.0 FROM weighted;
-- Less than one unit of weight in all: a mean, no sample stddev.
SELECT pp_mean_value(pp_mean(column1, column2)) = 2.0 AND pp_mean_stddev(pp_mean(column1, column2)) IS NULL
  FROM (VALUES (1.0, 0.25), (2.5, 0.5));

-- Merging the states of any partition gives the state of the whole, also with values offset by
-- 1e6 (where a naive sum of squares cancels catastrophically). The partition is random.
CREATE TABLE noisy AS
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
  SELECT i, 1e6 + (random() % 1000000) / 1e6 AS x, 0.01 + abs(random() % 1000) / 100.0 AS w,
         abs(random()) % 37 AS part
    FROM n;
CREATE TABLE whole AS SELECT pp_mean(x) AS s, pp_mean(x, w) AS sw FROM noisy;
CREATE TABLE parts AS SELECT part, pp_mean(x) AS s, pp_mean(x, w) AS sw FROM noisy GROUP BY part;
CREATE TABLE merged AS SELECT pp_mean_merge(s) AS s, pp_mean_merge(sw) AS sw FROM parts;
SELECT abs(pp_mean_value(m.s) / pp_mean_value(w.s) - 1) < 1e-12 FROM merged m, whole w;
SELECT abs(pp_mean_stddev(m.s) / pp_mean_stddev(w.s) - 1) < 1e-12 FROM merged m, whole w;
SELECT abs(pp_mean_value(m.sw) / pp_mean_value(w.sw) - 1) < 1e-12 FROM merged m, whole w;
SELECT abs(pp_mean_stddev(m.sw) / pp_mean_stddev(w.sw) - 1) < 1e-12 FROM merged m, whole w;
SELECT pp_mean_count(m.s) = 5000 AND pp_mean_min(m.s) = pp_mean_min(w.s) AND pp_mean_max(m.s) = pp_mean_max(w.s)
  FROM merged m, whole w;
-- ... and agrees with a two-pass computation (which is exact enough here to be a reference).
SELECT abs(pp_mean_stddev(s) / (SELECT sqrt(sum((x - m) * (x - m)) / (count(*) - 1))
                                  FROM noisy, (SELECT avg(x) AS m FROM noisy)) - 1) < 1e-12
  FROM merged;
-- A different partition, merged pairwise with the scalar form, in another order.
CREATE TABLE halves AS SELECT i % 2 AS half, pp_mean(x) AS s FROM noisy GROUP BY half;
SELECT abs(pp_mean_stddev(pp_mean_merge((SELECT s FROM halves WHERE half = 1), (SELECT s FROM halves WHERE half = 0)))
           / pp_mean_stddev((SELECT s FROM whole)) - 1) < 1e-12;

-- The scalar merge: NULL on either side gives the other.
SELECT pp_mean_merge(s, NULL) = s AND pp_mean_merge(NULL, s) = s FROM whole;
SELECT pp_mean_merge(NULL, NULL) IS NULL;
-- The aggregate merge skips NULL states and is NULL when there is none.
SELECT pp_mean_merge(s) = (SELECT s FROM whole) FROM (SELECT s FROM whole UNION ALL SELECT NULL);
SELECT pp_mean_merge(s) IS NULL FROM (SELECT NULL AS s);

-- Stored and updated in place without history (the paper's running row per layer): fold each
-- batch into the stored state; the result is the state of all batches.
CREATE TABLE layer_stats(layer TEXT PRIMARY KEY, state BLOB);
INSERT INTO layer_stats VALUES ('fc1', NULL);
UPDATE layer_stats SET state = pp_mean_merge(state, (SELECT pp_mean(x) FROM noisy WHERE i <= 1000));
UPDATE layer_stats SET state = pp_mean_merge(state, (SELECT pp_mean(x) FROM noisy WHERE i > 1000 AND i <= 4000));
UPDATE layer_stats SET state = pp_mean_merge(state, (SELECT pp_mean(x) FROM noisy WHERE i > 4000));
SELECT pp_mean_count(state) = 5000 AND abs(pp_mean_stddev(state) / pp_mean_stddev((SELECT s FROM whole)) - 1) < 1e-12
  FROM layer_stats;

-- Window function, default frame: a running state (xValue does not consume it).
CREATE TABLE series(t INTEGER PRIMARY KEY, x);
INSERT INTO series VALUES (1, 5), (2, 1), (3, 9), (4, 3), (5, 3), (6, NULL), (7, 8);
SELECT group_concat(pp_mean_count(s), ',') = '1,2,3,4,5,5,6'
  FROM (SELECT pp_mean(x) OVER (ORDER BY t) AS s FROM series ORDER BY t);
SELECT count(*) = 7 FROM (SELECT t, pp_mean(x) OVER (ORDER BY t) AS s,
                                 avg(x) OVER (ORDER BY t) AS a FROM series)
 WHERE abs(pp_mean_value(s) - a) < 1e-15;
-- Sliding frame (xInverse): the mean and stddev follow the frame exactly ...
SELECT count(*) = 7 FROM (SELECT pp_mean(x) OVER w AS s, avg(x) OVER w AS a, count(x) OVER w AS n FROM series
                          WINDOW w AS (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW))
 WHERE abs(pp_mean_value(s) - a) < 1e-12 AND pp_mean_count(s) = n;
-- ... while min/max stay exact only until a value that may have been the extremum leaves the
-- frame; after that they are NULL (unknown), never wrong.
SELECT group_concat(ifnull(pp_mean_min(s), 'unknown'), ',') = '5.0,1.0,1.0,1.0,unknown,unknown,unknown'
  FROM (SELECT pp_mean(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM series ORDER BY t);
SELECT group_concat(ifnull(pp_mean_max(s), 'unknown'), ',') = '5.0,5.0,9.0,9.0,9.0,unknown,unknown'
  FROM (SELECT pp_mean(x) OVER (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM series ORDER BY t);
SELECT count(*) = 0 FROM (SELECT pp_mean(x) OVER w AS s, min(x) OVER w AS lo, max(x) OVER w AS hi FROM series
                          WINDOW w AS (ORDER BY t ROWS BETWEEN 2 PRECEDING AND CURRENT ROW))
 WHERE pp_mean_min(s) <> lo OR pp_mean_max(s) <> hi;
-- A frame that becomes empty starts afresh, extrema known again.
SELECT group_concat(ifnull(pp_mean_min(s), 'null'), ',') = '5.0,1.0,9.0,3.0,3.0,null,8.0'
  FROM (SELECT pp_mean(x) OVER (ORDER BY t ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS s FROM series ORDER BY t);
-- Weighted window with a sliding frame, against the same sums done by hand.
CREATE TABLE wseries(t INTEGER PRIMARY KEY, x, w);
INSERT INTO wseries SELECT i, x, w FROM noisy WHERE i <= 300;
SELECT count(*) = 300 FROM (SELECT pp_mean(x, w) OVER win AS s, sum(x * w) OVER win / sum(w) OVER win AS m
                              FROM wseries WINDOW win AS (ORDER BY t ROWS BETWEEN 9 PRECEDING AND CURRENT ROW))
 WHERE abs(pp_mean_value(s) / m - 1) < 1e-12;
-- pp_mean_merge as a sliding window over stored states: un-merging is exact too.
CREATE TABLE chunk_states AS SELECT i / 100 AS chunk, pp_mean(x) AS s FROM noisy GROUP BY chunk;
SELECT count(*) = 51 FROM (
  SELECT c.chunk, pp_mean_merge(c.s) OVER (ORDER BY c.chunk ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS moving,
         (SELECT pp_mean(x) FROM noisy WHERE i / 100 BETWEEN c.chunk - 3 AND c.chunk) AS direct
    FROM chunk_states c)
 WHERE pp_mean_count(moving) = pp_mean_count(direct)
   AND abs(pp_mean_value(moving) / pp_mean_value(direct) - 1) < 1e-13
   AND abs(pp_mean_stddev(moving) / pp_mean_stddev(direct) - 1) < 1e-12;
-- A sliding frame that drops a weight far larger than the rest keeps the rest's weight sum, and
-- so its means, exact: 1.5 is not lost in the rounding of 1e16 + 1.5.
WITH v(t, x, w) AS (VALUES (1, 100.0, 1e16), (2, 1.0, 1.5), (3, 3.0, 1.5), (4, 5.0, 1.5), (5, 7.0, 1.5)),
     f AS (SELECT t, pp_mean(x, w) OVER (ORDER BY t ROWS 1 PRECEDING) AS s FROM v)
SELECT count(*) = 3 AND max(abs(pp_mean_json(s) ->> '$.weight' - 3)) = 0
   AND max(abs(pp_mean_value(s) - (2 * t - 4))) < 1e-13
  FROM f WHERE t >= 3;
-- Weights whose sum rounds (0.3 + 0.7): the low part of the sum enters each mean, so dropping
-- a value of 1e16 leaves the mean of the rest (1, not 1.49), also from merged states.
WITH v(i, x, w) AS (VALUES (1, 1e16, 0.3), (2, 1, 0.7), (3, 1, 0.1)),
     f AS (SELECT i, pp_mean(x, w) OVER (ORDER BY i ROWS 1 PRECEDING) AS s,
                  pp_mean_merge(pp_mean(x, w)) OVER (ORDER BY i ROWS 1 PRECEDING) AS m FROM v GROUP BY i)
SELECT abs(pp_mean_value(s) - 1) < 1e-12 AND abs(pp_mean_value(m) - 1) < 1e-12 FROM f WHERE i = 3;
-- A sliding frame that drops a value far larger than the rest keeps the mean of the rest.
WITH v(i, x) AS (VALUES (1, 1e20), (2, 1), (3, 1)),
     w AS (SELECT i, pp_mean(x) OVER (ORDER BY i ROWS 1 PRECEDING) AS s FROM v)
SELECT abs(pp_mean_value(s) - 1) < 1e-12 AND pp_mean_value(s) >= pp_mean_min(s) FROM w WHERE i = 3;
-- Its stddev is not known (the frame's M2 is a difference of terms of 1e40): NULL, never the
-- 0.866 that the subtraction gave for 1, 2, 3; the state is version 2, its M2 null in the JSON.
WITH v(i, x) AS (VALUES (1, 1e20), (2, 1), (3, 2), (4, 3)),
     w AS (SELECT i, pp_mean(x) OVER (ORDER BY i ROWS 2 PRECEDING) AS s FROM v)
SELECT pp_mean_stddev(s) IS NULL AND abs(pp_mean_value(s) - 2) < 1e-12 AND hex(substr(s, 3, 2)) = '0205'
   AND pp_mean_json(s) ->> '$.m2' IS NULL AND pp_mean_stddev(pp_mean_merge(s)) IS NULL
  FROM w WHERE i = 4;
-- Small weights keep values far apart within range: with weights of 1e-300, +-1e154 have a
-- sum of squared deviations of 1e-300 x 1e-300 / 2e-300 x (2e154)^2 = 2e8, though (2e154)^2
-- alone passes the largest double; a sliding frame takes such rows out again.
SELECT abs(json_extract(pp_mean_json(pp_mean(x, 1e-300)), '$.m2') / 2e8 - 1) < 1e-12
  FROM (SELECT 1e154 AS x UNION ALL SELECT -1e154);
-- (Rows 2-4, -1e154, -1e154 and 0 about their mean -2e154 / 3: m2 = 1e-300 x 6e308 / 9.)
SELECT count(*) = 4 AND max(abs(m2 / 1e8 - expected)) < 1e-9
  FROM (SELECT json_extract(pp_mean_json(pp_mean(x, 1e-300) OVER (ORDER BY i ROWS 2 PRECEDING)), '$.m2') AS m2,
               expected
          FROM (SELECT 1 AS i, 1e154 AS x, 0.0 AS expected UNION ALL SELECT 2, -1e154, 2.0
                UNION ALL SELECT 3, -1e154, 24.0 / 9 UNION ALL SELECT 4, 0, 6.0 / 9));
