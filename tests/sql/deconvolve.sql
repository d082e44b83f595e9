-- pp_deconvolve on small systems whose solutions are computed by hand (docs/reference/deconvolve.md).
-- Every row must be 1.

-- Two layers, three windows, consistent data: A = 0.8, B = 0.2 exactly.
CREATE TABLE exact(sample, layer, weight, value);
INSERT INTO exact VALUES (1, 'A', 0.5, 0.5), (1, 'B', 0.5, 0.5),
                         (2, 'A', 0.25, 0.35), (2, 'B', 0.75, 0.35),
                         (3, 'A', 1.0, 0.8);
CREATE TABLE exact_result AS SELECT pp_deconvolve(sample, layer, weight, value) AS d FROM exact;
SELECT abs(json_extract(d, '$.A.estimate') - 0.8) < 1e-12 FROM exact_result;
SELECT abs(json_extract(d, '$.B.estimate') - 0.2) < 1e-12 FROM exact_result;
SELECT json_extract(d, '$.A.n') = 3 AND json_extract(d, '$.B.n') = 2 FROM exact_result;
SELECT json_extract(d, '$._system.samples') = 3 AND json_extract(d, '$._system.unknowns') = 2
   AND json_extract(d, '$._system.dof') = 1 FROM exact_result;
SELECT json_extract(d, '$._system.residual_rms') < 1e-15 FROM exact_result;
-- A is pinned down (3 windows, no residual); B appears in 2 windows only: not identified.
SELECT json_extract(d, '$.A.identified') = 1 AND json_extract(d, '$.B.identified') = 0 FROM exact_result;
-- The keys: _system first, then the layers sorted by name.
SELECT group_concat(key, ',') = '_system,A,B' FROM exact_result, json_each(d);
-- The same rows in another order, or the same windows named by text, give the same estimates.
SELECT abs(json_extract(pp_deconvolve(sample, layer, weight, value), '$.A.estimate') - 0.8) < 1e-12
  FROM (SELECT * FROM exact ORDER BY weight DESC);
SELECT abs(json_extract(pp_deconvolve('window ' || sample, layer, weight, value), '$.B.estimate') - 0.2) < 1e-12
  FROM exact;
-- A layer reported in pieces (two events in one window) adds up.
SELECT abs(json_extract(pp_deconvolve(sample, layer, weight, value), '$.A.estimate') - 0.8) < 1e-12
  FROM (SELECT sample, layer, weight / 2 AS weight, value FROM exact
        UNION ALL SELECT sample, layer, weight / 2, value FROM exact);

-- Least squares with a residual: A and idle over four windows.
--   A^T A = [[1.5, 0.5], [0.5, 1.5]], A^T y = [1.41, 0.61]  ->  A = 0.905, idle = 0.105,
--   residuals -0.005, -0.005, -0.005, 0.015, RSS = 0.0003, dof 2, sigma^2 = 0.00015;
--   classical stderr sqrt(0.00015 * 0.75) = 0.0106; HC3 (leverages 0.75, 0.25, 0.75, 0.25)
--   gives 1/60 = 0.01667, the larger, so stderr = 1/60 and the 90% half-width is
--   t(0.95, 2) / 60 = 2.919986 / 60 = 0.048666.
CREATE TABLE noisy(sample, layer, weight, value);
INSERT INTO noisy VALUES ('s1', 'A', 1.0, 0.9),
                         ('s2', 'A', 0.5, 0.5), ('s2', 'idle', 0.5, 0.5),
                         ('s3', 'idle', 1.0, 0.1),
                         ('s4', 'A', 0.5, 0.52), ('s4', 'idle', 0.5, 0.52);
CREATE TABLE noisy_result AS SELECT pp_deconvolve(sample, layer, weight, value, 0, 1) AS d FROM noisy;
SELECT abs(json_extract(d, '$.A.estimate') - 0.905) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$.idle.estimate') - 0.105) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$.A.stderr') - 1 / 60.0) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$.idle.stderr') - 1 / 60.0) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$._system.sigma') - sqrt(0.00015)) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$._system.residual_rms') - sqrt(0.0003 / 4)) < 1e-12 FROM noisy_result;
SELECT abs(json_extract(d, '$._system.t90') - 2.919986) < 1e-6 FROM noisy_result;
SELECT abs(json_extract(d, '$.A.lower90') - (0.905 - 2.919986 / 60)) < 1e-6
   AND abs(json_extract(d, '$.A.upper90') - (0.905 + 2.919986 / 60)) < 1e-6 FROM noisy_result;
