-- Errors of the pp_mean functions: each names the function and the argument.
CREATE TABLE t(x, w);
INSERT INTO t VALUES (1, 1), (2, 2), (3, 0.5);
CREATE TABLE states AS SELECT pp_mean(x) AS s FROM t;
-- error: pp_mean: argument 'w' must be a finite number >= 0
SELECT pp_mean(x, -1) FROM t;
-- error: pp_mean: argument 'w' must be a finite number >= 0
SELECT pp_mean(x, 9e999) FROM t;
-- error: pp_mean: argument 'w' must be a finite number >= 0
SELECT pp_mean(NULL, -0.5);
-- error: pp_mean: argument 'w' is not a number: 'heavy'
SELECT pp_mean(x, 'heavy') FROM t;
-- error: pp_mean: argument 'x' is not a number: 'abc'
SELECT pp_mean('abc');
-- error: pp_mean: argument 'x' must be finite
SELECT pp_mean(-9e999);
-- error: pp_mean: argument 'w' must be a finite number >= 0
SELECT pp_mean(x, w - 1) OVER (ORDER BY x ROWS 1 PRECEDING) FROM t;
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value(x'00');
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value('5.0');
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value(42);
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value(substr(s, 1, 59)) FROM states;
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value(x'706D02' || substr(s, 4)) FROM states;
-- error: pp_mean_value: argument 'state' is not a pp_mean state
SELECT pp_mean_value(zeroblob(60));
-- error: pp_mean_count: argument 'state' is not a pp_mean state
SELECT pp_mean_count(x'706D');
-- error: pp_mean_stddev: argument 'state' is not a pp_mean state
SELECT pp_mean_stddev('x');
-- error: pp_mean_min: argument 'state' is not a pp_mean state
SELECT pp_mean_min(1.5);
-- error: pp_mean_max: argument 'state' is not a pp_mean state
SELECT pp_mean_max(x'');
-- error: pp_mean_json: argument 'state' is not a pp_mean state
SELECT pp_mean_json(randomblob(60));
-- error: pp_mean_merge: argument 'a' is not a pp_mean state
SELECT pp_mean_merge(x'01', NULL);
-- error: pp_mean_merge: argument 'b' is not a pp_mean state
SELECT pp_mean_merge(s, 7) FROM states;
-- error: pp_mean_merge: argument 'state' is not a pp_mean state
SELECT pp_mean_merge(x) FROM t;
-- error: wrong number of arguments to function pp_mean()
SELECT pp_mean(x, w, 1) FROM t;
-- Overflow is an error of the function that overflows, never a state its readers refuse.
-- error: pp_mean: the state would overflow: the sum of weights passes the largest double (1.8e308)
SELECT pp_mean(column1, 1e308) FROM (VALUES (1), (2));
-- error: pp_mean: the state would overflow: the difference between the two means passes the largest double
SELECT pp_mean(x) FROM (SELECT -1e308 AS x UNION ALL SELECT 1e308);
-- error: pp_mean_merge: the state would overflow: more than 2^63 - 1 observations
SELECT pp_mean_merge(s, s) FROM (SELECT X'706D01030000000000000070000000000000F03F000000000000F03F00000000000000000000000000000000000000000000F03F000000000000F03F' AS s);
-- error: pp_mean: the state would overflow: the sum of squared deviations from the mean passes the largest double
SELECT pp_mean(x) FROM (SELECT -1e200 AS x UNION ALL SELECT 1e200);
-- error: pp_mean: the weights in the window frame span too far for a row to be taken out of their sum (more than about 1e25 between the largest and the weight left)
SELECT pp_mean_value(pp_mean(x, w) OVER (ORDER BY i ROWS 2 PRECEDING))
  FROM (SELECT 1 i, 5 x, 1e300 w UNION ALL SELECT 2, 6, 1 UNION ALL SELECT 3, 7, 1e-300 UNION ALL SELECT 4, 8, 0 UNION ALL SELECT 5, 9, 0);
-- error: pp_mean: argument 'x' is beyond the range of a double (1.8e308 at most, none nonzero below 4.9e-324): '1e400'
SELECT pp_mean('1e400');
-- error: pp_mean: the weights in the window frame span too far for a row to be taken out of their sum
WITH v(i, x, w) AS (VALUES (1, 5, 1e300), (2, 5, 1e-10), (3, 5, 1))
SELECT pp_mean_value(pp_mean(x, w) OVER (ORDER BY i ROWS 1 PRECEDING)) FROM v;
-- Three magnitudes in one frame: 1e-40 added to 1e40 + 1 is lost from the weight sum, so once
-- 1e40 and 1 have left, the frame of 2, 3 and 4 (mean 3) would hold a weight of rounding alone
-- and a mean of 8e23. Taking 1e40 out of 1e40 + 1 is where it is refused.
-- error: pp_mean: the weights in the window frame span too far for a row to be taken out of their sum
WITH v(t, x, w) AS (VALUES (1, 5, 1e40), (2, 1, 1), (3, 2, 1e-40), (4, 3, 1e-40), (5, 4, 1e-40))
SELECT t, pp_mean_json(pp_mean(x, w) OVER (ORDER BY t ROWS 2 PRECEDING)) FROM v;
-- The same for merged states in a sliding frame.
-- error: pp_mean_merge: the weights in the window frame span too far for a row to be taken out of their sum
WITH v(t, x, w) AS (VALUES (1, 5, 1e40), (2, 1, 1), (3, 2, 1e-40), (4, 3, 1e-40), (5, 4, 1e-40))
SELECT t, pp_mean_value(pp_mean_merge(pp_mean(x, w)) OVER (ORDER BY t ROWS 2 PRECEDING)) FROM v GROUP BY t;
