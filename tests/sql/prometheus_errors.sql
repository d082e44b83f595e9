-- Every failure is an SQL error that names the function and what was wrong.
-- error: prom_range: missing required argument 'start'
SELECT * FROM prom_range('up');
-- error: prom_range: argument 'query' is NULL
SELECT * FROM prom_range(NULL, 1700000000, 1700000010);
-- error: prom_samples: argument 'end' is NULL
SELECT * FROM prom_samples('up', 1700000000, NULL);
-- error: prom_samples: argument 'end' (1700000000) is before 'start' (1700000010)
SELECT * FROM prom_samples('up', 1700000010, 1700000000);
-- error: prom_range: argument 'start' is not a time: 'yesterday'
SELECT * FROM prom_range('up', 'yesterday', 1700000000);
-- error: prom_range: argument 'step' is not a duration: '5 minutes'
SELECT * FROM prom_range('up', 1700000000, 1700000010, '5 minutes');
-- error: prom_range: argument 'step' must be at least 1ms
SELECT * FROM prom_range('up', 1700000000, 1700000010, 0);
-- Prometheus evaluates a range at whole ms: a step between them is refused, not rounded.
-- error: prom_range: argument 'step' must be a whole number of milliseconds, got '0.0015'
SELECT * FROM prom_range('vector(1)', 1700000000, 1700000001, 0.0015);
-- error: prom_range: argument 'step' must be a whole number of milliseconds, got '0.0004'
SELECT * FROM prom_range('vector(1)', 1700000000, 1700000001, '0.0004');
SELECT count(*) = 11 FROM prom_range('vector(1)', 1700000000, 1700000001, 0.1);
SELECT count(*) = 1001 FROM prom_range('vector(1)', 1700000000, 1700000001, '0.001');
-- error: prom_range: the range needs 818182 requests
SELECT * FROM prom_range('up', 0, 9000000000, 1);
-- error: prom_samples: the range needs
SELECT * FROM prom_samples('up', 0, 1700000000);
-- A wrong path prefix: the 404 says where the API is served.
-- error: prom_samples: HTTP 404 from ${prometheus_url}/prometheus/api/v1/query is not a Prometheus API response: 404 page not found (no API at that path: prometheus_url is the base to which /api/v1/... is appended; Prometheus serves it at its root or under its --web.route-prefix, Mimir and Cortex under /prometheus, a VictoriaMetrics cluster under /select/<tenant>/prometheus)
SELECT pp_config('prometheus_url', '${prometheus_url}/prometheus');
SELECT count(*) FROM prom_samples('up', 1700000000, 1700000010);
-- error: prom_range: Prometheus error bad_data (HTTP 400): 1:5: parse error: unclosed left parenthesis
SELECT * FROM prom_range('sum(', 1700000000, 1700000010);
-- error: prom_samples: Prometheus error bad_data (HTTP 400)
SELECT * FROM prom_samples('up{job=~"("}', 1700000000, 1700000010);
-- pp_gpu_samples shares prom_samples' cursor, but its errors name the function that was called.
-- error: pp_gpu_samples: missing required argument 'end'
SELECT * FROM pp_gpu_samples('up', 1700000000);
-- error: pp_gpu_samples: argument 'selector' is NULL
SELECT * FROM pp_gpu_samples(NULL, 1700000000, 1700000010);
-- error: pp_gpu_samples: argument 'start' is not a time: 'yesterday'
SELECT * FROM pp_gpu_samples('up', 'yesterday', 1700000000);
-- error: pp_gpu_samples: argument 'end' (1700000000) is before 'start' (1700000010)
SELECT * FROM pp_gpu_samples('up', 1700000010, 1700000000);
-- error: pp_gpu_samples: the range needs
SELECT * FROM pp_gpu_samples('up', 0, 1700000000);
-- error: pp_gpu_samples: Prometheus error bad_data (HTTP 400)
SELECT * FROM pp_gpu_samples('up{job=~"("}', 1700000000, 1700000010);
-- error: pp_gpu_samples: cannot reach http://127.0.0.1:1/api/v1/query: Failed to connect
SELECT pp_config('retries', 0); SELECT pp_config('prometheus_url', 'http://127.0.0.1:1');
SELECT * FROM pp_gpu_samples('up', 1700000000, 1700000010);
-- error: prom_label_values: missing required argument 'label'
SELECT * FROM prom_label_values;
-- error: prom_label_values: argument 'match' is empty
SELECT * FROM prom_label_values('UUID', ' ');
SELECT count(*) >= 0 FROM prom_label_values('UUID', NULL);
-- error: prom_range: cannot reach http://127.0.0.1:1/api/v1/query_range: Failed to connect
SELECT pp_config('retries', 0); SELECT pp_config('prometheus_url', 'http://127.0.0.1:1');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: prom_series: cannot reach http://reader:***@127.0.0.1:1/api/v1/series
SELECT pp_config('retries', 0); SELECT pp_config('prometheus_url', 'http://reader:s3cret@127.0.0.1:1');
SELECT * FROM prom_series('up');
-- error: prom_range: cannot reach http://no-such-host.invalid/api/v1/query_range: Could not resolve host
SELECT pp_config('retries', 0); SELECT pp_config('prometheus_url', 'http://no-such-host.invalid');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- A view stored in the database file cannot make requests; a TEMP view can (prom_range.sql).
-- error: unsafe use of virtual table "prom_range"
CREATE VIEW stored AS SELECT * FROM prom_range('up', 1700000000, 1700000010);
SELECT * FROM stored;
-- error: unsafe use of virtual table "prom_samples"
CREATE TABLE t(x); CREATE TRIGGER tr AFTER INSERT ON t BEGIN
  SELECT count(*) FROM prom_samples('up', 1700000000, 1700000010); END;
INSERT INTO t VALUES (1);
-- error: unsafe use of virtual table "pp_gpu_samples"
CREATE VIEW stored AS SELECT * FROM pp_gpu_samples('up', 1700000000, 1700000010);
SELECT * FROM stored;
-- error: unsafe use of pp_config()
CREATE VIEW settings_view AS SELECT pp_config('prometheus_url', 'http://attacker.invalid');
SELECT * FROM settings_view;

-- error: prom_range: argument 'start' is not a time: 'now - 1h' (use unix seconds, RFC3339 such as 2024-05-01T12:00:00Z, or a time relative to now such as 'now', '-1h' or 'now-15m')
SELECT * FROM prom_range('up', 'now - 1h', 'now', 60);
