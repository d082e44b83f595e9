#!/usr/bin/env bash
# Runs every test: the C++ suite, the SQL files through the sqlite3 shell, and the Python
# hook-client tests, against real Prometheus and VictoriaMetrics servers started on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@"
