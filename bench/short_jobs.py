#!/usr/bin/env python3
"""Where the align step places the windows of stretches no fit places: short jobs after a long one.

One recording of the offline emulator (python/precisionprobe/emulator: the DLRM-like timeline of
bench/accuracy.py, profile dlrm, realistic timing, 100 ms DCGM windows, 0.5% noise, Prometheus
scraping every --scrape-ms) on one GPU: a job of --long-seconds, then --jobs short jobs of
--job-seconds each, one every 5 s, the idle GPU between them and for 10 s after the last. With
max_sample_lag_ms at --lag-ms (1000 by default in the engine), a short job's stretch holds too
few windows to fit (fewer than 8): `not determined`. The idle GPU's stretches are `no layers`.
Neither is placed by its own values; both are placed from the windows before them.

Per status of pp_alignment: how many stored samples its stretches hold, how many of them
pp_windows places within 3 ms of the true window (the recording's schedule), and the worst
error; then, per job kind, the estimator's rows marked identified (of the 5 activity metrics x
10 groups, each short job scored on its own), those more than 5% off the truth, and how many 90%
intervals hold the truth.

  PYTHONPATH=python /usr/bin/python3 bench/short_jobs.py [--extension build/precisionprobe]
      [--seed 1] [--scrape-ms 150] [--lag-ms 300] [--jobs 6] [--job-seconds 0.2]

About 2 s on 2 cores.
"""
import argparse
import sqlite3
import tempfile
from pathlib import Path

import numpy as np

import accuracy
from precisionprobe.emulator import offline
from precisionprobe.emulator.exposition import format_value
from precisionprobe.emulator.profile import METRICS, Profile
from precisionprobe.emulator.timeline import Events, dlrm_timeline
from precisionprobe.emulator.timing import Timing

ROOT = Path(__file__).resolve().parent.parent
PLACED_WITHIN_MS = 3.0
JOB_EVERY_S = 5  # a short job starts every 5 s after the long one


def subset(events, mask):
    return Events(layers=events.layers, layer_id=events.layer_id[mask], forward=events.forward[mask],
                  batch=events.batch[mask], t_start_ns=events.t_start_ns[mask], t_end_ns=events.t_end_ns[mask])


def jobs_timeline(start_ns, args):
    """The calls of every job, and per call the job it belongs to (0: the long one)."""
    seconds = args.long_seconds + JOB_EVERY_S * (args.jobs + 1)
    events = dlrm_timeline(start_ns, seconds, args.seed)
    begin_s = (events.t_start_ns - start_ns) / 1e9
    end_s = (events.t_end_ns - start_ns) / 1e9
    job = np.full(len(events), -1)
    job[end_s < args.long_seconds] = 0
    for k in range(1, args.jobs + 1):
        # From its first call (the 5 s mark may fall in a stall of the timeline).
        first_s = begin_s[np.searchsorted(begin_s, args.long_seconds + JOB_EVERY_S * k)]
        job[(begin_s >= first_s) & (end_s < first_s + args.job_seconds)] = k
    kept = job >= 0
    return subset(events, kept), job[kept], seconds


def refreshed(args, rec, events, job):
    """An in-memory database holding every job's events and the recording's samples, refreshed."""
    with tempfile.TemporaryDirectory(prefix="pp-short-jobs-") as tmp:
        for k in range(args.jobs + 1):
            calls = subset(events, job == k)
            offline.write_job_events(Path(tmp) / f"job{k}.jsonl", calls, job_id=f"job{k}", pod=rec.gpu.pod,
                                     namespace=rec.gpu.namespace, gpu_uuid=rec.gpu.uuid, gpu_index=rec.gpu.index,
                                     pid=k + 1, start_ns=int(calls.t_start_ns[0]), command=("bench", "short_jobs"))
        template = accuracy.import_events(args.extension, Path(tmp))
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    template.backup(conn)
    template.close()
    conn.load_extension(args.extension)
    conn.execute("SELECT pp_config('max_sample_lag_ms', ?)", (args.lag_ms,)).fetchall()
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                     [(rec.gpu.uuid, metric, int(t), float(format_value(metric, v)))
                      for m, metric in enumerate(METRICS) for t, v in zip(rec.tick_ms, rec.samples[:, m])])
    conn.execute("SELECT * FROM pp_refresh(NULL, 1)").fetchone()
    return conn


