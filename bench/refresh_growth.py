#!/usr/bin/env python3
"""Does a refresh cost only its new data? The refresh of one new minute of a running job, timed
after a short history and again after a long one, with the ratio printed.

One job on --gpus GPUs (default 1) runs a DLRM-like step of 42 layer calls (21 forward, 21
backward: Linear, ReLU, EmbeddingBag, Sigmoid, MSELoss) at --events-per-second per GPU (default
1,000, the production rate of a GPU that runs a 40 ms step), with a data-loading gap between
steps. Each GPU's six metrics are sampled every 100 ms: every window's value is what its layers
make it (the share of the window each layer type ran times its activity), stored 120 ms after
the window ends as a scrape would store it, so the align step estimates the offset as it does on
a real cluster. Events and samples are inserted straight into pp_events and pp_samples (what
pp_refresh's import and fetch add; both read only what is new by construction: the files from
where the last refresh stopped, Prometheus from the last stored sample), and each refresh is
`pp_refresh(NULL)` with attribution_margin_seconds so large that the job is still running: the
steps measured are the align step, the fold, the dedup history and the report tables.

History is folded in refreshes of --refresh-minutes each (default 10; 1 is a node's refresh loop
once a minute); then one new minute is inserted and its
refresh is timed in a fresh process (wall, CPU, that process's peak RSS), at each hour of
--hours (default 0.25,2): --runs times (default 3), each on a copy of the database made once
the disk has caught up (os.sync: the dirty pages of the copy and of the last checkpoint would
otherwise be written back during the timed refresh), printing the run of median wall time and
the range of all. The measured refresh is not kept: the events, samples and size printed are
the database's before it, and the next refresh of the history folds the new minute too. The last
line is the ratio of the last hour's refresh to the first's.
With --retention-minutes M every refresh runs with event_retention_minutes = M: the database
then keeps the last M minutes of events and samples (and up to --refresh-minutes more, waiting
for the next refresh), and its size stops growing with history.

  /usr/bin/python3 bench/refresh_growth.py [--hours 0.25,2] [--gpus 1] [--retention-minutes M]
      [--refresh-minutes 10] [--events-per-second 1000] [--runs 3] [--extension build/precisionprobe]
      [--db PATH]

About 1.5 minutes per hour of history per GPU at 1,000 events/s on the 2-core VM (mostly
inserting and folding the history); without retention the database takes about 0.85 GB per
GPU-hour.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY"]
# Per layer type: DRAM, FP32, SM active, SM occupancy while it runs (emulation inputs).
ACTIVITY = {"Linear": (0.30, 0.65, 0.90, 0.42), "ReLU": (0.62, 0.12, 0.57, 0.60),
            "EmbeddingBag": (0.82, 0.06, 0.50, 0.30), "Sigmoid": (0.35, 0.20, 0.30, 0.23),
            "MSELoss": (0.23, 0.15, 0.25, 0.18)}
# One step's forward layers: (name, type, forward ms); backward runs them in reverse at 1.5x.
FORWARD = ([("bot_l.%d" % i, "Linear" if i % 2 == 0 else "ReLU", 0.6 if i % 2 == 0 else 0.1) for i in range(6)]
           + [("emb_l.%d" % i, "EmbeddingBag", 0.5) for i in range(8)]
           + [("top_l.%d" % i, "Linear" if i % 2 == 0 else "ReLU", 0.8 if i % 2 == 0 else 0.1) for i in range(5)]
           + [("top_l.5", "Sigmoid", 0.05), ("loss_fn", "MSELoss", 0.05)])
WINDOW_MS = 100
OFFSET_MS = 120  # stored time after the window's end
MINUTE_NS = 60 * 10**9


class Timeline:
    """A job's calls on one GPU from t0_ns on, generated minute by minute, and its windows."""

    def __init__(self, gpu, t0_ns, events_per_second, rng):
        self.gpu, self.uuid, self.rng = gpu, f"GPU-{gpu:08d}-0000-4000-8000-00000000bench", rng
        self.t = t0_ns
        calls = [(n, k, ms, True) for n, k, ms in FORWARD] + [(n, k, 1.5 * ms, False) for n, k, ms in reversed(FORWARD)]
        self.names = [c[0] for c in calls]
        self.types = [c[1] for c in calls]
        self.forward = np.array([c[3] for c in calls])
        base = np.array([c[2] for c in calls]) * 1e6
        # The step's length sets the event rate: layers as above, the rest a gap between steps.
        step_ns = len(calls) * 1e9 / events_per_second
        scale = min(1.0, 0.8 * step_ns / base.sum())
        self.durations_ns = base * scale
        self.gap_ns = step_ns - self.durations_ns.sum()
        self.previous = (np.zeros(0, np.int64),) * 3  # the calls that reach windows not given yet
        self.next_end = (t0_ns // (WINDOW_MS * 10**6) + 1) * WINDOW_MS * 10**6  # the next window's end

    def minute(self, length_ns=MINUTE_NS):
        """The calls that start in the next minute (or length_ns): arrays start_ns, end_ns, call index."""
        end_of_minute = self.t + length_ns
        starts, ends, index = [], [], []
        n = len(self.durations_ns)
        while self.t < end_of_minute:
            jitter = self.rng.uniform(0.9, 1.1, n)
            d = self.durations_ns * jitter
            launch = self.rng.uniform(3e3, 4e4, n)
            s = self.t + np.cumsum(launch + np.concatenate([[0], d[:-1]]))
            starts.append(s.astype(np.int64))
            ends.append((s + d).astype(np.int64))
            index.append(np.arange(n))
            self.t = int(s[-1] + d[-1] + self.gap_ns * self.rng.uniform(0.8, 1.2))
        return np.concatenate(starts), np.concatenate(ends), np.concatenate(index)

    def windows(self, starts, ends, index):
        """The six metric values of each 100 ms window from the last one given up to the start of
        the minute's last call (every call that can reach into them is known): window ends, values."""
        starts, ends, index = (np.concatenate([a, b]) for a, b in zip(self.previous, (starts, ends, index)))
        window_ends = np.arange(self.next_end, starts[-1], WINDOW_MS * 10**6, dtype=np.int64)
        if len(window_ends):
            self.next_end = int(window_ends[-1]) + WINDOW_MS * 10**6
        keep = ends > self.next_end - WINDOW_MS * 10**6  # the calls that reach the windows still to come
        self.previous = (starts[keep], ends[keep], index[keep])
        lo, hi = window_ends - WINDOW_MS * 10**6, window_ends
        types = np.array([self.types[i] for i in index])
        values = np.zeros((len(window_ends), len(METRICS)))
        busy = np.zeros(len(window_ends))
        for kind, (dram, fp32, sm, occ) in ACTIVITY.items():
            mask = types == kind
            covered = coverage(starts[mask], ends[mask], lo, hi)
            busy += covered
            values[:, 2:] += np.outer(covered, [dram, fp32, sm, occ])
        values[:, 0] = np.round(100 * busy)
        values[:, 1] = 24000 + np.round(500 * busy)
        values[:, 2:] = np.round(values[:, 2:], 6)
        return window_ends, values


def coverage(starts, ends, lo, hi):
    """The share of each window [lo, hi) covered by the (non-overlapping, sorted) calls."""
    if len(starts) == 0:
        return np.zeros(len(lo))
    cumulative = np.concatenate([[0], np.cumsum(ends - starts)])

    def covered_until(t):
        i = np.searchsorted(starts, t, side="right")  # calls starting before t
        done = cumulative[np.maximum(i - 1, 0)]
        last = np.maximum(i - 1, 0)
        partial = np.clip(t - starts[last], 0, ends[last] - starts[last])
        return np.where(i > 0, done + partial, 0)
    return (covered_until(hi) - covered_until(lo)) / (hi - lo)


def connect(extension, path, retention_minutes):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.execute("SELECT pp_config('attribution_margin_seconds', 1000000000)")  # the job still runs
    conn.execute("SELECT pp_config('event_retention_minutes', ?)", (retention_minutes,))
    return conn


def insert_minute(conn, timelines, line, job="bench", length_ns=MINUTE_NS):
    """One minute (or length_ns) of every GPU's calls (of `job`, in its file) and the windows
    that end in it; returns the next line number."""
    conn.execute("BEGIN")
    for tl in timelines:
        starts, ends, index = tl.minute(length_ns)
        rows = [(job, "node", tl.uuid, tl.gpu, tl.names[i], tl.types[i], int(tl.forward[i]), int(s), int(e),
                 s / 1e9, e / 1e9, 4.0, job, line + k)
                for k, (s, e, i) in enumerate(zip(starts.tolist(), ends.tolist(), index.tolist()))]
        line += len(rows)
        conn.executemany(
            "INSERT INTO pp_events(job_id, host_name, gpu_uuid, gpu, layer, layer_type, forward, t_start_ns, t_end_ns, "
            "t_start, t_end, cpu_num, source_file, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        window_ends, values = tl.windows(starts, ends, index)
        stored = (window_ends // 10**6 + OFFSET_MS).tolist()
        conn.executemany("INSERT OR IGNORE INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                         [(tl.uuid, metric, ts, float(v)) for m, metric in enumerate(METRICS)
                          for ts, v in zip(stored, values[:, m].tolist())])
    conn.execute("COMMIT")
    return line


MEASURE = r"""
import json, resource, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[2], isolation_level=None)
conn.enable_load_extension(True)
conn.load_extension(sys.argv[1])
conn.execute("SELECT pp_config('attribution_margin_seconds', 1000000000)")
conn.execute("SELECT pp_config('event_retention_minutes', ?)", (int(sys.argv[3]),))
wall, cpu = time.perf_counter(), time.process_time()
row = conn.execute("SELECT * FROM pp_refresh(NULL)").fetchone()
print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "windows_folded": int(row[2]),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
conn.close()
"""


def measure(extension, path, retention_minutes, runs):
    """The refresh of the new minute, timed `runs` times, each on its own copy of the database
    made when the disk has caught up (the file's dirty pages written back, which would otherwise
    land in the timed refresh): the run of median wall time, and the spread."""
    copy = path + ".measured"
    timings = []
    for _ in range(runs):
        try:
            shutil.copyfile(path, copy)
            os.sync()
            timings.append(json.loads(subprocess.run([sys.executable, "-c", MEASURE, extension, copy,
                                                      str(retention_minutes)],
                                                     check=True, capture_output=True, text=True).stdout))
        finally:
            for leftover in (copy, copy + "-wal", copy + "-shm"):
                if os.path.exists(leftover):
                    os.remove(leftover)
    timings.sort(key=lambda t: t["wall_s"])
    median = dict(timings[len(timings) // 2])
    median["wall_range"] = (timings[0]["wall_s"], timings[-1]["wall_s"])
    return median


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", default="0.25,2", help="history lengths at which to time a refresh")
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--events-per-second", type=float, default=1000, help="per GPU")
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--db", help="the database (default: a temporary file, removed at the end)")
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--runs", type=int, default=3, help="timed refreshes of each new minute (the median is printed)")
    parser.add_argument("--retention-minutes", type=int, default=0,
                        help="event_retention_minutes for every refresh (default 0: keep everything)")
    parser.add_argument("--refresh-minutes", type=int, default=10,
                        help="the history is folded in refreshes of this many minutes each")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.refresh_minutes < 1:
        parser.error("--refresh-minutes must be at least 1")
    hours = sorted(float(h) for h in args.hours.split(","))
    with tempfile.TemporaryDirectory(prefix="pp-growth-") as tmp:
        path = args.db or str(Path(tmp) / "growth.db")
        if os.path.exists(path):
            sys.exit(f"refresh_growth: {path} exists; give a new --db")
        conn = connect(args.extension, path, args.retention_minutes)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("SELECT pp_install_views()")
        rng = np.random.default_rng(args.seed)
        t0 = (int(time.time()) - int(3600 * (hours[-1] + 1))) * 10**9  # recent, and the job still running
        timelines = [Timeline(g, t0, args.events_per_second, rng) for g in range(args.gpus)]
        print(f"one job on {args.gpus} GPU(s) at {args.events_per_second:g} events/s each, 100 ms samples; "
              f"a refresh of one new minute after each of {', '.join(f'{h:g}' for h in hours)} hour(s) of history; "
              + (f"event_retention_minutes = {args.retention_minutes}" if args.retention_minutes else "no retention")
              + f", history refreshed every {args.refresh_minutes} minute(s)")
        print(f"{'history':>8} {'events':>11} {'samples':>11} {'db MB':>7} {'fold s':>7} | "
              f"{'refresh wall s':>14} {'(range)':>13} {'cpu s':>6} {'peak RSS MB':>11} {'windows':>7}")
        minutes, line, results = 0, 0, []
        started = time.perf_counter()
        for h in hours:
            fold_time = 0.0
            while minutes < round(h * 60):
                line = insert_minute(conn, timelines, line)
                minutes += 1
                if minutes % args.refresh_minutes == 0 or minutes == round(h * 60):
                    t = time.perf_counter()
                    conn.execute("SELECT * FROM pp_refresh(NULL)").fetchone()
                    fold_time += time.perf_counter() - t
            line = insert_minute(conn, timelines, line)  # the new minute
            minutes += 1
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:  # the copy is of the main file alone: everything must be in it
                sys.exit("refresh_growth: the WAL checkpoint could not finish; is another process using the database?")
            measured = measure(args.extension, path, args.retention_minutes, args.runs)
            events = conn.execute("SELECT count(*) FROM pp_events").fetchone()[0]
            samples = conn.execute("SELECT count(*) FROM pp_samples").fetchone()[0]
            size = os.path.getsize(path) / 1e6
            results.append(measured)
            print(f"{h:>7g}h {events:>11,} {samples:>11,} {size:>7.0f} {fold_time:>7.1f} | "
                  f"{measured['wall_s']:>14.3f} {'%.2f-%.2f' % measured['wall_range']:>13} {measured['cpu_s']:>6.3f} "
                  f"{measured['peak_rss_mb']:>11.1f} "
                  f"{measured['windows_folded']:>7}", flush=True)
        first, last = results[0], results[-1]
        print(f"refresh of one new minute at {hours[-1]:g} h / at {hours[0]:g} h: wall "
              f"{last['wall_s'] / first['wall_s']:.2f}x, CPU {last['cpu_s'] / first['cpu_s']:.2f}x, peak RSS "
              f"{last['peak_rss_mb'] / first['peak_rss_mb']:.2f}x ({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
