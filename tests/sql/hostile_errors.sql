SELECT pp_config('retries', 1);
-- error: prom_range: HTTP 502 from ${hostile_url}/html/api/v1/query_range is not a Prometheus API response: <html><body><h1>502 Bad Gateway
SELECT pp_config('prometheus_url', '${hostile_url}/html');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- A redirect is not followed (it would take the credentials along), and says where it leads.
-- error: prom_range: HTTP 302 from ${hostile_url}/redirect/api/v1/query_range redirects to http://reader:***@127.0.0.1:1/elsewhere; redirects are not followed (they would take the credentials along): set prometheus_url to where it leads
SELECT pp_config('prometheus_url', '${hostile_url}/redirect');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- A proxy whose error page prints the request's Authorization header: the credentials this
-- request sent are not shown (the bearer token; the basic auth password, as sent and encoded).
-- error: prom_range: HTTP 401 from ${hostile_url}/echo-auth/api/v1/query_range is not a Prometheus API response: invalid credentials: Bearer ***
SELECT pp_config('prometheus_url', '${hostile_url}/echo-auth');
SELECT pp_config('bearer_token_file', '${TOKEN_FILE}');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: /echo-auth/api/v1/query is not a Prometheus API response: invalid credentials: Basic ***
SELECT pp_config('prometheus_url', replace('${hostile_url}', 'http://', 'http://reader:s3cret-in-url@') || '/echo-auth');
SELECT * FROM prom_samples('up', 1700000000, 1700000010);
-- (A password with %-escapes is hidden as libcurl sends it, decoded.)
-- error: /echo-auth/api/v1/query is not a Prometheus API response: invalid credentials: Basic ***
SELECT pp_config('prometheus_url', replace('${hostile_url}', 'http://', 'http://reader:p%40ss%2Fword@') || '/echo-auth');
SELECT * FROM prom_samples('up', 1700000000, 1700000010);
-- Also where the page answers 200, and for a credential in the headers setting.
-- error: /echo-auth-200/api/v1/query_range is not a Prometheus API response: you sent: Bearer ***; ***
SELECT pp_config('prometheus_url', '${hostile_url}/echo-auth-200');
SELECT pp_config('bearer_token_file', '${TOKEN_FILE}');
SELECT pp_config('headers', '{"X-Api-Key": "k3y-in-headers"}');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- Headers whose names say they carry a credential (a JWT, a session, a signature) are hidden
-- too; a tenant's name is not.
-- error: /echo-headers/api/v1/query_range is not a Prometheus API response: rejected X-Client-Credential: ***; X-JWT-Assertion: ***; X-Request-Signature: ***; X-Scope-OrgID: team-a; X-Session-Id: ***
SELECT pp_config('prometheus_url', '${hostile_url}/echo-headers');
SELECT pp_config('headers', '{"X-Scope-OrgID": "team-a", "X-JWT-Assertion": "eyJhbGciOiJIUzI1NiJ9.e30.c2ln", "X-Session-Id": "sess-4f1c9a", "X-Request-Signature": "sig-77aa10", "X-Client-Credential": "cred-5e5e5e"}');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- A request over the server's sample limit (Prometheus' --query.max-samples) says which setting
-- makes each request smaller.
-- error: prom_samples: Prometheus error execution (HTTP 422): query processing would load too many samples into memory; each request asks for up to samples_chunk_seconds (3600) of every series the selector matches: lower that setting, or narrow the selector
SELECT pp_config('prometheus_url', '${hostile_url}/execution');
SELECT * FROM prom_samples('up', 1700000000, 1700000010);
-- error: prom_range: Prometheus error execution (HTTP 422): query processing would load too many samples into memory; each request asks for up to max_points_per_series (11000) points of every series the query gives: lower that setting, use a larger step, or narrow the query
SELECT pp_config('prometheus_url', '${hostile_url}/execution');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: prom_range: cannot reach ${hostile_url}/slow/api/v1/query_range: timed out after 500 ms
SELECT pp_config('prometheus_url', '${hostile_url}/slow'); SELECT pp_config('timeout_ms', 500);
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: exceeds max_response_bytes (1000000 bytes)
SELECT pp_config('prometheus_url', '${hostile_url}/huge'); SELECT pp_config('max_response_bytes', 1000000);
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: prom_range: HTTP 200 from ${hostile_url}/truncated/api/v1/query_range is not a Prometheus API response
SELECT pp_config('prometheus_url', '${hostile_url}/truncated');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: prom_samples: expected a matrix result from ${hostile_url}/vector/api/v1/query, got 'vector'
SELECT pp_config('prometheus_url', '${hostile_url}/vector');
SELECT * FROM prom_samples('up', 1700000000, 1700000010);
-- error: prom_range: sample value 'twelve' is not a number
SELECT pp_config('prometheus_url', '${hostile_url}/notnumber');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
-- error: prom_range: cannot read the file named by setting 'bearer_token_file': '/nonexistent/token'
SELECT pp_config('prometheus_url', '${hostile_url}/auth'); SELECT pp_config('bearer_token_file', '/nonexistent/token');
SELECT * FROM prom_range('up', 1700000000, 1700000010);
