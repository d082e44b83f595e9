#!/usr/bin/env python3
"""Scan rate of layer_events beside DuckDB's read_json on the same JSON Lines file.

Writes EVENTS layer events (default 1,000,000) the way the hook client writes them (8 processes
of a DLRM job, one job header each, bottom MLP, 8 embedding bags, top MLP, forward and backward)
to bench/data/ (gitignored; reused when present), then times, best of --runs:

  sqlite3 shell:  SELECT count(*), sum(t_end - t_start) FROM layer_events(FILE)
  DuckDB (node):  SELECT count(*), sum(t_end_ns / 1e9 - t_start_ns / 1e9)
                    FROM read_json(FILE) WHERE layer IS NOT NULL

DuckDB runs with its default threads (all cores) and with one thread, since a SQLite query
runs on one. Rounds alternate the engines; the best time of each is kept. Prints events/s of
each and the ratios.
Usage: bench/layer_events_scan.sh [--events N] [--runs R] [--extension build/precisionprobe]
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T0 = 1714557600 * 10**9  # 2024-05-01T10:00:00Z in ns

LAYERS = ([(f"bot_l.{i}", "Linear" if i % 2 == 0 else "ReLU", 180) for i in range(6)]
          + [(f"emb_l.{i}", "EmbeddingBag", 420) for i in range(8)]
          + [(f"top_l.{i}", ("Linear" if i % 2 == 0 else "ReLU") if i < 7 else "Sigmoid", 260)
             for i in range(8)])


def generate(path, events, processes=8):
    """Interleaves the processes' batches in time, as files concatenated per node would be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    per_batch = 2 * len(LAYERS)
    with open(tmp, "w") as out:
        for rank in range(processes):
            out.write(json.dumps({
                "record": "job", "format_version": 1, "job_id": "dlrm-bench-0001",
                "host_name": f"gpu-node-{rank // 4}", "rank": rank, "pid": 30000 + rank,
                "command": ["python", "dlrm_s_pytorch.py", "--mini-batch-size=1024"],
                "torch_version": "1.13.1", "start_time_ns": T0, "model": "DLRM_Net",
                "parameters": 540000000, "clock": "cuda"}, separators=(",", ":")) + "\n")
        prefixes = []
        for rank in range(processes):
            prefixes.append(json.dumps({
                "job_id": "dlrm-bench-0001", "host_name": f"gpu-node-{rank // 4}",
                "ip": f"10.42.0.{17 + rank // 4}", "pod": f"dlrm-train-{rank}", "namespace": "ml-team",
                "gpu_uuid": f"GPU-8f6a2c1e-0000-4000-8000-{rank:012d}", "gpu": rank % 4,
                "rank": rank, "local_rank": rank % 4, "world_size": processes, "pid": 30000 + rank},
                separators=(",", ":"))[:-1] + ",")
        written, batch = 0, 0
        while written < events:
            for rank in range(processes):
                t = T0 + batch * 40_000_000 + rank * 1_000
                lines = []
                for forward in (True, False):
                    order = LAYERS if forward else LAYERS[::-1]
                    for layer, layer_type, micros in order:
                        d = micros * (1000 if forward else 2000) + (batch * 7 + rank) % 900
                        lines.append(
                            f'{prefixes[rank]}"epoch":{batch // 5000},"batch":{batch},'
                            f'"layer":"{layer}","layer_type":"{layer_type}",'
                            f'"forward":{"true" if forward else "false"},'
                            f'"t_start_ns":{t},"t_end_ns":{t + d},"cpu_num":8.0}}\n')
                        t += d + 15_000
                take = min(per_batch, events - written)
                out.writelines(lines[:take])
                written += take
                if written == events:
                    break
            batch += 1
    os.replace(tmp, path)


def time_sqlite(extension, path, runs):
    query = f"SELECT count(*), sum(t_end - t_start) FROM layer_events('{path}');\n"
    script = f".load {extension}\n.timer on\n" + query * runs
    result = subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True,
                            check=True)
    times = [float(t) for t in re.findall(r"Run Time: real ([0-9.]+)", result.stdout)]
    rows = [line for line in result.stdout.splitlines() if "|" in line]
    count, busy = rows[0].split("|")
    return min(times), int(count), float(busy)


def time_duckdb(path, runs, threads):
    args = ["/usr/bin/node", str(ROOT / "bench" / "layer_events_scan.mjs"), str(path), str(runs)]
    if threads:
        args.append(str(threads))
    result = subprocess.run(args, capture_output=True, text=True, check=True)
    out = json.loads(result.stdout)
    return out["seconds"], out["count"], out["busy"], out["threads"], out["version"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    args = parser.parse_args()

    path = ROOT / "bench" / "data" / f"layer_events_{args.events}.jsonl"
    if not path.exists():
        print(f"writing {path} ...", file=sys.stderr)
        generate(path, args.events)
    size_mb = path.stat().st_size / 1e6
    print(f"file: {path.relative_to(ROOT)}, {args.events:,} events, {size_mb:.0f} MB; "
          f"best of {2 * args.runs} runs (file in page cache); {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")

    # Rounds alternate the engines so that a busy machine slows them alike; each round runs the
    # query twice in one process (the second with warm caches); the best run of each counts.
    best = {}
    for _ in range(args.runs):
        s_sec, s_count, s_busy = time_sqlite(args.extension, path, 2)
        key = "precisionprobe layer_events (sqlite3 shell, 1 thread)"
        best[key] = min(best.get(key, (s_sec,))[0], s_sec), s_count, s_busy
        for threads in (None, 1):
            d_sec, d_count, d_busy, d_threads, version = time_duckdb(path, 2, threads)
            key = f"DuckDB {version} read_json ({d_threads} thread{'s' if d_threads != 1 else ''})"
            best[key] = min(best.get(key, (d_sec,))[0], d_sec), d_count, d_busy
    results = [(name, sec, count, busy) for name, (sec, count, busy) in best.items()]
    s_sec, s_busy = results[0][1], results[0][3]
    for name, sec, count, busy in results:
        # Unix seconds as doubles are 0.24 us apart: the sums may differ by that much per event.
        if count != args.events or abs(busy - s_busy) > 2.5e-7 * count:
            sys.exit(f"{name} disagrees: {count} events, busy {busy} s (expected {args.events}, {s_busy})")
    width = max(len(r[0]) for r in results)
    for name, sec, count, busy in results:
        print(f"{name:<{width}}  {sec:7.3f} s  {count / sec / 1e6:6.2f} M events/s  "
              f"{size_mb / sec:6.0f} MB/s")
    for name, sec, _, _ in results[1:]:
        print(f"layer_events / {name}: {sec / s_sec:.2f}x the events/s")


if __name__ == "__main__":
    main()
