#!/usr/bin/env python3
"""Does a refresh cost grow with the number of jobs the database has seen? A node runs job after
job; each refresh should cost what is new, whatever the count of jobs folded before.

On one GPU, --jobs jobs run one after the other, --job-minutes each (default 1), at 1,000
layer events a second with the six metrics every 100 ms, made as
refresh_growth.py makes them (the same Timeline: a DLRM-like step, windows computed from what ran
in them, stored 120 ms after their end). After each minute is inserted, the database is
refreshed as a node's loop would (event_retention_minutes = 2) and timed: the refresh of the new
minute, then the least of three refreshes with nothing new (what a loop pays for the jobs it has
seen and nothing else); and how many of the stretches the minute's refresh aligned were
estimated (a GPU's earlier jobs must not make its alignment fail). The last lines compare the last three jobs' minutes with those of jobs
2-4. With --baseline, a second extension (say, a build of an earlier commit) runs the same data
into its own database, side by side, minute by minute.

  /usr/bin/python3 bench/job_count_growth.py [--jobs 24] [--job-minutes 1]
      [--extension build/precisionprobe] [--baseline OTHER_BUILD]

About 15 s per extension for 24 jobs on the 2-core VM.

With --bulk N1,N2,..., the first refresh of a long history instead: for each N, N jobs of
--bulk-job-seconds (0.5) one after another on --gpus (4) GPUs, 0.5 s apart, the same calls and
samples, inserted at once; then one pp_refresh(NULL, 1) and one SELECT * of layer_metrics and
of job_overview are timed, and each N's times per job against the first N's (1.00x: linear in
the jobs). The offset is pinned (sample_offset_ms): the jobs are shorter than the jobs' reach
of a stretch's fit, so alignment would put hundreds of jobs' columns into each fit and its
cost would hide the refresh's own.
"""
import argparse
import hashlib
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from refresh_growth import OFFSET_MS, ROOT, Timeline, insert_minute

T0_NS = 1_700_000_000 * 10**9