def placement(conn, rec):
    """{status: (stored samples, placed within 3 ms, worst |error| ms)} over pp_alignment's stretches."""
    true_end = dict(zip(rec.schedule.ts_ms.tolist(), rec.schedule.window_end_ns.tolist()))
    error_ms = {ts: (end - true_end[ts]) / 1e6 for ts, end in conn.execute("SELECT ts_ms, end_ns FROM pp_windows")
                if ts in true_end}
    out = {}
    for from_ms, through_ms, status in conn.execute("SELECT from_ms, through_ms, status FROM pp_alignment "
                                                    "ORDER BY from_ms"):
        errs = [abs(e) for ts, e in error_ms.items() if from_ms < ts <= through_ms]
        n, placed, worst = out.get(status, (0, 0, 0.0))
        out[status] = (n + len(errs), placed + sum(e <= PLACED_WITHIN_MS for e in errs), max([worst] + errs))
    return out


def estimates(conn, truth, job_ids):
    """(identified, identified but more than 5% off, 90% intervals holding the truth, intervals)."""
    identified = wrong = covered = intervals = 0
    for job_id in job_ids:
        solved = accuracy.estimator_method(conn, job_id)
        for group, values in truth.items():
            for metric in accuracy.ACTIVITY:
                entry = solved[metric].get(accuracy.group_name(*group), {})
                value = values[METRICS.index(metric)]
                if entry.get("lower90") is not None and entry.get("upper90") is not None:
                    intervals += 1
                    covered += entry["lower90"] <= value <= entry["upper90"]
                if entry.get("identified"):
                    identified += 1
                    wrong += abs(entry["estimate"] - value) > accuracy.WRONG * value
    return identified, wrong, covered, intervals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scrape-ms", type=float, default=150, help="Prometheus' scrape interval")
    parser.add_argument("--lag-ms", type=int, default=300, help="max_sample_lag_ms")
    parser.add_argument("--jobs", type=int, default=6, help="short jobs after the long one")
    parser.add_argument("--job-seconds", type=float, default=0.2, help="each short job's length")
    parser.add_argument("--long-seconds", type=float, default=60, help="the first job's length")
    args = parser.parse_args()
    accuracy.EXTENSION = args.extension
    start_ns = offline.DEFAULT_START_S * 10**9
    events, job, seconds = jobs_timeline(start_ns, args)
    rec = offline.record(seconds + 2.1, 100, 0.005, args.seed, Profile.named("dlrm"), events=events,
                         timing=Timing(scrape_interval_ms=args.scrape_ms))
    conn = refreshed(args, rec, events, job)
    print(accuracy.provenance(args.extension))
    print(f"seed {args.seed}: a {args.long_seconds:g} s job, then {args.jobs} jobs of {args.job_seconds:g} s; "
          f"scrapes every {args.scrape_ms:g} ms, max_sample_lag_ms {args.lag_ms}")
    for status, (n, placed, worst) in sorted(placement(conn, rec).items()):
        print(f"  {status:<18} {n:4d} stored samples, {placed:4d} placed within {PLACED_WITHIN_MS:g} ms, "
              f"worst {worst:6.2f} ms")
    truth = rec.type_truth()
    for name, job_ids in (("long job", ["job0"]), ("short jobs", [f"job{k}" for k in range(1, args.jobs + 1)])):
        identified, wrong, covered, intervals = estimates(conn, truth, job_ids)
        print(f"  {name:<10} identified {identified:3d}, wrong {wrong}, 90% interval holds the truth "
              f"{covered}/{intervals}")


if __name__ == "__main__":
    main()
