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
"""
import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from refresh_growth import ROOT, Timeline, insert_minute

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
    args = parser.parse_args()
    builds = [("this", args.extension)] + ([("baseline", args.baseline)] if args.baseline else [])
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
