-- What a real Prometheus never sends, from tests/fixtures/hostile_server.py.
SELECT pp_config('retries', 2) = '2';
-- Retries after 503 complete the request (the server fails twice per query).
SELECT pp_config('prometheus_url', '${hostile_url}/flaky') IS NOT NULL;
SELECT count(*) = 2 FROM prom_range('hostile', 1700000000, 1700000001, 1);
-- Retry-After on 429 is honoured.
SELECT pp_config('prometheus_url', '${hostile_url}/retry-after') IS NOT NULL;
SELECT count(*) = 2 FROM prom_samples('hostile', 1700000000, 1700000001);
-- Warnings are kept for pp_last_warnings().
SELECT pp_config('prometheus_url', '${hostile_url}/warn') IS NOT NULL;
SELECT count(*) = 2 FROM prom_range('hostile', 1700000000, 1700000001, 1);
SELECT pp_last_warnings() = '["prom_range: PromQL info: metric might not be a counter"]';
-- A label set listed twice (a proxy merging replicas without deduplicating): its rows come once
-- per listing, as the answer gave them, with a warning that says so.
SELECT pp_config('prometheus_url', '${hostile_url}/repeated-series') IS NOT NULL;
SELECT count(*) = 3 AND sum(labels = '{"a":"1"}') = 2 FROM prom_samples('hostile', 1700000000, 1700000001);
SELECT json_array_length(pp_last_warnings()) = 1 AND pp_last_warnings() ->> '$[0]' =
       'prom_samples: the answer lists 1 series again that it listed before (the first: hostile{"a":"1"}); a '
       || 'server lists each label set once, so a proxy before it may merge replicas without deduplicating: '
       || 'each listing''s rows are given';
-- Bearer token from a file, basic auth and custom headers are sent.
SELECT pp_config('prometheus_url', '${hostile_url}/auth') IS NOT NULL;
SELECT pp_config('headers', '{"X-Scope-OrgID":"team-a"}') IS NOT NULL;
SELECT pp_config('basic_auth_user', 'reader') IS NOT NULL;
SELECT pp_config('basic_auth_password_file', '${TOKEN_FILE}') IS NOT NULL;
SELECT json_extract(labels, '$.org') = 'team-a' AND json_extract(labels, '$.authorization') = 'Basic ' || 'cmVhZGVyOnMzY3JldC10b2tlbg=='
  FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1;
SELECT pp_config('basic_auth_user', '') = '';
SELECT pp_config('basic_auth_password_file', '') = '';
SELECT pp_config('bearer_token_file', '${TOKEN_FILE}') IS NOT NULL;
SELECT json_extract(labels, '$.authorization') = 'Bearer s3cret-token'
  FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1;
-- Compression: by default not asked of a server on this machine (it costs the server more time
-- than it saves there), asked when on; off never.
SELECT pp_config('http_compression') = 'auto';
SELECT json_extract(labels, '$.encoding') = 'identity' FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1;
SELECT pp_config('http_compression', 'on') = 'on';
SELECT json_extract(labels, '$.encoding') LIKE '%gzip%' FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1;
SELECT pp_config('http_compression', 'false') = 'off';
SELECT json_extract(labels, '$.encoding') = 'identity' FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1;
SELECT pp_config('http_compression', 'auto') = 'auto';
-- A server that compresses unasked is read all the same.
SELECT pp_config('prometheus_url', '${hostile_url}/gzip-unasked') IS NOT NULL;
SELECT count(*) = 2 FROM prom_range('x', 1700000000, 1700000001, 1);
SELECT pp_config('prometheus_url', '${hostile_url}/auth') IS NOT NULL;
-- Secrets never come back through pp_config or pp_settings.
SELECT pp_config('headers') = '{"X-Scope-OrgID":"***"}';
SELECT (SELECT group_concat(value) FROM pp_settings) NOT LIKE '%s3cret%';
-- Two series of one metric that name one GPU (two exporters, or two scrape jobs): every sample
-- comes back, and a warning names both label sets, since pp_samples would mix them.
SELECT pp_config('prometheus_url', '${hostile_url}/two-series') IS NOT NULL;
SELECT count(*) = 4 AND count(DISTINCT value) = 2 AND min(uuid) = 'GPU-a' AND max(uuid) = 'GPU-a'
  FROM pp_gpu_samples('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000001);
SELECT pp_last_warnings() = json_array('pp_gpu_samples: GPU GPU-a has more than one series of DCGM_FI_DEV_GPU_UTIL '
         || 'at the same time, {"Hostname":"node-a","UUID":"GPU-a","container":"a","gpu":"0"} and '
         || '{"Hostname":"node-a","UUID":"GPU-a","container":"b","gpu":"0"}: pp_refresh keeps the first it stores '
         || 'where their times coincide and both where they differ, so its windows and values mix the series; keep '
         || 'one of them (drop the other scrape job or exporter, or relabel)');
-- The same two label sets one after the other (an exporter restarted under a new name): one
-- sample a time, no warning.
SELECT pp_config('prometheus_url', '${hostile_url}/relabelled') IS NOT NULL;
SELECT count(*) = 2 AND count(DISTINCT value) = 2
  FROM pp_gpu_samples('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000001);
SELECT pp_last_warnings() = '[]';
