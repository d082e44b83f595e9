-- error: pp_config: unknown setting 'prometheus'
SELECT pp_config('prometheus');
-- error: pp_config: setting 'timeout_ms' needs a non-negative integer, got 'soon'
SELECT pp_config('timeout_ms', 'soon');
-- error: pp_config: argument 'key' is NULL
SELECT pp_config(NULL);
-- error: pp_config: setting 'prometheus_url' needs an http:// or https:// URL
SELECT pp_config('prometheus_url', 'ftp://x');
-- error: regexp: argument 'pattern' is not a valid regular expression
SELECT 'x' REGEXP '(';
-- error: prom_match: argument 'regex' is not a valid regular expression
SELECT prom_match('[', 'x');
