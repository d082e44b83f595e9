#!/usr/bin/env bash
# The main job: a CPU DLRM run observed by the hook client, GPU counters from the DCGM emulator
# scraped by a local Prometheus (or a real one: scripts/main.sh --prometheus URL), attribution
# in SQL, the paper's Table II, Table III and Figure 2. See scripts/main_job.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"  # precisionprobe and its harness
exec /usr/bin/python3 scripts/main_job.py "$@"
