#!/usr/bin/env python3
"""The main job: a real PyTorch DLRM run observed by the hook client, GPU counters through a
real Prometheus, attribution in SQL, the paper's tables and figures.

Without --prometheus there is no GPU here, so the counters come from the DCGM EMULATOR
(python/precisionprobe/emulator, profile emulator/profiles/dlrm.json): it follows the job's layer
events and serves dcgm-exporter's /metrics, which a local Prometheus scrapes every 100 ms, with
real dcgm-exporter timing (no timestamps: Prometheus stores its scrape times, each some 300 ms
after the end of the DCGM window served, the live emulator's exporter latency plus the scrape's
phase, which pp_refresh's align step estimates from the data).
Only the layer timings are measured; every counter value is the emulator's. With --prometheus URL
the job reads a real dcgm-exporter's Prometheus instead and starts no emulator.

Steps: start Prometheus (loopback, temporary storage) and the emulator; train the CPU DLRM under
`python3 -m precisionprobe run` for --seconds; `python3 -m precisionprobe analyze` refreshes the
events into OUT/precisionprobe.db (pp_refresh) and writes OUT/report.md; the sample alignment,
Table II, the per-type estimates and Table III through the sqlite3 shell with .load (the SQL
path); OUT/figure2a.png and OUT/figure2b.png; last, the analyze report in the terminal. Every
process it starts is stopped, on Ctrl-C or failure too.

scripts/main.sh runs it with python/ on PYTHONPATH; by hand, from the repository's root:
  PYTHONPATH=$PWD/python /usr/bin/python3 scripts/main_job.py [--seconds 60]
"""
import argparse
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from precisionprobe.harness import prometheus
from precisionprobe.harness.ports import free_port
from precisionprobe.harness.processes import Processes, child_environment

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"
EXTENSION = ROOT / "build" / "precisionprobe"
INTERVAL_MS = 100


def shell(database, sql):
    """Runs SQL in the sqlite3 shell with the extension loaded, as a user would."""
    script = f".load {EXTENSION}\n.mode box\n{sql}\n"
    result = subprocess.run(["sqlite3", str(database)], input=script, text=True, capture_output=True)
    sys.stdout.write(result.stdout)
    if result.returncode or result.stderr:
        raise SystemExit(f"sqlite3: {result.stderr.strip()}")


REPORT = """
.print 'How stored sample times relate to the DCGM windows (sample_alignment), per GPU: a sample'
.print 'stored at t describes the window that ended offset_ms before t.'
SELECT substr(uuid, 1, 12) AS gpu, count(*) AS stretches, sum(samples) AS samples,
       round(min(offset_ms), 1) AS offset_min, round(max(offset_ms), 1) AS offset_max,
       round(max(timing_ms), 2) AS timing_ms, max(window_ms) AS window_ms, sum(repeats) AS repeats,
       sum(skipped) AS skipped, group_concat(DISTINCT status) AS status
  FROM sample_alignment GROUP BY uuid;
.print ''
.print 'Table II (layer_metrics): overlap-weighted means per layer; resolution < 1 means the layer is'
.print 'shorter than one sample window, so its row blends neighbouring layers (see the estimates).'
SELECT layer, forward AS fwd, data_num AS n,
       round(gpu_util, 1) AS util, round(gpu_mem) AS mem, round(dram_active, 3) AS dram,
       round(fp32_active, 3) AS fp32, round(sm_occupancy, 3) AS sm_occ, round(sm_active, 3) AS sm_act,
       calls, round(mean_duration_ms, 2) AS ms, round(resolution, 2) AS res
  FROM layer_metrics WHERE job_id = '{job}' ORDER BY layer = '(untracked)', layer, fwd DESC;
.print ''
.print 'Per layer type (Figure 2): overlap means beside the estimator (90% intervals).'
SELECT m.layer_type AS type,
       CASE WHEN m.layer_type = '(untracked)' THEN '' WHEN m.forward THEN 'fwd' ELSE 'bwd' END AS dir,
       round(m.gpu_util, 1) AS util_ovl, round(e.estimate, 1) AS util_est,
       printf('%.1f-%.1f', e.lower90, e.upper90) AS util_90,
       round(m.dram_active, 3) AS dram_ovl, round(d.estimate, 3) AS dram_est,
       CASE e.confidence WHEN 'identified' THEN 'yes' ELSE 'no' END AS identified
  FROM layer_type_metrics AS m
  LEFT JOIN layer_type_estimates AS e ON e.job_id = m.job_id AND e.layer_type = m.layer_type
        AND e.forward = m.forward AND e.metric = 'DCGM_FI_DEV_GPU_UTIL'
  LEFT JOIN layer_type_estimates AS d ON d.job_id = m.job_id AND d.layer_type = m.layer_type
        AND d.forward = m.forward AND d.metric = 'DCGM_FI_PROF_DRAM_ACTIVE'
 WHERE m.job_id = '{job}' ORDER BY m.layer_type, m.forward DESC;
.print ''
.print 'Table III (job_overview):'
SELECT job_id, parameters, gpus, layers, round(gpu_util, 2) AS gpu_util,
       round(gpu_mem_gib, 2) AS mem_gib, round(dram_active, 3) AS dram, round(fp32_active, 3) AS fp32,
       round(sm_active, 3) AS sm_act, round(gpu_seconds, 1) AS gpu_s
  FROM job_overview WHERE job_id = '{job}';
"""


