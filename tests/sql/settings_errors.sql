-- Numbers and settings: every setting, duration, time and flag has a checked range and a
-- clear error naming the function, the argument or setting, and what was wrong.
-- error: pp_config: setting 'timeout_ms' needs an integer from 1 to 86400000, got '0' (0 would mean no time limit at all)
SELECT pp_config('timeout_ms', 0);
-- error: pp_config: setting 'max_points_per_series' needs an integer from 1 to 1000000, got '9223372036854775807'
SELECT pp_config('max_points_per_series', 9223372036854775807);
-- error: pp_config: setting 'samples_chunk_seconds' needs an integer from 1 to 31536000, got '9223372036854775'
SELECT pp_config('samples_chunk_seconds', 9223372036854775);
-- error: pp_config: setting 'max_requests_per_query' needs an integer from 1 to 10000000, got '0'
SELECT pp_config('max_requests_per_query', 0);
-- error: pp_config: setting 'dedup_rel_tol' needs a number from 0 to 1000, got 'nan'
SELECT pp_config('dedup_rel_tol', 'nan');
-- error: pp_config: setting 'dedup_rel_tol' needs a number from 0 to 1000, got '1e999'
SELECT pp_config('dedup_rel_tol', '1e999');
-- error: pp_config: setting 'headers' header 'Bad Name' needs a plain name (letters, digits and !#$%&'*+-.^_`|~) and a string value without line breaks or control characters
SELECT pp_config('headers', '{"X-Scope-OrgID":"team-a","Bad Name":"x"}');
-- error: pp_config: setting 'headers' header 'X(' needs a plain name
SELECT pp_config('headers', '{"X(":"y"}');
-- A name with a line break is shown with it written out, not as a broken line.
-- error: pp_config: setting 'headers' header '\x0d\x0aX-Evil' needs a plain name
SELECT pp_config('headers', json_object(char(13, 10) || 'X-Evil', 'a'));
-- Headers that frame the request are the request's own: a Content-Length of 3 cut the form,
-- whose rest the server read as the next request on the connection.
-- error: pp_config: setting 'headers' header 'Content-Length' is set by the request itself (it frames the request or says how it is sent), so it cannot be given here
SELECT pp_config('headers', '{"X-Scope-OrgID":"team-a","Content-Length":"3"}');
-- error: pp_config: setting 'headers' header 'transfer-encoding' is set by the request itself
SELECT pp_config('headers', '{"transfer-encoding":"chunked"}');
-- error: pp_config: setting 'headers' header 'HOST' is set by the request itself (it frames the request or says how it is sent), so it cannot be given here; give the host in prometheus_url
SELECT pp_config('headers', '{"HOST":"prometheus.internal"}');
-- error: pp_config: setting 'headers' header 'Accept-Encoding' is set by the request itself (it frames the request or says how it is sent), so it cannot be given here; the setting http_compression chooses it
SELECT pp_config('headers', '{"Accept-Encoding":"identity"}');
-- A header named twice would send one of its values unseen; names ignore case, and the error names
-- the header, never a value (it may be a secret).
-- error: pp_config: setting 'headers' names header 'a' more than once (header names ignore case); give each header once
SELECT pp_config('headers', '{"a":"b","a":"c"}');
-- error: pp_config: setting 'headers' names header 'x-scope-orgid' more than once (header names ignore case); give each header once
SELECT pp_config('headers', '{"X-Scope-OrgID":"team-a","x-scope-orgid":"team-b"}');
SELECT pp_config('headers') = '{}';
-- error: pp_config: setting 'http_compression' needs auto, on/off, true/false, yes/no or 1/0, got 'gzip'
SELECT pp_config('http_compression', 'gzip');
-- error: pp_config: setting 'tls_verify' needs on/off, true/false, yes/no or 1/0, got 'auto'
SELECT pp_config('tls_verify', 'auto');
-- Basic auth sends user:password: a colon in the user name would move its tail into the password.
-- error: pp_config: setting 'basic_auth_user' must not hold ':'
SELECT pp_config('basic_auth_user', 'bo:b');
-- error: prom_range: argument 'step' must be at most 9223372036 seconds (about 292 years, the most Prometheus can hold), got '9223372036854775807ms'
SELECT * FROM prom_range('up', 0, 10, '9223372036854775807ms');
-- error: prom_range: argument 'step' must be at most 9223372036 seconds (about 292 years, the most Prometheus can hold), got '100000000000000'
SELECT * FROM prom_range('up', 0, 10, 1e14);
-- error: prom_samples: argument 'start' is not a usable unix time: 1e+300 (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT * FROM prom_samples('up', 1e300, 1e301);
-- error: prom_samples: argument 'start' is not a usable unix time: Inf (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT * FROM prom_samples('up', 9e999, 1);
-- Times relative to now are held to the same range (far past it, now plus the offset would
-- overflow, and the range's request count with it).
-- error: prom_samples: argument 'start' is not a usable unix time: 'now-9000000000000000000ms' (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT count(*) FROM prom_samples('up', 'now-9000000000000000000ms', 'now+9000000000000000000ms');
-- error: prom_range: argument 'end' is not a usable unix time: 'now+9223372036854775807ms' (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT count(*) FROM prom_range('up', 'now', 'now+9223372036854775807ms');
-- Past 2262, Prometheus' engine wraps a time round and answers about another: refused, with a
-- hint where the number reads as milliseconds (the usual mistake), and a step as long is too.
-- error: prom_range: argument 'start' is not a usable unix time: 1700000000000 (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds; in milliseconds? divide by 1000)
SELECT * FROM prom_range('vector(1)', 1700000000000, 1700000010000, 60);
-- error: prom_samples: argument 'end' is not a usable unix time: '9223372037' (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT * FROM prom_samples('up', 0, '9223372037');
-- error: prom_series: argument 'start' is not a usable unix time: '2263-01-01T00:00:00Z' (Prometheus holds unix seconds between -9223372036 and 9223372036, the years 1677 to 2262, in 64-bit nanoseconds)
SELECT * FROM prom_series('up', '2263-01-01T00:00:00Z');
-- error: prom_range: argument 'step' must be at most 9223372036 seconds (about 292 years, the most Prometheus can hold), got '9223372037'
SELECT * FROM prom_range('up', 0, 10, 9223372037);
-- Blank queries, selectors and label names are refused before a server answers them obscurely.
-- error: prom_label_values: argument 'label' is empty
SELECT * FROM prom_label_values('');
-- A name that would name another API path (its 404 would blame prometheus_url), and bytes.
-- error: prom_label_values: argument 'label' ('a/b') is not a label name: label names hold no '/' and are not dots alone
SELECT * FROM prom_label_values('a/b');
-- error: prom_label_values: argument 'label' ('..') is not a label name: label names hold no '/' and are not dots alone
SELECT * FROM prom_label_values('..');
-- error: prom_samples: argument 'selector' is a BLOB; it needs text
SELECT * FROM prom_samples(x'7570', 0, 1);
-- error: prom_range: argument 'query' is a BLOB; it needs text
SELECT * FROM prom_range(CAST('up' AS BLOB), 0, 1);
-- error: prom_samples: argument 'selector' is empty
SELECT * FROM prom_samples('  ', 0, 1);
-- error: prom_range: argument 'query' is empty
SELECT * FROM prom_range('', 0, 10, 1);
-- error: prom_series: argument 'match' is empty
SELECT * FROM prom_series('', 0, 1);
-- error: pp_overlaps: argument 'through_ms' (1) is before after_ms (5): the range (after_ms, through_ms] holds nothing
SELECT pp_install_views();
SELECT * FROM pp_overlaps('GPU-x', 5, 1);
-- A table of the extension's read before any exists says how to make it.
-- error: pp_overlaps: no such table: main.pp_intervals (this database has no attribution tables yet: SELECT pp_install_views() creates them, and pp_refresh(...) fills them)
SELECT * FROM pp_overlaps('GPU-x');
-- error: prom_range: argument 'start' is not a time: '2023-02-30T00:00:00Z'
SELECT * FROM prom_range('up', '2023-02-30T00:00:00Z', '2023-03-01T00:00:00Z', '1h');
-- error: prom_range: argument 'start' is not a time: '2023-02-01T00:00:00+25:00'
SELECT * FROM prom_range('up', '2023-02-01T00:00:00+25:00', '2023-03-01T00:00:00Z', '1h');
-- error: prom_range: argument 'end' is not a time: '2023-02-29T00:00:00Z'
SELECT * FROM prom_range('up', '2023-02-01T00:00:00Z', '2023-02-29T00:00:00Z', '1h');
-- error: pp_refresh: argument 'final' needs 0 or 1 (FALSE or TRUE), got 'yes'
SELECT * FROM pp_refresh(NULL, 'yes');
-- error: pp_refresh: argument 'final' needs 0 or 1 (FALSE or TRUE), got '2'
SELECT * FROM pp_refresh(NULL, 2);

-- A NUL byte would cut a path short: every text argument that holds one is refused.
-- error: pp_refresh: argument 'path' holds a NUL byte (at byte 4)
SELECT * FROM pp_refresh('runs' || char(0) || '/job.jsonl');
-- error: layer_events: argument 'path' holds a NUL byte (at byte 4)
SELECT * FROM layer_events('runs' || char(0) || '/job.jsonl');
-- error: layer_jobs: argument 'path' holds a NUL byte (at byte 4)
SELECT * FROM layer_jobs(CAST('runs' || char(0) || '/job.jsonl' AS BLOB));
-- A setting is not bytes: a BLOB would pass for whatever it spells (x'3530' for '50'). (A path
-- may be a BLOB of its bytes: file names need not be UTF-8.)
-- error: pp_config: argument 'value' is a BLOB; it needs text or a number
SELECT pp_config('timeout_ms', x'3530');
-- error: pp_config: argument 'key' is a BLOB; it needs text or a number
SELECT pp_config(CAST('timeout_ms' AS BLOB), 1);
-- error: prom_samples: argument 'start' is a BLOB; it needs unix seconds, RFC3339 text or a time relative to now
SELECT * FROM prom_samples('up', x'01', 2);
-- error: pp_config: argument 'value' holds a NUL byte (at byte 4)
SELECT pp_config('bearer_token_file', '/tmp' || char(0) || '/token');
-- error: pp_config: argument 'value' holds a NUL byte (at byte 4)
SELECT pp_config('tls_ca_file', '/etc' || char(0) || '/ca.crt');
-- error: pp_config: setting 'dedup_rel_tol' needs a number from 0 to 1000, got '1000.0000000000002'
SELECT pp_config('dedup_rel_tol', 1000.0000000000002);
