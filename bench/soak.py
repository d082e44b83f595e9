#!/usr/bin/env python3
"""Soak: live training and scraping for --minutes, loopback only, and the memory of the process
that holds the extension.

Processes, all on 127.0.0.1 and all stopped at the end (each in its own process group):
  emulator    python3 -m precisionprobe.emulator live, following the jobs' events and serving
              emulated DCGM counters for one GPU (profile dlrm), 100 ms windows;
  prometheus  Debian's Prometheus scraping the emulator every 100 ms (storage in the work dir);
  training    back-to-back CPU DLRM jobs under the hook client (python3 -m precisionprobe run --
              python3 -m precisionprobe.workloads.dlrm, small, one torch thread), a new job id
              every --job-minutes, so the tables see jobs start, run and finish;
  this one    a SQLite connection (a WAL database file in the work dir) with the extension
              loaded, refreshing every --refresh-seconds as docs/reference/attribution.md says
              to in a loop (BEGIN IMMEDIATE; SELECT * FROM pp_refresh(mirror); COMMIT) and reading
              the whole of layer_metrics after each, sampling its own resident memory (VmRSS).

The pace is accelerated and bounded. Samples: one per 100 ms per metric, 300 times the 30 s of
dcgm-exporter's default, so 30 minutes hold the samples of 150 hours of a default scrape. Events:
the jobs train as fast as the CPU lets them, and the soak holds them to --events-per-second
(default 1000, about 60 DLRM steps a second) by pausing the job's process group (SIGSTOP, then
SIGCONT once the count is back on pace), so disk use does not depend on the machine's speed:
about 0.35 KB per event for the events and again for the emulator's mirror, plus the database.

At the end: one row per minute (largest RSS in that minute, layer_metrics rows, events and
samples stored, median refresh time (BEGIN IMMEDIATE to COMMIT), sizes of the -wal file and
the database file), and whether memory is flat: after a warm-up (the first fifth of the run,
at least a minute) the largest RSS of the last minute may exceed the largest RSS of the first
minute after warm-up by at most max(8 MiB, 5%); then the refresh time and the database file's
size in those two minutes. --retention-minutes M sets event_retention_minutes for every refresh.

  PYTHONPATH=python /usr/bin/python3 bench/soak.py [--minutes 30] [--retention-minutes M]
      [--extension build/precisionprobe]

Needs build/precisionprobe.so (scripts/build.sh), prometheus, and Debian's python3-torch.
"""
import argparse
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from precisionprobe.harness import processes, prometheus
from precisionprobe.harness.processes import child_environment

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"  # Debian's, with torch
SMALL_DLRM = ["--batch-size", "16", "--mlp-bot", "32-16-8", "--mlp-top", "64-32-16-1",
              "--rows-per-table", "100", "--quiet", "--threads", "1"]
INTERVAL_MS = 100