def draw_figures(database, job, out, emulated):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(str(EXTENSION))
    source = ("EMULATED counters (DCGM emulator, profile dlrm.json); layer timings measured on CPU"
              if emulated else "DCGM counters from Prometheus")
    rows = conn.execute(
        "SELECT m.layer_type, m.forward, m.gpu_util, m.dram_active, m.fp32_active, m.sm_active, "
        "m.sm_occupancy FROM layer_type_metrics AS m WHERE m.job_id = ? AND m.layer_type <> '(untracked)' "
        "ORDER BY m.layer_type", (job,)).fetchall()
    estimates = {(t, f, metric): (e, lo, hi, ok) for t, f, metric, e, lo, hi, ok in conn.execute(
        "SELECT layer_type, forward, metric, estimate, lower90, upper90, confidence = 'identified' "
        "FROM layer_type_estimates WHERE job_id = ?", (job,))}
    types = sorted({r[0] for r in rows})

    def bars(ax, metric, column, label):
        width = 0.2
        for k, (forward, name) in enumerate(((1, "forward"), (0, "backward"))):
            overlap = [next((r[column] for r in rows if r[0] == t and r[1] == forward), None) for t in types]
            est = [estimates.get((t, forward, metric), (None, None, None, False)) for t in types]
            xs = [i + (k - 0.5) * 2 * width for i in range(len(types))]
            ax.bar([x - width / 2 for x in xs], [v or 0 for v in overlap], width, label=f"{name}: overlap mean")
            # The estimator with its 90% interval; hatched where the data do not identify it.
            bars_ = ax.bar([x + width / 2 for x in xs], [e[0] or 0 for e in est], width,
                           label=f"{name}: estimator (hatched: not identified)",
                           yerr=[[max(0, (e[0] or 0) - (e[1] if e[1] is not None else (e[0] or 0))) for e in est],
                                 [max(0, (e[2] if e[2] is not None else (e[0] or 0)) - (e[0] or 0)) for e in est]],
                           capsize=2)
            for bar, e in zip(bars_, est):
                if not e[3]:
                    bar.set_hatch("//")
                    bar.set_alpha(0.5)
        ax.set_xticks(range(len(types)), types, rotation=20)
        ax.set_ylabel(label)

    fig, ax = plt.subplots(figsize=(10, 4.5))
    bars(ax, "DCGM_FI_DEV_GPU_UTIL", 2, "GPU utilization (%)")
    ax.set_title(f"Figure 2a: GPU utilization per layer type, {job}\n{source}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(out / "figure2a.png", dpi=110)

    fig, axes = plt.subplots(2, 2, figsize=(12, 7))
    for ax, (metric, column, label) in zip(axes.flat, (
            ("DCGM_FI_PROF_DRAM_ACTIVE", 3, "DRAMActive"), ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", 4, "FP32Active"),
            ("DCGM_FI_PROF_SM_ACTIVE", 5, "SMActive"), ("DCGM_FI_PROF_SM_OCCUPANCY", 6, "SMOccupancy"))):
        bars(ax, metric, column, label)
    axes.flat[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(f"Figure 2b: DRAM, FP32, SM activity per layer type, {job}\n{source}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "figure2b.png", dpi=110)
    print(f"\nfigures: {out / 'figure2a.png'}, {out / 'figure2b.png'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prometheus", help="a real dcgm-exporter's Prometheus (no emulator then)")
    parser.add_argument("--seconds", type=float, default=60, help="training time (default 60)")
    parser.add_argument("--job-id", default="dlrm-main")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "main")
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds after training that analyze --final waits at most for the samples of "
                             "the last calls (its --wait-seconds: default its own, 20, or 65 with --prometheus: "
                             "dcgm-exporter's default interval is 30 s)")
    args = parser.parse_args()
    emulated = args.prometheus is None
    settle = args.settle if args.settle is not None else (None if emulated else 65)

    shutil.rmtree(args.out, ignore_errors=True)
    (args.out / "events").mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="pp-main-"))
    log = open(args.out / "services.log", "w")
    procs = Processes()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = child_environment()
    try:
        if emulated:
            emulator_port = free_port()
            procs.start([PYTHON, "-m", "precisionprobe.emulator", "live",
                         "--events", str(args.out / "events"), "--mirror", str(args.out / "emulated"),
                         "--profile", "dlrm", "--port", str(emulator_port),
                         "--interval-ms", str(INTERVAL_MS), "--noise", "0.005"],
                        log, env=env)
            process, url = prometheus.scrape([emulator_port], work, log, INTERVAL_MS)
            procs.add(process)
            events_for_refresh = args.out / "emulated"
            print(f"Prometheus {url} scraping the DCGM EMULATOR (emulated counters, not a GPU) every "
                  f"{INTERVAL_MS} ms")
        else:
            url = args.prometheus
            events_for_refresh = args.out / "events"
        print(f"training the DLRM for {args.seconds:.0f} s under the hook client ...", flush=True)
        # 200,000 rows per table make the embeddings 98% of the DLRM's parameters, near the paper's
        # 99.5%, so its embedding stage takes the share of a step the paper describes (with 20,000
        # the Linear layers took 80% of a CPU step, and the job read as compute-bound).
        training = subprocess.run(
            [PYTHON, "-m", "precisionprobe", "run", "--out", str(args.out / "events"), "--job-id", args.job_id,
             "--", PYTHON, "-m", "precisionprobe.workloads.dlrm", "--seconds", str(args.seconds),
             "--iterations", "1000000", "--batch-size", "32", "--rows-per-table", "200000", "--threads", "1",
             "--quiet"], env=env, text=True, capture_output=True)
        print(training.stdout.strip())
        print("\n".join(line for line in training.stderr.splitlines() if line.startswith("precisionprobe")))
        if training.returncode:
            raise SystemExit(f"training failed ({training.returncode}):\n{training.stderr[-2000:]}")

        # The answer comes from `precisionprobe analyze`, as a user runs it after a job: it refreshes
        # the database (pp_refresh) and writes the report; the SQL below it is the power path.
        database = args.out / "precisionprobe.db"
        started = time.perf_counter()
        analyze = [PYTHON, "-m", "precisionprobe", "analyze", str(events_for_refresh), "--db", str(database)]
        # --final right after training: analyze waits for the samples of the last calls itself.
        wait = [] if settle is None else ["--wait-seconds", f"{settle:g}"]
        report = subprocess.run([*analyze, "--prometheus", url, "--final", *wait, "--format", "markdown"], env=env,
                                text=True, capture_output=True)
        sys.stderr.write(report.stderr)
        if report.returncode:
            raise SystemExit(report.returncode)
        (args.out / "report.md").write_text(report.stdout)
        print(f"precisionprobe analyze: refreshed {database} in {time.perf_counter() - started:.1f} s; "
              f"report also in {args.out / 'report.md'}\n")
        print("The same data in SQL (sqlite3 shell, .load):")
        shell(database, REPORT.replace("{job}", args.job_id))
        draw_figures(database, args.job_id, args.out, emulated)
        print(f"database: {database}\n")
        print(f"precisionprobe analyze {events_for_refresh} --db {database} --no-refresh:\n", flush=True)
        if subprocess.run([*analyze, "--no-refresh"], env=env).returncode:
            raise SystemExit(1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
