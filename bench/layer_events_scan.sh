#!/usr/bin/env bash
# Scan rate of layer_events beside DuckDB's read_json on a 1M-event JSON Lines file
# (bench/layer_events_scan.py says what is measured). Builds nothing: run scripts/build.sh first.
#   bench/layer_events_scan.sh [--events N] [--runs R] [--extension build/precisionprobe]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d bench/node_modules/@duckdb/node-api ]; then
  (cd bench && npm install --no-audit --no-fund >/dev/null)
fi
exec /usr/bin/python3 bench/layer_events_scan.py "$@"