SELECT abs(json_extract(d, '$.idle.lower90') - (0.105 - 2.919986 / 60)) < 1e-6 FROM noisy_result;
-- +-0.049 is more than 5% of 0.905: an estimate, but not an identified one.
SELECT json_extract(d, '$.A.identified') = 0 AND json_extract(d, '$.A.at_bound') IS NULL FROM noisy_result;

-- Bounds: unconstrained, A = 1.2 and idle = 0 fit exactly; in [0, 1], A stops at 1 and idle
-- moves to 0.04 (minimizing 0.2^2 + (0.1 - 0.5 idle)^2 + idle^2 with A = 1).
CREATE TABLE bounded(sample, layer, weight, value);
INSERT INTO bounded VALUES (1, 'A', 1.0, 1.2), (2, 'A', 0.5, 0.6), (2, 'idle', 0.5, 0.6), (3, 'idle', 1.0, 0.0);
SELECT abs(json_extract(pp_deconvolve(sample, layer, weight, value), '$.A.estimate') - 1.2) < 1e-12 FROM bounded;
CREATE TABLE bounded_result AS SELECT pp_deconvolve(sample, layer, weight, value, 0, 1) AS d FROM bounded;
SELECT json_extract(d, '$.A.estimate') = 1 AND json_extract(d, '$.A.at_bound') = 'upper'
   AND json_extract(d, '$.A.upper90') = 1 FROM bounded_result;
SELECT abs(json_extract(d, '$.idle.estimate') - 0.04) < 1e-12 AND json_extract(d, '$.idle.at_bound') IS NULL
  FROM bounded_result;
SELECT json_extract(d, '$._system.free') = 1 AND json_extract(d, '$._system.dof') = 2 FROM bounded_result;
-- NULL bounds are no bounds.
SELECT abs(json_extract(pp_deconvolve(sample, layer, weight, value, NULL, NULL), '$.A.estimate') - 1.2) < 1e-12
  FROM bounded;
SELECT json_extract(pp_deconvolve(sample, layer, weight, value, NULL, 1), '$.A.estimate') = 1 FROM bounded;

-- Weights that do not reach 1 leave a remainder, estimated as the unknown '(rest)':
-- here A = 0.9 and the rest 0.1.
SELECT abs(json_extract(pp_deconvolve(sample, 'A', a, a * 0.9 + (1 - a) * 0.1), '$."(rest)".estimate') - 0.1) < 1e-12
  FROM (SELECT 1 AS sample, 0.2 AS a UNION ALL SELECT 2, 0.5 UNION ALL SELECT 3, 0.9);
-- ... and when every window's weights sum to 1 there is no '(rest)'.
SELECT json_extract(d, '$."(rest)"') IS NULL FROM exact_result;

-- A layer that always runs alongside another in a fixed proportion cannot be separated from
-- it: no stderr, the interval is the bounds, not identified (the third layer is fine).
CREATE TABLE fixed(sample, layer, weight, value);
INSERT INTO fixed
  WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20)
  SELECT n, 'A', 0.02 * n, 0.02 * n * 0.9 + 0.01 * n * 0.1 + (1 - 0.03 * n) * 0.5 FROM i
  UNION ALL SELECT n, 'B', 0.01 * n, 0.02 * n * 0.9 + 0.01 * n * 0.1 + (1 - 0.03 * n) * 0.5 FROM i
  UNION ALL SELECT n, 'C', 1 - 0.03 * n, 0.02 * n * 0.9 + 0.01 * n * 0.1 + (1 - 0.03 * n) * 0.5 FROM i;
CREATE TABLE fixed_result AS SELECT pp_deconvolve(sample, layer, weight, value, 0, 1) AS d FROM fixed;
SELECT json_extract(d, '$.A.identified') = 0 AND json_extract(d, '$.B.identified') = 0 FROM fixed_result;
SELECT json_extract(d, '$.A.stderr') IS NULL AND json_extract(d, '$.A.lower90') = 0
   AND json_extract(d, '$.A.upper90') = 1 FROM fixed_result;
