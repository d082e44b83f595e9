#!/usr/bin/env python3
"""Runs the paper's three workloads (DLRM, ResNeXt, GPT-2) under the hook client, at the same
time, each on its own EMULATED GPU, and attributes the counters to their layers in SQL.

There is no GPU here. Each job trains for real on the CPU (small sizes, `--seconds` of training)
and its layer timings are MEASURED by the hook client (`python3 -m precisionprobe run`). Its GPU
counters come from the DCGM EMULATOR (python/precisionprobe/emulator, live mode): one emulator
per job follows that job's events and serves dcgm-exporter's /metrics for one emulated GPU, with
the counter values of the job's profile (python/precisionprobe/emulator/profiles/, one of
dlrm, resnext, gpt2: emulation inputs, not measurements), with real dcgm-exporter timing (no
timestamps: Prometheus stores its scrape times, some 300 ms after the windows served, the live
emulator's exporter latency plus the scrape's phase; pp_refresh's align step estimates that from
the data). A real Prometheus scrapes the three every 100 ms; `pp_refresh` reads the emulators' mirrored events and fetches the samples through
Prometheus' HTTP API, as it would from a real dcgm-exporter.

  PYTHONPATH=$PWD/python /usr/bin/python3 docs/notebook/run_workloads.py --out /tmp/pp-run --seconds 30

Writes OUT/precisionprobe.db (the attribution tables and views), OUT/run.json (what ran, for
how long, each job's summary line) and OUT/services.log. Every process it starts is stopped,
on failure and Ctrl-C too. The notebook docs/notebook/precisionprobe.ipynb calls run().
"""
import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from precisionprobe.emulator.exposition import emulated_uuid
from precisionprobe.emulator.profile import PROFILES
from precisionprobe.harness import prometheus
from precisionprobe.harness.ports import free_port
from precisionprobe.harness.processes import Processes, child_environment

ROOT = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
INTERVAL_MS = 100

# job id -> (workload module, its flags: small sizes for 2 CPU cores, profile). The DLRM keeps the
# paper's MLPs (512-512-64, 1024-1024-1024-1) and 8 tables of dimension 64; 200,000 rows per table
# make the embeddings 98% of its parameters, near the paper's 99.5% (8 x 1M x 64 of 514M), so the
# embedding stage (and SGD's dense update of the tables) takes a large part of a step, as the
# paper describes its model (scripts/main_job.py uses the same; with 20,000 rows the Linear layers
# took 80% of a CPU step in one run here). ResNeXt and GPT-2 build their batches up front, so they cycle a few
# batches over many epochs; --seconds stops every job.
WORKLOADS = {
    "dlrm": ("precisionprobe.workloads.dlrm",
             ["--iterations", "1000000", "--batch-size", "32", "--rows-per-table", "200000"], "dlrm"),
    "resnext": ("precisionprobe.workloads.resnext",
                ["--iterations", "8", "--epochs", "1000000", "--batch-size", "8", "--image-size", "16"],
                "resnext"),
    "gpt2": ("precisionprobe.workloads.gpt2",
             ["--iterations", "8", "--epochs", "1000000", "--batch-size", "4", "--seq-len", "32",
              "--embd", "64", "--vocab", "512"], "gpt2"),
}


def run(out, seconds=30.0, extension=ROOT / "build" / "precisionprobe", jobs=tuple(WORKLOADS), log=print):
    """Runs the jobs at once for `seconds` of training each; returns the database path."""
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="pp-notebook-"))
    services = open(out / "services.log", "w")
    procs = Processes()
    env = child_environment()
    host = socket.gethostname()
    summary = {"seconds": seconds, "interval_ms": INTERVAL_MS, "host": host, "jobs": {}}
    started = time.perf_counter()
    try:
        ports = []
        for index, job in enumerate(jobs):
            port = free_port()
            uuid = emulated_uuid(host, index)
            procs.start([
                PYTHON, "-m", "precisionprobe.emulator", "live", "--events", str(out / "events" / job),
                "--mirror", str(out / "emulated" / job), "--profile", WORKLOADS[job][2],
                "--port", str(port), "--interval-ms", str(INTERVAL_MS), "--noise", "0.005",
                "--seed", str(index), "--gpu-uuid", uuid, "--pod", f"{job}-0", "--namespace", "default"],
                services, env=env)
            ports.append(port)
            # The profile file, relative to the repository (the notebook reads it as ROOT / profile).
            profile = os.path.relpath(str(PROFILES / f"{WORKLOADS[job][2]}.json"), ROOT)
            summary["jobs"][job] = {"gpu_uuid": uuid, "profile": profile}
        process, url = prometheus.scrape(ports, work, services, INTERVAL_MS)
        procs.add(process)
        prometheus.wait_scraped(url, len(jobs), process=process)
        log(f"Prometheus {url} scrapes {len(jobs)} DCGM EMULATORS (emulated counters, not GPUs) "
            f"every {INTERVAL_MS} ms")
        log(f"training {', '.join(jobs)} at the same time, {seconds:g} s each, on the CPU ...")
        training = {}
        for job in jobs:
            module, flags, _ = WORKLOADS[job]
            job_log = open(out / f"{job}.log", "w")
            training[job] = (procs.start([
                PYTHON, "-m", "precisionprobe", "run", "--out", str(out / "events" / job), "--job-id", job,
                "--", PYTHON, "-m", module, "--seconds", str(seconds), "--threads", "1", "--quiet", *flags],
                job_log, env=env), out / f"{job}.log")
        for job, (process, job_log) in training.items():
            if process.wait() != 0:
                raise SystemExit(f"{job} failed ({process.returncode}):\n{job_log.read_text()[-2000:]}")
            lines = job_log.read_text().splitlines()
            summary["jobs"][job]["summary"] = [line for line in lines if line.startswith(job + ":")][-1]
            summary["jobs"][job]["hook_client"] = [line for line in lines if line.startswith("precisionprobe: wrote")][-1]
            log("  " + summary["jobs"][job]["summary"])
        time.sleep(2)  # the emulators publish a window 0.5 s after it ends; Prometheus scrapes it next

        database = out / "precisionprobe.db"
        conn = sqlite3.connect(database)
        conn.enable_load_extension(True)
        conn.load_extension(str(extension))
        conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
        refresh_started = time.perf_counter()
        # (pp_refresh returns its counts as text; int() for the JSON summary. Named columns: its
        # row has more, waiting_end_time NULL when no event waits.)
        row = [int(v) for v in conn.execute(
            "SELECT events_added, samples_added, windows_folded, history_kept, http_requests FROM pp_refresh(?, 1)",
            (str(out / "emulated"),)).fetchone()]
        conn.commit()
        conn.close()
        summary["pp_refresh"] = {"events_added": row[0], "samples_added": row[1], "windows_folded": row[2],
                                 "http_requests": row[4],
                                 "seconds": round(time.perf_counter() - refresh_started, 1)}
        log(f"pp_refresh: {row[0]} events, {row[1]} samples, {row[2]} windows folded, {row[4]} HTTP "
            f"requests, {summary['pp_refresh']['seconds']} s")
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
        services.close()
    summary["wall_seconds"] = round(time.perf_counter() - started, 1)
    (out / "run.json").write_text(json.dumps(summary, indent=2) + "\n")
    return database


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "notebook")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        print(f"database: {run(args.out, args.seconds, args.extension)}")
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
