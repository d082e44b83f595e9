-- Core functions: version, settings, regular expressions in PromQL's dialect.
SELECT pp_version() GLOB '[0-9]*.[0-9]*.[0-9]*';
SELECT pp_config('timeout_ms', 1500) = '1500';
SELECT pp_config('timeout_ms') = '1500';
SELECT (SELECT value FROM pp_settings WHERE name = 'timeout_ms') = '1500';
SELECT count(*) >= 13 FROM pp_settings;
-- A password in the URL is never shown back.
SELECT pp_config('prometheus_url', 'http://reader:s3cret@127.0.0.1:1/') NOT LIKE '%s3cret%';
SELECT (SELECT group_concat(value) FROM pp_settings) NOT LIKE '%s3cret%';
-- REGEXP searches anywhere; prom_match is anchored like PromQL's =~.
SELECT 'DCGM_FI_DEV_GPU_UTIL' REGEXP 'GPU_UTIL';
SELECT prom_match('DCGM_FI_PROF_.*', 'DCGM_FI_PROF_SM_ACTIVE');
SELECT prom_match('GPU_UTIL', 'DCGM_FI_DEV_GPU_UTIL') = 0;
SELECT prom_match('nvidia[0-9]+', NULL) IS NULL;
SELECT pp_last_warnings() = '[]';
-- Settings at the ends of their ranges, and flags of pp_refresh as documented.
SELECT pp_config('timeout_ms', 86400000) = '86400000';
SELECT pp_config('dedup_rel_tol', 0) = '0';
SELECT pp_config('dedup_rel_tol', -0.0) = '0';
SELECT pp_config('dedup_rel_tol', '0.000') = '0';
-- A statement reads a setting once (pp_config is marked deterministic, see settings.md): set it
-- in one statement and read it in the next.
SELECT group_concat(pp_config('timeout_ms', x), ',') = '1100,1200' FROM (SELECT 1100 AS x UNION ALL SELECT 1200);
SELECT pp_config('timeout_ms') = '1200';
-- A REAL keeps every digit that tells it apart (SQLite's text of it would keep 15).
SELECT pp_config('dedup_rel_tol', 0.30000000000000004) = '0.30000000000000004';
SELECT pp_config('timeout_ms', 1500) = '1500';
SELECT windows_folded = 0 FROM pp_refresh(NULL, TRUE);
SELECT windows_folded = 0 FROM pp_refresh(NULL, 'false');