def connect(extension, path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('event_retention_minutes', 2)")
    conn.execute("SELECT pp_config('attribution_margin_seconds', 1000000000)")  # a job runs until the next
    return conn


def timed_refresh_ms(conn):
    start = time.perf_counter()
    conn.execute("SELECT * FROM pp_refresh(NULL)").fetchone()
    return (time.perf_counter() - start) * 1e3


def run(extension, jobs, job_minutes, directory):
    """Per minute: (jobs seen, refresh of the new minute ms, least empty refresh ms, stretches
    the new minute's refresh estimated, stretches it aligned)."""
    conn = connect(extension, str(Path(directory) / "refresh.db"))
    timeline = Timeline(0, T0_NS, 1000, np.random.default_rng(1))
    line, rows = 0, []
    for minute in range(jobs * job_minutes):
        job = "job%d" % (minute // job_minutes)
        line = insert_minute(conn, [timeline], line, job)
        aligned_before = conn.execute("SELECT coalesce(max(rowid), 0) FROM pp_alignment").fetchone()[0]
        new_minute = timed_refresh_ms(conn)
        estimated, aligned = conn.execute("SELECT coalesce(sum(status = 'estimated'), 0), count(*) FROM pp_alignment "
                                          "WHERE rowid > ?", (aligned_before,)).fetchone()
        empty = min(timed_refresh_ms(conn) for _ in range(3))
        rows.append((minute // job_minutes + 1, new_minute, empty, estimated, aligned))
    conn.close()
    return rows


def run_bulk(extension, jobs, gpus, job_seconds, path):
    """N jobs one after another on `gpus` GPUs, all inserted, then refreshed once: (refresh s,
    layer_metrics s, job_overview s, layer_metrics rows, jobs in job_overview)."""
    conn = connect(extension, path)
    conn.execute("SELECT pp_config('sample_offset_ms', %d)" % OFFSET_MS)
    rng = np.random.default_rng(1)
    timelines = [Timeline(g, T0_NS, 1000, rng) for g in range(gpus)]
    line = 0
    for j in range(jobs):
        timeline = timelines[j % gpus]
        line = insert_minute(conn, [timeline], line, "job%05d" % j, int(job_seconds * 1e9))
        timeline.t += 500 * 10**6  # the next job on this GPU starts 0.5 s later
    times, views = [], []
    for sql in ("SELECT * FROM pp_refresh(NULL, 1)", "SELECT * FROM layer_metrics", "SELECT * FROM job_overview"):
        start = time.perf_counter()
        rows = conn.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
        views.append(sorted(rows, key=repr))
    conn.close()
    # (The views' rows, to compare builds by: a change of speed must not change them.)
    return (*times, len(views[1]), len(views[2]), hashlib.sha256(repr(views[1:]).encode()).hexdigest())


def bulk(args, builds):
    counts = sorted(int(n) for n in args.bulk.split(","))
    print("N jobs of %g s one after another on %d GPUs (0.5 s apart) at 1000 events/s, 100 ms samples, the offset "
          "pinned; one pp_refresh(NULL, 1), then SELECT * FROM layer_metrics and job_overview" % (args.bulk_job_seconds,
                                                                                                  args.gpus))
    results = {name: [] for name, _ in builds}
    with tempfile.TemporaryDirectory(prefix="pp-bulk-") as directory:
        for n in counts:
            for name, extension in builds:
                results[name].append(run_bulk(extension, n, args.gpus, args.bulk_job_seconds,
                                              str(Path(directory) / ("%s-%d.db" % (name, n)))))
    print("  jobs |" + "|".join(" %-8s refresh s  layer_metrics s  job_overview s  per job vs first " % name
                                for name, _ in builds))
    for i, n in enumerate(counts):
        cells = []
        for name, _ in builds:
            refresh, layers, overview = results[name][i][:3]
            first = results[name][0]
            growth = (refresh + layers + overview) / n / ((first[0] + first[1] + first[2]) / counts[0])
            cells.append(" %18.2f  %15.2f  %14.2f  %16.2fx " % (refresh, layers, overview, growth))
        print(" %5d |" % n + "|".join(cells))
    for name, _ in builds:
        rows, jobs = results[name][-1][3:5]
        print("%s: %d jobs: %d layer_metrics rows, %d jobs in job_overview" % (name, counts[-1], rows, jobs))
    if len(builds) == 2:
        same = all(a[5] == b[5] for a, b in zip(results["this"], results["baseline"]))
        print("the views' rows of both builds are " + ("the same at every N" if same else "NOT the same"))
        for i, n in enumerate(counts):
            this, baseline = (sum(results[name][i][:3]) for name, _ in builds)
            print("%5d jobs: refresh and both SELECTs %.2f s here, %.2f s for the baseline (%.2fx)" % (
                n, this, baseline, baseline / this))


def summary(rows):
    """Mean of jobs 2-4's and of the last three jobs' minutes, and their ratio (the first job's
    first refresh also creates the schema)."""
    first = [r for r in rows if 2 <= r[0] <= 4]
    last = [r for r in rows if r[0] > rows[-1][0] - 3]
    mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)
    return [(mean(first, k), mean(last, k), mean(last, k) / mean(first, k)) for k in (1, 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=24)
    parser.add_argument("--job-minutes", type=int, default=1)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--baseline", help="another build of the extension, run side by side")
    parser.add_argument("--bulk", help="job counts (250,500,1000,2000): one refresh of each many jobs at once")
    parser.add_argument("--bulk-job-seconds", type=float, default=0.5)
    parser.add_argument("--gpus", type=int, default=4, help="with --bulk")
    args = parser.parse_args()
    builds = [("this", args.extension)] + ([("baseline", args.baseline)] if args.baseline else [])
    if args.bulk:
        bulk(args, builds)
        return
    with tempfile.TemporaryDirectory(prefix="pp-jobs-") as directory:
        results = {}
        for name, extension in builds:
            sub = Path(directory) / name
            sub.mkdir()
            results[name] = run(extension, args.jobs, args.job_minutes, sub)
    print("%d jobs of %d minute(s) one after the other on one GPU at 1000 events/s, 100 ms samples, "
          "a refresh after each minute (event_retention_minutes = 2)" % (args.jobs, args.job_minutes))
    header = " jobs seen |" + "|".join(" %-8s new minute ms  empty ms  estimated " % name for name, _ in builds)
    print(header)
    for i in range(len(results["this"])):
        cells = ["  %13.0f  %8.1f  %5d/%-3d " % tuple(results[name][i][1:]) for name, _ in builds]
        print(" %9d |" % results["this"][i][0] + "|".join("%-44s" % c for c in cells))
    for name, _ in builds:
        (new_first, new_last, new_ratio), (empty_first, empty_last, empty_ratio) = summary(results[name])
        print("%s: the last 3 jobs' minutes against jobs 2-4's: new minute %.0f -> %.0f ms (%.2fx), "
              "empty refresh %.1f -> %.1f ms (%.2fx)" % (name, new_first, new_last, new_ratio, empty_first, empty_last,
                                                         empty_ratio))
        estimated = sum(r[3] for r in results[name])
        aligned = sum(r[4] for r in results[name])
        print("%s: %d of %d stretches estimated" % (name, estimated, aligned))


if __name__ == "__main__":
    main()
