#!/usr/bin/env python3
"""layer_metrics three ways on the same data, timed, with every result cross-checked.

Data (bench/attribution_data.py, fixed seed, generated once into bench/data/): 1,000,000
DLRM-like layer events of 4 jobs over 8 GPUs and 6 metrics x 8 GPUs x 1 hour of 100 ms DCGM
samples (1,728,000). With --production, the production-rate data of bench/attribution_production.py
instead: 1,000 events/s per GPU over --minutes (28,800,000 events for the default hour), the event
files in the hook client's compact format. The result, per (job_id, layer, forward) including each
job's '(untracked)' row: data_num, the six overlap-weighted means, calls, mean duration.

  extension  precisionprobe's engine on tables already filled: events imported with
             layer_events() into pp_events, samples inserted into pp_samples, pp_intervals
             filled; timed: SELECT * FROM pp_refresh(NULL, 1) (the fold step of pp_refresh
             without import and fetch: intervals, the interval join pp_overlap_means, layer_state,
             history) and reading layer_metrics.
  duckdb     DuckDB (npm @duckdb/node-api) on the same CSV files: bench/attribution_duckdb.sql,
             a range join of events and samples on GPU and overlap with weighted sums; with its
             default threads (one per core) and with one thread.
  sqlite     stock SQLite without the extension (Python's sqlite3): bench/attribution_sqlite.sql,
             plain weighted sums over an indexed join.
  refresh    end to end: SELECT * FROM pp_refresh(EVENTS_DIR, 1) on an empty database, against
             a local Prometheus whose TSDB promtool backfilled from the same samples (cached in
             the data directory): import, fetch over HTTP, intervals, fold.

All run in-memory (SQLite with temp_store = MEMORY), each engine in its own process; times are
the best of --runs after loading, and the peak RSS is the process's during the timed part
(VmHWM, reset after loading) and over its whole life. Every engine's rows must agree with the
extension's: counts exactly, means to 1e-9 relative; the largest difference is printed.

Usage: PYTHONPATH=python /usr/bin/python3 bench/attribution_bench.py [--events 1000000 | --production [--minutes 60]]
         [--runs 3] [--extension build/precisionprobe] [--skip refresh,sqlite] [--out bench/results/attribution.txt]
"""
import argparse
import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attribution_data  # bench/attribution_data.py, beside this script

ROOT = Path(__file__).resolve().parent.parent

COLUMNS = ["data_num", "gpu_util", "gpu_mem", "dram_active", "fp32_active", "sm_occupancy", "sm_active",
           "calls", "mean_duration_ms"]
EXACT = {"data_num", "calls"}
REL_TOL = 1e-9


# ---- helpers used in the engine processes ----

def peak_rss_mb():
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024


def reset_peak_rss():
    Path("/proc/self/clear_refs").write_text("5")


def cpu_seconds():
    t = os.times()
    return t.user + t.system


def timed(function):
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = function()
    return result, time.perf_counter() - wall, cpu_seconds() - cpu


def read_samples(data):
    with open(data / "samples.csv") as f:
        reader = csv.reader(f)
        next(reader)
        for uuid, metric, ts_ms, value in reader:
            yield uuid, metric, int(ts_ms), float(value)


def rows_of(conn, sql):
    cursor = conn.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor]


