-- Secrets: passwords in URLs and the contents of secret files never appear in errors, and a
-- secret file must be one line of a regular file (tests/unit/secrets_test.cpp has more cases).
SELECT pp_config('retries', 0);
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL such as http://prometheus:9090; in this one '/', '?' or '#' comes before the last '@'
SELECT pp_config('prometheus_url', 'http://reader:s3c/ret@prom.example:9090');
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL such as http://prometheus:9090; this one has no host
SELECT pp_config('prometheus_url', 'http://');
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL such as http://prometheus:9090; this one holds a space or control character
SELECT pp_config('prometheus_url', 'http://prom.example:9090/ x');
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL such as http://prometheus:9090; this one holds a space or control character
SELECT pp_config('prometheus_url', 'http://prom.example:9090' || char(10) || 'Host: other');
-- One Authorization header a request: a password in the URL beside a bearer token is refused.
-- error: prom_label_values: prometheus_url holds a password and setting 'bearer_token_file' is set too
SELECT pp_config('prometheus_url', 'http://reader:pw@127.0.0.1:1');
SELECT pp_config('bearer_token_file', '${TOKEN_FILE}');
SELECT * FROM prom_label_values('job');
-- error: prom_label_values: setting 'bearer_token_file' names '/', which is not a regular file
SELECT pp_config('prometheus_url', 'http://127.0.0.1:1');
SELECT pp_config('bearer_token_file', '/');
SELECT * FROM prom_label_values('job');
-- error: prom_label_values: setting 'bearer_token_file' names '${SOURCE_DIR}/tests/sql/secrets_errors.sql', which holds more than one line
SELECT pp_config('prometheus_url', 'http://127.0.0.1:1');
SELECT pp_config('bearer_token_file', '${SOURCE_DIR}/tests/sql/secrets_errors.sql');
SELECT * FROM prom_label_values('job');