-- Their combination is still fitted: 2 A + B = 2 * 0.9 + 0.1.
SELECT abs(2 * json_extract(d, '$.A.estimate') + json_extract(d, '$.B.estimate') - 1.9) < 1e-9 FROM fixed_result;
SELECT json_extract(d, '$.C.identified') = 1 AND abs(json_extract(d, '$.C.estimate') - 0.5) < 1e-9 FROM fixed_result;
-- The design is singular: its condition number is infinite, shown as null.
SELECT json_extract(d, '$._system.condition') IS NULL FROM fixed_result;

-- NULL values: a window whose rows are all NULL is skipped; a NULL on one row of a window
-- whose other rows carry the value keeps that row's weight.
SELECT json_extract(pp_deconvolve(sample, layer, weight, value), '$._system.samples') = 3
  FROM (SELECT * FROM exact UNION ALL SELECT 4, 'A', 0.5, NULL UNION ALL SELECT 4, 'B', 0.5, NULL);
SELECT abs(json_extract(pp_deconvolve(sample, layer, weight, CASE WHEN layer = 'B' THEN NULL ELSE value END),
                        '$.B.estimate') - 0.2) < 1e-12
  FROM exact WHERE sample <> 3;
-- A NULL weight is no weight: the layer is known, but has no data.
SELECT json_extract(d, '$.C.n') = 0 AND json_extract(d, '$.C.estimate') IS NULL AND json_extract(d, '$.C.identified') = 0
  FROM (SELECT pp_deconvolve(sample, layer, weight, value) AS d
          FROM (SELECT * FROM exact UNION ALL SELECT 1, 'C', NULL, 0.5));

-- GROUP BY: one system per group.
SELECT count(*) = 2 AND sum(abs(json_extract(d, '$.A.estimate') - CASE g WHEN 1 THEN 0.8 ELSE 1.6 END) < 1e-12) = 2
  FROM (SELECT g, pp_deconvolve(sample, layer, weight, value * g) AS d
          FROM exact, (SELECT 1 AS g UNION ALL SELECT 2) GROUP BY g);
-- No rows: NULL, like avg().
SELECT pp_deconvolve(sample, layer, weight, value) IS NULL FROM exact WHERE 0;
-- One window: nothing can be identified.
SELECT json_extract(pp_deconvolve(sample, layer, weight, value), '$.A.identified') = 0
   AND json_extract(pp_deconvolve(sample, layer, weight, value), '$.A.stderr') IS NULL FROM exact WHERE sample = 1;

-- Values far below 1 are solved as well as any: the fit squares residuals, and those of values
-- under about 1e-154 would vanish (a zero sigma, intervals of no width). The noisy windows times
-- 1e-200 give the same estimate and stderr, times 1e-200, with or without bounds.
SELECT abs(json_extract(d, '$.A.estimate') / 1e-200 - 0.905) < 1e-12
   AND abs(json_extract(d, '$.A.stderr') / 1e-200 - 1.0 / 60) < 1e-12
   AND abs(json_extract(d, '$._system.sigma') / 1e-200 - sqrt(0.00015)) < 1e-12
   AND abs(json_extract(d, '$.A.upper90') - json_extract(d, '$.A.lower90') - 2 * 2.919985580353723 / 60 * 1e-200) < 1e-212
  FROM (SELECT pp_deconvolve(sample, layer, weight, value * 1e-200) AS d FROM noisy);
SELECT abs(json_extract(d, '$.idle.estimate') / 1e-300 - 0.105) < 1e-12
   AND abs(json_extract(d, '$.idle.stderr') / 1e-300 - 1.0 / 60) < 1e-12
   AND json_extract(d, '$._system.scale') = 1
  FROM (SELECT pp_deconvolve(sample, layer, weight, value * 1e-300, 0, 1) AS d FROM noisy);
-- A REAL with an integral value names the same window as that INTEGER, to the ends of the
-- INTEGERs' range: 2^63 - 1024 and -2^63 as either are one window each (weights 0.5 + 0.5).
SELECT json_extract(pp_deconvolve(column1, 'A', 0.5, 1), '$._system.samples') = 2
  FROM (VALUES (9223372036854774784), (9223372036854774784.0), (-9223372036854775808), (-9223372036854775808.0));
