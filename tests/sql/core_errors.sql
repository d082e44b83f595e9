-- error: pp_config: unknown setting 'prometheus'
SELECT pp_config('prometheus');
-- error: pp_config: setting 'timeout_ms' needs an integer from 1 to 86400000, got 'soon'
SELECT pp_config('timeout_ms', 'soon');
-- error: pp_config: argument 'key' is NULL
SELECT pp_config(NULL);
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL
SELECT pp_config('prometheus_url', 'ftp://x');
-- error: regexp: argument 'pattern' is not a valid regular expression
SELECT 'x' REGEXP '(';
-- error: prom_match: argument 'regex' is not a valid regular expression
SELECT prom_match('[', 'x');
-- A whole number written as a float (Python binds its floats so) is that integer.
SELECT pp_config('timeout_ms', 5000.0) = '5000';
-- error: pp_config: setting 'timeout_ms' needs an integer from 1 to 86400000, got '5000.5'
SELECT pp_config('timeout_ms', 5000.5);
