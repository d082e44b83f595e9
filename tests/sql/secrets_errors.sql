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
-- Credentials longer than servers take are refused when set, their length said, never what they hold.
-- error: pp_config: setting 'basic_auth_user' is 1000000 bytes long, more than 4096 (4 KiB: basic auth sends it with the password in one header line, which servers refuse past 8 KiB); not shown, since it may be a credential
SELECT pp_config('basic_auth_user', printf('%.*c', 1000000, 'u'));
-- error: pp_config: setting 'headers' header 'Authorization' with its value is 9022 bytes long, more than 8192 (8 KiB, the longest header line nginx and Apache accept by default); not shown, since it may be a credential
SELECT pp_config('headers', json_object('Authorization', 'Bearer ' || printf('%.*c', 9000, 't')));
-- error: pp_config: setting 'prometheus_url' is 5026 bytes long, more than 4096 (4 KiB: a base URL with its user and password); not shown, since it may be a credential
SELECT pp_config('prometheus_url', 'http://reader:' || printf('%.*c', 5000, 'p') || '@127.0.0.1:1');