def extension_connection(extension):
    """The extension with the semantics the other engines' queries have: a sample stored at ts
    covers (ts - interval, ts] for every metric (the generated data are stamped so), rather than
    the alignment it would estimate for scrape-time stamps."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('sample_offset_ms', 0)")
    conn.execute("UPDATE pp_metrics SET kind = 'window'")
    return conn


LAYER_METRICS = ("SELECT job_id, layer, forward, " + ", ".join(COLUMNS) +
                 " FROM layer_metrics ORDER BY job_id, layer, forward")


def engine_extension(args, data, manifest):
    conn = extension_connection(args.extension)
    load = {}
    conn.execute("BEGIN")
    _, load["events_s"], _ = timed(lambda: conn.execute(
        "INSERT INTO pp_events(job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, "
        "layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line) "
        "SELECT job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer, "
        "layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line "
        "FROM layer_events(?)", (str(data / "events"),)))
    _, load["samples_s"], _ = timed(lambda: conn.executemany(
        "INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)", read_samples(data)))
    conn.execute("INSERT INTO pp_intervals(uuid, metric, interval_ms, source) "
                 "SELECT DISTINCT uuid, metric, ?, 'user' FROM pp_samples", (manifest["interval_ms"],))
    conn.execute("COMMIT")
    load_peak = peak_rss_mb()
    reset_peak_rss()
    runs = []
    for _ in range(args.runs):
        conn.executescript("DELETE FROM layer_state; DELETE FROM pp_layers; DELETE FROM pp_fold_state; "
                           "DELETE FROM pp_gpu_spans; DELETE FROM layer_history; UPDATE pp_events SET folded = 0;")

        def fold():
            summary = conn.execute("SELECT * FROM pp_refresh(NULL, 1)").fetchone()
            return summary, rows_of(conn, LAYER_METRICS)
        (summary, rows), wall, cpu = timed(fold)
        runs.append({"wall_s": wall, "cpu_s": cpu})
    query_peak = peak_rss_mb()
    # The interval join alone, for the breakdown: pp_overlap_means over the GPUs one after
    # another, each sweeping its series on two threads (the fold runs the same sweep per GPU
    # beside the other GPUs' reads).
    join = []
    for _ in range(args.runs):
        conn.execute("UPDATE pp_events SET folded = 0")
        _, wall, cpu = timed(lambda: conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT uuid FROM pp_intervals) AS g, "
            "pp_overlap_means(g.uuid) AS m").fetchone())
        join.append({"wall_s": wall, "cpu_s": cpu})
    return {"load": load, "runs": runs, "join_runs": join, "summary": list(summary), "rows": rows,
            "load_peak_rss_mb": load_peak, "query_peak_rss_mb": query_peak,
            "sqlite_version": conn.execute("SELECT sqlite_version()").fetchone()[0]}


def engine_sqlite(args, data, manifest):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.executescript("""
      CREATE TABLE events(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL, layer TEXT NOT NULL,
                          forward INTEGER NOT NULL, gpu_uuid TEXT NOT NULL,
                          t_start_ns INTEGER NOT NULL, t_end_ns INTEGER NOT NULL);
      CREATE INDEX events_by_gpu_time ON events(gpu_uuid, t_start_ns);
      CREATE TABLE samples(uuid TEXT NOT NULL, metric TEXT NOT NULL, ts_ms INTEGER NOT NULL, value REAL,
                           PRIMARY KEY (uuid, metric, ts_ms)) WITHOUT ROWID;
      CREATE TABLE intervals(uuid TEXT NOT NULL, metric TEXT NOT NULL, interval_ms INTEGER NOT NULL,
                             PRIMARY KEY (uuid, metric));""")
    load = {}
    conn.execute("BEGIN")

    def events():
        with open(data / "events.csv") as f:
            reader = csv.DictReader(f)
            for r in reader:
                yield (r["job_id"], r["layer"], int(r["forward"]), r["gpu_uuid"], int(r["t_start_ns"]),
                       int(r["t_end_ns"]))
    _, load["events_s"], _ = timed(lambda: conn.executemany(
        "INSERT INTO events(job_id, layer, forward, gpu_uuid, t_start_ns, t_end_ns) VALUES (?, ?, ?, ?, ?, ?)",
        events()))
    _, load["samples_s"], _ = timed(lambda: conn.executemany(
        "INSERT INTO samples VALUES (?, ?, ?, ?)", read_samples(data)))
    conn.execute("INSERT INTO intervals SELECT DISTINCT uuid, metric, ? FROM samples", (manifest["interval_ms"],))
    conn.execute("COMMIT")
    script = (ROOT / "bench" / "attribution_sqlite.sql").read_text()
    load_peak = peak_rss_mb()
    reset_peak_rss()
    runs = []
    for _ in range(args.runs):
        def query():
            conn.executescript(script)
            return rows_of(conn, "SELECT * FROM temp.result ORDER BY job_id, layer, forward")
        rows, wall, cpu = timed(query)
        runs.append({"wall_s": wall, "cpu_s": cpu})
    return {"load": load, "runs": runs, "rows": rows, "load_peak_rss_mb": load_peak,
            "query_peak_rss_mb": peak_rss_mb(), "sqlite_version": sqlite3.sqlite_version}


def engine_refresh(args, data, manifest):
    runs = []
    for _ in range(args.runs):
        conn = extension_connection(args.extension)
        conn.execute("SELECT pp_config('prometheus_url', ?)", (args.prometheus_url,))
        reset_peak_rss()

        def refresh():
            summary = conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(data / "events"),)).fetchone()
            return summary, rows_of(conn, LAYER_METRICS)
        (summary, rows), wall, cpu = timed(refresh)
        runs.append({"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak_rss_mb()})
        conn.close()
    return {"runs": runs, "summary": list(summary), "rows": rows,
            "query_peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}


ENGINES = {"extension": engine_extension, "sqlite": engine_sqlite, "refresh": engine_refresh}


# ---- the driver ----

def run_engine(name, args, data, out_dir):
    out = out_dir / f"{name}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--engine", name, "--data", str(data),
               "--runs", str(args.runs), "--extension", args.extension, "--result", str(out)]
    if args.prometheus_url:
        command += ["--prometheus-url", args.prometheus_url]
    subprocess.run(command, check=True)
    result = json.loads(out.read_text())
    result["process_peak_rss_mb"] = result.pop("_process_peak_rss_mb")
    return result


def run_duckdb(args, data, out_dir, threads):
    if not (ROOT / "bench" / "node_modules" / "@duckdb" / "node-api").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=ROOT / "bench", check=True,
                       stdout=subprocess.DEVNULL)
    out = out_dir / f"duckdb-{threads or 'default'}.json"
    command = ["/usr/bin/node", str(ROOT / "bench" / "attribution_duckdb.mjs"), str(data), str(args.runs), str(out)]
    if threads:
        command.append(str(threads))
    info = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return {"runs": [{"wall_s": w, "cpu_s": c} for w, c in zip(info["query_seconds"], info["query_cpu_seconds"])],
            "rows": json.loads(out.read_text()), "threads": info["threads"], "version": info["version"],
            "load": {"csv_s": info["load_seconds"]}, "query_peak_rss_mb": info["query_peak_rss_mb"],
            "process_peak_rss_mb": info["peak_rss_mb"]}


def start_prometheus(data, work):
    """Serves the samples from a TSDB that promtool backfilled once into the data directory."""
    from precisionprobe.harness import prometheus as prometheus_server  # the driver's alone (see main)
    tsdb = data / "prometheus-data"
    if not (tsdb / "done").exists():
        shutil.rmtree(tsdb, ignore_errors=True)
        print(f"promtool: backfilling {data / 'samples.om'} ...", file=sys.stderr)
        prometheus_server.backfill(data / "samples.om", tsdb)
        (tsdb / "done").write_text("")
    return prometheus_server.serve(work, tsdb=tsdb, ready_seconds=180)


def compare(reference, other):
    """Largest relative difference over every (job, layer, forward, column); raises on disagreement."""
    key = lambda r: (r["job_id"], r["layer"], int(r["forward"]))  # noqa: E731
    a = {key(r): r for r in reference}
    b = {key(r): r for r in other}
    if a.keys() != b.keys():
        raise SystemExit(f"different rows: only in one of them: {sorted(set(a) ^ set(b))[:5]}")
    worst, where = 0.0, None
    for k, ra in a.items():
        rb = b[k]
        for c in COLUMNS:
            x, y = ra[c], rb[c]
            if x is None or y is None:
                if x is not None or y is not None:
                    raise SystemExit(f"{k} {c}: {x} vs {y}")
                continue
            if c in EXACT:
                if int(x) != int(y):
                    raise SystemExit(f"{k} {c}: {x} vs {y}")
                continue
            scale = max(abs(x), abs(y))
            d = abs(x - y) / scale if scale else 0.0
            if d > worst:
                worst, where = d, (k, c, x, y)
            if d > REL_TOL:
                raise SystemExit(f"{k} {c}: {x!r} vs {y!r}: relative difference {d:.3g} > {REL_TOL}")
    return worst, where


def best(result, field="wall_s"):
    return min(r[field] for r in result["runs"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, help="the default data's size (default 1,000,000)")
    parser.add_argument("--production", action="store_true",
                        help="the production-rate data (bench/attribution_production.py) instead")
    parser.add_argument("--minutes", type=int, default=60, help="--production: the data's span")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--skip", default="", help="comma-separated: extension is always run")
    parser.add_argument("--out", help="also write the report here")
    parser.add_argument("--engine", choices=sorted(ENGINES), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--prometheus-url", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.engine:  # one engine, in this process
        data = Path(args.data)
        manifest = json.loads((data / "manifest.json").read_text())
        result = ENGINES[args.engine](args, data, manifest)
        result["_process_peak_rss_mb"] = peak_rss_mb()
        Path(args.result).write_text(json.dumps(result))
        return

    # The harness and the production data (numpy) are imported by the driver only: the engine
    # processes above measure their memory.
    from precisionprobe.harness import processes
    import attribution_production  # bench/attribution_production.py, beside this script
    skip = set(filter(None, args.skip.split(",")))
    if args.production and args.events is not None:
        parser.error("--production sizes the data by --minutes, not --events")
    data = (attribution_production.ensure(args.minutes) if args.production
            else attribution_data.ensure(args.events or 1_000_000))
    manifest = json.loads((data / "manifest.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="pp-attribution-"))
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    prometheus = None
    try:
        results = {}
        print("extension ...", file=sys.stderr)
        results["extension"] = run_engine("extension", args, data, work)
        if "duckdb" not in skip:
            print("duckdb ...", file=sys.stderr)
            results["duckdb"] = run_duckdb(args, data, work, None)
            results["duckdb-1"] = run_duckdb(args, data, work, 1)
        if "sqlite" not in skip:
            print("sqlite ...", file=sys.stderr)
            results["sqlite"] = run_engine("sqlite", args, data, work)
        if "refresh" not in skip:
            print("refresh (Prometheus) ...", file=sys.stderr)
            prometheus, args.prometheus_url = start_prometheus(data, work)
            results["refresh"] = run_engine("refresh", args, data, work)

        ext = results["extension"]
        say(f"data: {data.relative_to(ROOT) if data.is_relative_to(ROOT) else data}: {manifest['events']:,} events, "
            f"{manifest['samples']:,} samples ({len(manifest['jobs'])} jobs, {manifest['gpus']} GPUs, "
            f"{manifest['interval_ms']} ms), seed {manifest['seed']}; {len(ext['rows'])} result rows"
            + (f"; production mode: {manifest['minutes']} minutes at {manifest['events_per_second_per_gpu']:,} "
               f"events/s per GPU, compact files" if manifest.get("mode") == "production" else ""))
        load_avg = os.getloadavg()
        say(f"machine: {os.cpu_count()} cores, load average {load_avg[0]:.1f} {load_avg[1]:.1f} {load_avg[2]:.1f} "
            f"at the end; best of {args.runs} runs; SQLite {ext['sqlite_version']}"
            + (f", DuckDB {results['duckdb']['version']}" if "duckdb" in results else ""))
        names = {
            "extension": "precisionprobe fold: pp_refresh(NULL, 1) + layer_metrics",
            "duckdb": f"DuckDB, {results['duckdb']['threads']} threads" if "duckdb" in results else "",
            "duckdb-1": "DuckDB, 1 thread",
            "sqlite": "stock SQLite (no extension), indexed join",
            "refresh": "precisionprobe end to end: pp_refresh(events, 1) via Prometheus",
        }
        width = max(len(names[n]) for n in results)
        say(f"{'':<{width}}  {'wall':>8}  {'CPU':>8}  {'peak RSS':>9}  {'vs fold':>8}  max rel. diff")
        base = best(ext)
        for name, r in results.items():
            diff, where = compare(ext["rows"], r["rows"]) if name != "extension" else (0.0, None)
            say(f"{names[name]:<{width}}  {best(r):7.3f}s  {best(r, 'cpu_s'):7.3f}s  "
                f"{r['query_peak_rss_mb']:6.0f} MB  {best(r) / base:7.2f}x  "
                + ("(reference)" if name == "extension" else f"{diff:.2e}"))
        say(f"(wall and CPU: best run; peak RSS: the process during the timed runs, data included; "
            f"all rows agree to {REL_TOL:g})")
        join = {"runs": ext["join_runs"]}
        say(f"of the fold, the interval join alone (pp_overlap_means over the {manifest['gpus']} GPUs): "
            f"{best(join):.3f}s wall, {best(join, 'cpu_s'):.3f}s CPU")
        if "refresh" in results:
            s = results["refresh"]["summary"]
            say(f"end to end: events_added {s[0]:,}, samples_added {s[1]:,}, windows_folded {s[2]:,}, "
                f"http_requests {s[4]}; fold-only summary: windows_folded {ext['summary'][2]:,}")
        say("loading (not timed above): " + "; ".join(
            f"{n} " + ", ".join(f"{k.removesuffix('_s')} {v:.1f}s" for k, v in r["load"].items())
            for n, r in results.items() if "load" in r))
        say("all runs (wall s): " + "; ".join(
            f"{n} " + " ".join(f"{x['wall_s']:.2f}" for x in r["runs"]) for n, r in results.items()))
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text("\n".join(lines) + "\n")
    finally:
        processes.stop(prometheus)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
