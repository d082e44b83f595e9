#!/usr/bin/env python3
"""Fetch rate of raw GPU samples: 6 metrics x 8 GPUs x 1 hour of 1 s samples from a local
Prometheus (backfilled with promtool), read through prom_samples.

Prints rows/s, response bytes and HTTP requests for three ways of asking:
  one selector for all six metrics, one call per metric, and one call per metric and GPU.
Usage: PYTHONPATH=python /usr/bin/python3 bench/prom_fetch.py [--extension build/precisionprobe]
"""
import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from precisionprobe.emulator.profile import METRICS  # the six DCGM fields of the paper's Table I
from precisionprobe.harness import processes, prometheus

ROOT = Path(__file__).resolve().parent.parent

T0 = 1714557600  # 2024-05-01T10:00:00Z
GPUS, SECONDS = 8, 3600


def write_data(path):
    with open(path, "w") as out:
        for m, metric in enumerate(METRICS):
            out.write(f"# TYPE {metric} gauge\n")
            for g in range(GPUS):
                labels = (f'gpu="{g}",UUID="GPU-bench-{g:04d}",device="nvidia{g}",'
                          f'modelName="NVIDIA H100 80GB HBM3",Hostname="bench-node"')
                for i in range(SECONDS):
                    value = (i * 7 + g) % 101 if m < 2 else ((i * 37 + g * 11 + m) % 1000) / 1000
                    out.write(f"{metric}{{{labels}}} {value} {T0 + i}\n")
        out.write("# EOF\n")


def measure(conn, label, selectors):
    before = json.loads(conn.execute("SELECT pp_http_stats()").fetchone()[0])
    start = time.perf_counter()
    rows = 0
    for selector in selectors:
        rows += conn.execute("SELECT count(*) FROM prom_samples(?, ?, ?)",
                             (selector, T0, T0 + SECONDS - 1)).fetchone()[0]
    elapsed = time.perf_counter() - start
    after = json.loads(conn.execute("SELECT pp_http_stats()").fetchone()[0])
    requests = after["requests"] - before["requests"]
    size = after["bytes"] - before["bytes"]
    print(f"{label:<32} {rows:>9} rows {elapsed:7.3f} s {rows / elapsed:>12,.0f} rows/s "
          f"{size / 1e6:8.1f} MB JSON {requests:>5} requests")
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pp-bench-"))
    process = None
    try:
        om = work / "bench.om"
        write_data(om)
        process, url = prometheus.start_backfilled(om, work)
        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(args.extension)
        conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
        expected = len(METRICS) * GPUS * SECONDS
        print(f"Prometheus {url}: {len(METRICS)} metrics x {GPUS} GPUs x {SECONDS} s "
              f"= {expected:,} raw samples")
        measure(conn, "warm-up", ['{__name__=~"DCGM_FI_.*"}'])
        for label, selectors in [
            ("one selector, all metrics", ['{__name__=~"DCGM_FI_.*"}']),
            ("one call per metric", METRICS),
            ("one call per metric and GPU",
             [f'{m}{{gpu="{g}"}}' for m in METRICS for g in range(GPUS)]),
        ]:
            assert measure(conn, label, selectors) == expected
    finally:
        processes.stop(process)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