def rss_kib(pid="self"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class EventCounter:
    """Complete lines written so far below a directory, read incrementally."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.offsets = {}
        self.lines = 0

    def count(self):
        for path in self.directory.rglob("*.jsonl"):
            offset = self.offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            self.lines += data.count(b"\n", 0, end)
            self.offsets[path] = offset + end
        return self.lines


class Training(threading.Thread):
    """Back-to-back DLRM jobs under the hook client, held to a number of events per second."""

    def __init__(self, run_dir, deadline, job_seconds, events_per_second, log):
        super().__init__(daemon=True)
        self.run_dir, self.deadline = Path(run_dir), deadline
        self.job_seconds, self.rate, self.log = job_seconds, events_per_second, log
        self.counter = EventCounter(run_dir)
        self.process = None
        self.jobs = 0
        self.paused_s = 0.0
        self.failures = []
        self.stopping = threading.Event()

    def run(self):
        start = time.monotonic()
        while not self.stopping.is_set() and time.monotonic() < self.deadline - 5:
            self.jobs += 1
            job = f"soak-{self.jobs:03d}"
            seconds = max(5.0, min(self.job_seconds, self.deadline - time.monotonic() - 5))
            self.process = processes.start(
                [PYTHON, "-m", "precisionprobe", "run", "--out", str(self.run_dir / job), "--job-id", job,
                 "--", PYTHON, "-m", "precisionprobe.workloads.dlrm", *SMALL_DLRM,
                 "--iterations", "1000000000", "--seconds", f"{seconds:.0f}"],
                self.log, env=child_environment())
            paused = False
            while self.process.poll() is None:
                if self.stopping.is_set() or time.monotonic() > self.deadline:
                    break
                ahead = self.counter.count() > self.rate * (time.monotonic() - start)
                if ahead != paused:
                    os.killpg(self.process.pid, signal.SIGSTOP if ahead else signal.SIGCONT)
                    paused = ahead
                time.sleep(0.05)
                if paused:
                    self.paused_s += 0.05
            if paused:
                os.killpg(self.process.pid, signal.SIGCONT)
            # --seconds counts training time only, so a paused job runs past its turn: stop it,
            # and what is left of its group (a child whose parent died would train on, unpaced).
            processes.stop(self.process, timeout=15)
            if self.process.returncode not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
                self.failures.append(f"{job} exited with {self.process.returncode}")
        self.counter.count()


def main():
    # SIGTERM (timeout, a CI runner) cleans up like Ctrl-C: the finally below stops every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--events-per-second", type=float, default=1000)
    parser.add_argument("--job-minutes", type=float, default=5)
    parser.add_argument("--refresh-seconds", type=float, default=2)
    parser.add_argument("--retention-minutes", type=int, default=0,
                        help="event_retention_minutes for every refresh (default 0: keep everything)")
    parser.add_argument("--work-dir", help="default: a new temporary directory, removed at the end")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if shutil.which("prometheus") is None:
        sys.exit("soak: needs prometheus (scripts/setup.sh installs it)")
    if not Path(args.extension + ".so").exists() and not Path(args.extension).exists():
        sys.exit(f"soak: no extension at {args.extension} (run scripts/build.sh)")

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="pp-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    run_dir, mirror_dir = work / "run", work / "run.emulated"
    run_dir.mkdir(exist_ok=True)
    log = open(work / "processes.log", "w")
    seconds = args.minutes * 60
    emulator = prometheus_process = training = None
    try:
        emulator = processes.start(
            [PYTHON, "-m", "precisionprobe.emulator", "live", "--events", str(run_dir),
             "--mirror", str(mirror_dir), "--profile", "dlrm",
             "--port", "0", "--interval-ms", str(INTERVAL_MS), "--lag-ms", "1000",
             "--duration", str(int(seconds + 300))],
            env=child_environment(), stdout=subprocess.PIPE, stderr=log, text=True)
        first_line = emulator.stdout.readline()
        match = re.search(r"serving http://127\.0\.0\.1:(\d+)/.*\((GPU-[0-9a-f-]+)\)", first_line)
        if not match:
            sys.exit(f"soak: the emulator did not start: {first_line!r} (see {work / 'processes.log'})")
        emulator_port, uuid = int(match.group(1)), match.group(2)
        threading.Thread(target=lambda: [None for _ in emulator.stdout], daemon=True).start()

        prometheus_process, prometheus_url = prometheus.scrape([emulator_port], work, log, INTERVAL_MS)
        prometheus.wait_scraped(prometheus_url, 1, 60, prometheus_process)

        conn = sqlite3.connect(work / "soak.db", isolation_level=None)  # BEGIN and COMMIT are ours
        conn.execute("PRAGMA journal_mode=WAL")
        conn.enable_load_extension(True)
        conn.load_extension(args.extension)
        conn.execute("SELECT pp_config('prometheus_url', ?)", (prometheus_url,))
        conn.execute("SELECT pp_config('event_retention_minutes', ?)", (args.retention_minutes,))
        print(f"soak: {args.minutes:g} min in {work}; emulator 127.0.0.1:{emulator_port} ({uuid}), "
              f"Prometheus {prometheus_url} scraping every {INTERVAL_MS} ms; "
              f"training held to {args.events_per_second:g} events/s; "
              + (f"event_retention_minutes = {args.retention_minutes}" if args.retention_minutes else "no retention"),
              flush=True)

        db_file, wal_file = work / "soak.db", work / "soak.db-wal"
        start = time.monotonic()
        end = start + seconds
        training = Training(run_dir, end, args.job_minutes * 60, args.events_per_second, log)
        training.start()
        minutes = {}  # minute -> {"rss": [...], "rows": n, "events": n, "samples": n, "refresh": [...]}
        errors = []
        final = False
        while True:
            now = time.monotonic()
            final = now >= end
            began = time.perf_counter()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("SELECT * FROM pp_refresh(?, ?)", (str(mirror_dir), 1 if final else 0)).fetchall()
                conn.execute("COMMIT")
                took = time.perf_counter() - began  # the refresh alone: the reads below count rows
                rows = len(conn.execute("SELECT * FROM layer_metrics").fetchall())
                events, samples = conn.execute(
                    "SELECT (SELECT count(*) FROM pp_events), (SELECT count(*) FROM pp_samples)").fetchone()
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                errors.append(str(e))
                if len(errors) == 1:
                    print(f"soak: refresh failed: {e}", file=sys.stderr, flush=True)
                rows = events = samples = None
                took = time.perf_counter() - began
            minute = min(int((now - start) // 60), max(0, int(seconds // 60) - 1) if seconds >= 60 else 0)
            m = minutes.setdefault(minute, {"rss": [], "refresh": []})
            m["rss"].append(rss_kib())
            m["refresh"].append(took)
            m["wal"] = max(m.get("wal", 0), wal_file.stat().st_size if wal_file.exists() else 0)
            m["db"] = db_file.stat().st_size
            if rows is not None:
                m.update(rows=rows, events=events, samples=samples)
            if final:
                break
            time.sleep(max(0.0, min(args.refresh_seconds - (time.perf_counter() - began), end - time.monotonic())))
        training.stopping.set()
        training.join(timeout=60)

        print(f"\n{'minute':>6} {'RSS MiB':>8} {'layer_metrics rows':>19} {'events':>10} {'samples':>9} "
              f"{'refresh ms':>10} {'WAL MiB':>8} {'db MiB':>7}")
        for minute in sorted(minutes):
            m = minutes[minute]
            print(f"{minute + 1:>6} {max(m['rss']) / 1024:>8.1f} {m.get('rows', 0):>19} {m.get('events', 0):>10} "
                  f"{m.get('samples', 0):>9} {statistics.median(m['refresh']) * 1000:>10.0f} "
                  f"{m.get('wal', 0) / 2**20:>8.1f} {m.get('db', 0) / 2**20:>7.1f}")
        elapsed = time.monotonic() - start
        written = training.counter.count()
        disk = sum(p.stat().st_size for p in work.rglob("*") if p.is_file()) / 2**20
        print(f"\n{training.jobs} jobs, {written} events written ({written / elapsed:.0f}/s; jobs paused "
              f"{training.paused_s:.0f} s to hold the pace), {sum(len(m['refresh']) for m in minutes.values())} "
              f"refreshes, {len(errors)} failed; work dir {disk:.0f} MiB")
        for failure in training.failures:
            print(f"training: {failure}")
        order = sorted(minutes)
        warm = max(1, round(len(order) / 5))
        flat = None
        if len(order) > warm + 1:
            first = max(minutes[order[warm]]["rss"]) / 1024
            last = max(minutes[order[-1]]["rss"]) / 1024
            allowed = max(8.0, 0.05 * first)
            flat = last - first <= allowed
            print(f"memory {'flat' if flat else 'GROWING'}: {first:.1f} MiB in minute {order[warm] + 1} "
                  f"(after {warm} min of warm-up), {last:.1f} MiB in minute {order[-1] + 1} "
                  f"({last - first:+.1f} MiB; allowed {allowed:.1f})")
            refresh_first = statistics.median(minutes[order[warm]]["refresh"]) * 1000
            refresh_last = statistics.median(minutes[order[-1]]["refresh"]) * 1000
            db_first, db_last = minutes[order[warm]]["db"] / 2**20, minutes[order[-1]]["db"] / 2**20
            print(f"refresh: median {refresh_first:.0f} ms in minute {order[warm] + 1}, {refresh_last:.0f} ms in "
                  f"minute {order[-1] + 1} ({refresh_last / refresh_first:.2f}x); database file {db_first:.0f} MiB, "
                  f"then {db_last:.0f} MiB")
        else:
            print("memory: run too short to judge (needs warm-up plus two minutes)")
        if errors:
            print(f"first refresh error: {errors[0]}")
        return 0 if (flat is not False and not errors and not training.failures) else 1
    finally:
        if training is not None:
            training.stopping.set()
        processes.stop(training and training.process, emulator, prometheus_process, timeout=15)
        log.close()
        if not args.keep and not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
