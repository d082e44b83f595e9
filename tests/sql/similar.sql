-- Dedup by similarity: pp_similar and the window function pp_novel (docs/reference/mean.md).
-- Every row printed must be 1.

-- Numbers: |a - b| <= max(rel_tol * max(|a|, |b|), abs_tol); the bound itself is similar.
SELECT pp_similar(100, 104, 0.05) = 1;
SELECT pp_similar(100, 106, 0.05) = 0;
SELECT pp_similar(106, 100, 0.05) = 0;  -- symmetric
SELECT pp_similar(3, 4, 0.25) = 1;       -- 1 <= 0.25 * 4 exactly
SELECT pp_similar(2.9, 4, 0.25) = 0;
SELECT pp_similar(-100, -104, 0.05) = 1;
SELECT pp_similar(1, -1, 2) = 1 AND pp_similar(1, -1, 1.5) = 0;  -- opposite signs: |a - b| = 2
-- rel_tol 0 is equality; abs_tol covers values near zero, where a relative bound is too strict.
SELECT pp_similar(0.5, 0.5, 0) = 1 AND pp_similar(0.5, 0.5000001, 0) = 0;
SELECT pp_similar(0, 0.001, 0.05) = 0;
SELECT pp_similar(0, 0.001, 0.05, 0.01) = 1;
SELECT pp_similar(0, 0.02, 0.05, 0.01) = 0;
-- Text holding a number counts as the number; integers and reals mix.
SELECT pp_similar('0.5', 0.5, 0) = 1;
SELECT pp_similar(24870, 24870.0, 0) = 1;
-- Infinity is similar only to itself.
SELECT pp_similar(9e999, 9e999, 0.1) = 1 AND pp_similar(9e999, 1e308, 0.5) = 0;
-- NULL on either side gives NULL.
SELECT pp_similar(NULL, 1, 0.1) IS NULL AND pp_similar(1, NULL, 0.1) IS NULL AND pp_similar(NULL, NULL, 0.1) IS NULL;

-- JSON arrays: every component within tolerance.
SELECT pp_similar('[0.93, 24870, 0.41]', '[0.95, 24900, 0.40]', 0.05) = 1;
SELECT pp_similar('[0.93, 24870, 0.41]', '[0.95, 24900, 0.30]', 0.05) = 0;
SELECT pp_similar(json_array(65, 24870, 0.31, 0.12, 0.55, 0.48), json_array(66, 24870, 0.31, 0.12, 0.56, 0.47), 0.05) = 1;
-- Arrays of different lengths are not similar (0), never an error.
SELECT pp_similar('[1, 2]', '[1, 2, 3]', 0.5) = 0;
SELECT pp_similar('[]', '[]', 0) = 1;
-- A number is a one-element array.
SELECT pp_similar(5, '[5.1]', 0.05) = 1;
-- A null component (a missing metric) is similar only to null.
SELECT pp_similar('[1, null]', '[1, null]', 0) = 1;
SELECT pp_similar('[1, null]', '[1, 2]', 0.5) = 0;
SELECT pp_similar(json_array(1, NULL), '[1, null]', 0) = 1;

-- pp_novel: 1 for a row that differs beyond tolerance from the last KEPT row of its partition.
-- The drift 100 -> 103 -> 106 -> 109 stays within 5% of each previous row, but 106 is 6% away
-- from the kept 100, so it is kept; 109 is then compared with 106.
CREATE TABLE seq(layer TEXT, i INTEGER, v, expected);
INSERT INTO seq VALUES
  ('fc1', 1, 100, 1),  -- first row of the partition
  ('fc1', 2, 103, 0),  -- 3 <= 0.05 * 103
  ('fc1', 3, 106, 1),  -- 6 > 0.05 * 106 from the kept 100
  ('fc1', 4, 109, 0),  -- 3 from the kept 106
  ('fc1', 5, 109, 0),
  ('fc1', 6, NULL, NULL),  -- NULL: not judged, and not kept
  ('fc1', 7, 104, 0),  -- 2 from the kept 106
  ('fc1', 8, 100, 1),  -- 6 from 106
  ('emb', 1, 0.4, 1),  -- another partition starts afresh
  ('emb', 2, 0.41, 0),
  ('emb', 3, 0.5, 1),
  ('emb', 4, 0.4, 1);
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i) IS expected FROM seq;
-- The same with the explicit ROWS form of the default frame.
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) IS expected
  FROM seq;
SELECT group_concat(ifnull(n, '-'), '') = '10100-01'
  FROM (SELECT pp_novel(v, 0.05) OVER (ORDER BY i) AS n FROM seq WHERE layer = 'fc1' ORDER BY i);
-- abs_tol: with 10 absolute everything in fc1 after the first row is similar.
SELECT group_concat(ifnull(n, '-'), '') = '10000-00'
  FROM (SELECT pp_novel(v, 0, 10) OVER (ORDER BY i) AS n FROM seq WHERE layer = 'fc1' ORDER BY i);
-- rel_tol 0: every change is novel, a repeat is not.
SELECT group_concat(ifnull(n, '-'), '') = '11110-11'
  FROM (SELECT pp_novel(v, 0) OVER (ORDER BY i) AS n FROM seq WHERE layer = 'fc1' ORDER BY i);

-- Vectors: a layer row's metrics at once; one component beyond tolerance makes the row novel.
CREATE TABLE rows6(i INTEGER PRIMARY KEY, gpu_util, gpu_mem, dram, fp32, sm_active, sm_occ, expected);
INSERT INTO rows6 VALUES
  (1, 65, 24870, 0.31, 0.12, 0.55, 0.48, 1),
  (2, 66, 24870, 0.31, 0.12, 0.56, 0.47, 0),
  (3, 66, 24880, 0.31, 0.15, 0.56, 0.47, 1),  -- fp32 0.12 -> 0.15
  (4, 65, 24880, 0.31, 0.15, 0.55, 0.48, 0),
  (5, 65, 24880, 0.31, 0.15, 0.55, NULL, 1),  -- a metric went missing
  (6, 65, 24880, 0.31, 0.15, 0.55, NULL, 0);
SELECT pp_novel(json_array(gpu_util, gpu_mem, dram, fp32, sm_active, sm_occ), 0.05) OVER (ORDER BY i) = expected
  FROM rows6;
-- A row of another length is novel.
SELECT group_concat(n, '') = '1101'
  FROM (SELECT pp_novel(column2, 0.05) OVER (ORDER BY column1) AS n
          FROM (VALUES (1, '[1, 2]'), (2, '[1, 2, 3]'), (3, '[1, 2, 3]'), (4, 5)));

-- The dedup the paper describes: keep only novel rows.
CREATE TABLE kept AS
  SELECT layer, i, v FROM (SELECT *, pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i) AS novel FROM seq)
   WHERE novel = 1;
SELECT count(*) = 6 FROM kept;
-- Ties in ORDER BY are broken with a unique column, as pp_novel needs one row at a time.
SELECT count(*) = 12 FROM (SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY v IS NULL, rowid) FROM seq);
