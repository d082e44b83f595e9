-- Errors of pp_similar and pp_novel, and the frames pp_novel refuses rather than answer wrongly.
CREATE TABLE seq(layer TEXT, i INTEGER, v);
INSERT INTO seq VALUES ('fc1', 1, 100), ('fc1', 2, 103), ('fc1', 3, 106), ('fc1', 4, 109), ('emb', 1, 0.4);
-- error: pp_similar: argument 'rel_tol' must be >= 0
SELECT pp_similar(1, 2, -0.1);
-- error: pp_similar: argument 'abs_tol' must be >= 0
SELECT pp_similar(1, 2, 0.1, -1);
-- error: pp_similar: argument 'rel_tol' is NULL
SELECT pp_similar(1, 2, NULL);
-- error: pp_similar: argument 'rel_tol' must be finite
SELECT pp_similar(1, 2, 9e999);
-- error: pp_similar: argument 'rel_tol' is not a number: 'tight'
SELECT pp_similar(1, 2, 'tight');
-- error: pp_similar: argument 'a' must be a number or a JSON array of numbers
SELECT pp_similar('[1, "a"]', '[1, 2]', 0.1);
-- error: pp_similar: argument 'a' must be a number or a JSON array of numbers
SELECT pp_similar('[[1], [2]]', '[1, 2]', 0.1);
-- error: pp_similar: argument 'a' must be a number or a JSON array of numbers
SELECT pp_similar('{"gpu_util": 1}', 1, 0.1);
-- error: pp_similar: argument 'b' must be a number or a JSON array of numbers
SELECT pp_similar(1, 'fast', 0.1);
-- error: pp_similar: argument 'b' must be a number or a JSON array of numbers
SELECT pp_similar(1, '[1, 2', 0.1);
-- error: pp_similar: argument 'a' must be a number or a JSON array of numbers
SELECT pp_similar(x'01', 1, 0.1);
-- error: pp_novel: argument 'rel_tol' must be >= 0
SELECT pp_novel(v, -0.05) OVER (ORDER BY i) FROM seq;
-- error: pp_novel: argument 'abs_tol' is NULL
SELECT pp_novel(v, 0.05, NULL) OVER (ORDER BY i) FROM seq;
-- error: pp_novel: argument 'v' must be a number or a JSON array of numbers
SELECT pp_novel('[1, true]', 0.05) OVER (ORDER BY i) FROM seq;
-- error: pp_novel: needs the default frame (RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW): this frame drops rows from its start
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: got a second row before the result of the first
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: got a second row before the result of the first
SELECT pp_novel(v, 0.05) OVER (ORDER BY i) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: got a second row before the result of the first
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: got a second row before the result of the first
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: got a second row before the result of the first
SELECT pp_novel(v, 0.05) FROM seq WHERE layer = 'fc1';
-- error: pp_novel: needs the default frame, one row at a time: asked for the result of a row it was not given
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: asked for the result of a row it was not given
SELECT pp_novel(v, 0.05) FILTER (WHERE i <> 2) OVER (PARTITION BY layer ORDER BY i) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: use it as a window function
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: use it as a window function
SELECT pp_novel(v, 0.05) OVER (PARTITION BY layer ORDER BY i RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM seq;
-- error: pp_novel: needs the default frame, one row at a time: use it as a window function
SELECT pp_novel(v, 0.05) FROM seq WHERE layer = 'emb';
