-- Errors of pp_deconvolve: each names the function and the argument.
CREATE TABLE t(sample, layer, weight, value);
INSERT INTO t VALUES (1, 'A', 0.5, 0.5), (1, 'B', 0.5, 0.5), (2, 'A', 1, 0.7);
-- error: pp_deconvolve: argument 'value' differs within sample 1: 0.5 and 0.6 (a sample has one value, the same on all its rows)
SELECT pp_deconvolve(sample, layer, weight, CASE layer WHEN 'B' THEN 0.6 ELSE value END) FROM t;
-- error: pp_deconvolve: argument 'value' differs within sample 'w1': 1 and 2
SELECT pp_deconvolve('w1', layer, 0.1, sample) FROM t;
-- error: pp_deconvolve: argument 'weight' must be between 0 and 1
SELECT pp_deconvolve(sample, layer, weight + 0.6, value) FROM t;
-- error: pp_deconvolve: argument 'weight' must be between 0 and 1
SELECT pp_deconvolve(sample, layer, -0.1, value) FROM t;
-- error: pp_deconvolve: argument 'weight' sums to 1.5 over the rows of sample 1
SELECT pp_deconvolve(sample, layer, weight, value) FROM (SELECT * FROM t UNION ALL SELECT 1, 'C', 0.5, 0.5);
-- error: pp_deconvolve: argument 'weight' is not a number: 'half'
SELECT pp_deconvolve(1, 'A', 'half', 0.5);
-- error: pp_deconvolve: argument 'value' is not a number: 'high'
SELECT pp_deconvolve(1, 'A', 0.5, 'high');
-- error: pp_deconvolve: argument 'value' must be finite
SELECT pp_deconvolve(1, 'A', 0.5, 9e999);
-- error: pp_deconvolve: argument 'sample_id' is NULL
SELECT pp_deconvolve(NULL, layer, weight, value) FROM t;
-- error: pp_deconvolve: argument 'layer_key' is NULL
SELECT pp_deconvolve(sample, NULL, weight, value) FROM t;
-- Values so small beside the bounds that no power of two brings them up without the bounds
-- leaving the doubles' range: the squares vanished, and the interval with them (identified).
-- error: pp_deconvolve: argument 'value' is at most 1e-200 in magnitude, too small beside the bounds (-1e+150, 1e+150) for the fit, whose squares of it vanish: scale the values and bounds together, or leave out a bound that is not needed
SELECT pp_deconvolve(1, 'A', 0.5, 1e-200, -1e150, 1e150);
-- A BLOB's bytes read as text named another layer than the one stored as text.
-- error: pp_deconvolve: argument 'layer_key' is a BLOB; it needs text
SELECT pp_deconvolve(1, x'61', 1, 1);
-- error: pp_deconvolve: argument 'layer_key' '_system' is reserved
SELECT pp_deconvolve(sample, '_system', weight, value) FROM t;
-- error: pp_deconvolve: argument 'lower' must be the same on every row of a group
SELECT pp_deconvolve(sample, layer, weight, value, sample, 5) FROM t;
-- error: pp_deconvolve: argument 'upper' must be the same on every row of a group
SELECT pp_deconvolve(sample, layer, weight, value, 0, CASE sample WHEN 1 THEN 1 END) FROM t;
-- error: pp_deconvolve: argument 'upper' must not be below argument 'lower'
SELECT pp_deconvolve(sample, layer, weight, value, 1, 0) FROM t;
-- error: pp_deconvolve: argument 'lower' must be a number (NULL: no lower bound)
SELECT pp_deconvolve(sample, layer, weight, value, 9e999, NULL) FROM t;
-- error: pp_deconvolve: argument 'lower' is not a number: 'zero'
SELECT pp_deconvolve(sample, layer, weight, value, 'zero', 1) FROM t;
-- error: wrong number of arguments to function pp_deconvolve()
SELECT pp_deconvolve(sample, layer, weight) FROM t;
-- error: wrong number of arguments to function pp_deconvolve()
SELECT pp_deconvolve(sample, layer, weight, value, 0) FROM t;
-- error: pp_deconvolve: argument 'value' is 1e+155: beyond 1e150 in magnitude the squares the fit sums overflow; scale the values (and bounds) first
SELECT pp_deconvolve(s, 'a', 1, 1e155, 0, 1e300) FROM (SELECT 1 AS s UNION ALL SELECT 2);
-- error: pp_deconvolve: argument 'upper' is 1.7e+308: beyond 1e150 in magnitude
SELECT pp_deconvolve(1, 'a', 1, 1, 0, 1.7e308);
-- Numbers in errors show every digit needed to read back as the value (not %g's six).
-- error: pp_deconvolve: argument 'value' is 1.23456789e+155: beyond 1e150 in magnitude
SELECT pp_deconvolve(1, 'a', 1, 1.23456789e155, 0, 1);
