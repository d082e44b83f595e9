#!/usr/bin/env bash
# The main job: start a local Prometheus holding sample DCGM GPU data (backfilled with
# promtool), then ask it questions in plain SQL through the sqlite3 shell with the extension.
# Every process it starts is stopped on exit, Ctrl-C included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null

env_dir=$(mktemp -d /tmp/precisionprobe-main.XXXXXX)
cleanup() {
  /usr/bin/python3 tests/fixtures/servers.py stop --env-dir "$env_dir" || true
  rm -rf "$env_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
/usr/bin/python3 tests/fixtures/servers.py start --env-dir "$env_dir" >/dev/null
url=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prometheus_url"])' "$env_dir/env.json")
echo "Prometheus with sample DCGM data at $url"
echo

PRECISIONPROBE_PROMETHEUS_URL="$url" sqlite3 :memory: <<'SQL'
.load build/precisionprobe
.mode box
.print 'GPUs seen by dcgm-exporter:'
SELECT json_extract(labels, '$.Hostname') AS host, json_extract(labels, '$.gpu') AS gpu,
       json_extract(labels, '$.UUID') AS uuid, json_extract(labels, '$.pod') AS pod
  FROM prom_series('DCGM_FI_DEV_GPU_UTIL', '2023-11-14T22:00:00Z', '2023-11-14T23:00:00Z')
 ORDER BY host, gpu;
.print ''
.print 'The six Table I metrics per GPU, from the raw samples of 10 minutes:'
SELECT json_extract(labels, '$.Hostname') || '/' || json_extract(labels, '$.gpu') AS gpu,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_GPU_UTIL'), 2) AS gpu_util,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_DEV_FB_USED'), 1) AS fb_used_mib,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_DRAM_ACTIVE'), 4) AS dram_active,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_PIPE_FP32_ACTIVE'), 4) AS fp32_active,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'), 4) AS sm_active,
       round(avg(value) FILTER (WHERE metric = 'DCGM_FI_PROF_SM_OCCUPANCY'), 4) AS sm_occupancy,
       count(*) AS samples
  FROM prom_samples('{__name__=~"DCGM_FI_.*"}', '2023-11-14T22:13:20Z', '2023-11-14T22:23:19Z')
 GROUP BY gpu ORDER BY gpu;
.print ''
.print 'What that cost:'
SELECT pp_http_stats() AS http;
SQL
