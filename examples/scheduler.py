#!/usr/bin/env python3
"""A GPU co-location scheduler prototype on precisionprobe's result tables, in SQL only.

  /usr/bin/python3 examples/scheduler.py runs/notebook/precisionprobe.db   # docs/notebook/run_workloads.py makes it
  /usr/bin/python3 examples/scheduler.py DB --gpu-memory-gib 32 --max-load 1.0

1. Classify each job from its job-level means (job_overview): memory-bound when its DRAM
   interface is busier than its FP32 pipes (dram_active >= fp32_active), compute-bound
   otherwise. Beside it, the evidence per layer: the share of the job's GPU seconds spent in
   layer groups (type and direction, timings from layer_type_metrics) whose own DRAM and FP32
   activity the estimator tells apart (layer_type_estimates: their 90% intervals do not meet),
   as memory- or compute-leaning by which is higher.
2. Pair a memory-bound job with a compute-bound one. The load of a pair on one resource is the
   sum of the two jobs' job-level means (GPU utilization / 100, DRAM active, FP32 active, SM
   active); a pair fits when every load is at most --max-load and the peak memory of both fits
   --gpu-memory-gib. Pairs are taken greedily, lowest peak load first, each job at most once.
3. Where two jobs have already shared a GPU (colocated_spans), the pair's load is what the GPU
   measured while both were on it, not the sum of their means, and says so; a job that ran on a
   shared GPU is marked, since its job-level means then include the other job's activity.

Reads the database only (the views call the extension's functions, so it is loaded); it
changes nothing. Exit status 0, also when no pair fits.
"""
import argparse
import math
import os
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CLASSIFY = """
WITH groups AS (
  SELECT m.job_id, m.calls * m.mean_duration_ms / 1e3 / o.gpu_seconds AS share,
         d.lower90 AS dram_low, d.upper90 AS dram_high, f.lower90 AS fp32_low, f.upper90 AS fp32_high
    FROM layer_type_metrics AS m JOIN job_overview AS o USING (job_id)
    LEFT JOIN temp.estimates AS d ON d.job_id = m.job_id AND d.layer_type = m.layer_type
          AND d.forward = m.forward AND d.metric = 'DCGM_FI_PROF_DRAM_ACTIVE'
    LEFT JOIN temp.estimates AS f ON f.job_id = m.job_id AND f.layer_type = m.layer_type
          AND f.forward = m.forward AND f.metric = 'DCGM_FI_PROF_PIPE_FP32_ACTIVE'
   WHERE m.layer_type <> '(untracked)' AND o.gpu_seconds > 0)
SELECT o.job_id, o.gpu_util / 100.0 AS util, o.dram_active AS dram, o.fp32_active AS fp32,
       o.sm_active AS sm, o.gpu_mem_peak_gib AS mem_gib,
       CASE WHEN o.dram_active >= o.fp32_active THEN 'memory-bound' ELSE 'compute-bound' END AS class,
       (SELECT coalesce(sum(share), 0) FROM groups AS g WHERE g.job_id = o.job_id AND dram_low > fp32_high)
         AS memory_layers,
       (SELECT coalesce(sum(share), 0) FROM groups AS g WHERE g.job_id = o.job_id AND fp32_low > dram_high)
         AS compute_layers
  FROM job_overview AS o
 WHERE o.gpu_util IS NOT NULL AND o.dram_active IS NOT NULL AND o.fp32_active IS NOT NULL
 ORDER BY o.job_id
"""

# The GPU's own counters over the time two jobs shared it (every GPU they shared, every metric
# averaged over the stored samples of those spans; memory the peak).
MEASURED = """
SELECT c.job_a, c.job_b, (SELECT sum(seconds) FROM colocated_spans AS t
                            WHERE t.job_a = c.job_a AND t.job_b = c.job_b) AS seconds,
       avg(CASE s.metric WHEN 'DCGM_FI_DEV_GPU_UTIL' THEN s.value / 100.0 END) AS util,
       avg(CASE s.metric WHEN 'DCGM_FI_PROF_DRAM_ACTIVE' THEN s.value END) AS dram,
       avg(CASE s.metric WHEN 'DCGM_FI_PROF_PIPE_FP32_ACTIVE' THEN s.value END) AS fp32,
       avg(CASE s.metric WHEN 'DCGM_FI_PROF_SM_ACTIVE' THEN s.value END) AS sm,
       max(CASE s.metric WHEN 'DCGM_FI_DEV_FB_USED' THEN s.value END) / 1024.0 AS mem_gib
  FROM colocated_spans AS c
  JOIN pp_samples AS s ON s.uuid = c.uuid AND s.ts_ms > c.t_from * 1000 AND s.ts_ms <= c.t_through * 1000
 GROUP BY c.job_a, c.job_b
HAVING util IS NOT NULL AND dram IS NOT NULL AND fp32 IS NOT NULL AND sm IS NOT NULL AND mem_gib IS NOT NULL
 ORDER BY c.job_a, c.job_b
"""

PAIRS = """
SELECT m.job_id AS memory_job, c.job_id AS compute_job,
       m.util + c.util AS util, m.dram + c.dram AS dram, m.fp32 + c.fp32 AS fp32, m.sm + c.sm AS sm,
       m.mem_gib + c.mem_gib AS mem_gib,
       max(m.util + c.util, m.dram + c.dram, m.fp32 + c.fp32, m.sm + c.sm) AS peak
  FROM temp.jobs AS m JOIN temp.jobs AS c ON m.class = 'memory-bound' AND c.class = 'compute-bound'
 ORDER BY peak, m.job_id, c.job_id
"""


def shown(job_id):
    """A job id (from event files) as a terminal shows it safely: control characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in job_id)


def positive_number(text):
    """An argparse type: a finite number above 0 (a limit of 0, below it or NaN pairs nothing, and
    printed "each load <= nan" as if it were a limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a number above 0, got '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"needs a finite number above 0, got '{text}'")
    return value


def fail(message):
    """A one-line error on stderr; exit status 1."""
    print(f"scheduler.py: {message}", file=sys.stderr)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="a results database, or a run directory holding one (precisionprobe.db, "
                                         "as precisionprobe analyze RUN_DIR writes it)")
    parser.add_argument("--extension", default=os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe")),
                        help="the extension to load (default $PP_EXTENSION, else build/precisionprobe)")
    parser.add_argument("--gpu-memory-gib", type=positive_number, default=32.0,
                        help="memory of the GPU the pair would share (default 32: the paper's V100)")
    parser.add_argument("--max-load", type=positive_number, default=1.0,
                        help="largest combined load per resource, as a fraction (default 1.0)")
    args = parser.parse_args()

    if Path(args.database).is_dir():  # a run directory, as compare takes it
        if not (Path(args.database) / "precisionprobe.db").is_file():
            return fail(f"no results database at '{args.database}': a directory without precisionprobe.db (make "
                        "one with `precisionprobe analyze RUN_DIR` or pp_refresh)")
        args.database = str(Path(args.database) / "precisionprobe.db")
    if not Path(args.database).is_file():
        return fail(f"no results database at '{args.database}' (make one with `precisionprobe analyze RUN_DIR` "
                    "or pp_refresh)")
    try:
        # (A path as a URI: '#', '?' and '%' in a file name are not read as a URI's parts.)
        conn = sqlite3.connect(f"{Path(args.database).resolve().as_uri()}?mode=ro", uri=True)
        conn.execute("PRAGMA schema_version")  # (sqlite3 opens the file lazily; this reads it)
    except sqlite3.Error as e:
        return fail(f"cannot open '{args.database}': {e}")
    if not hasattr(conn, "enable_load_extension"):  # (pyenv's default build, some macOS builds)
        return fail(f"this Python's sqlite3 module cannot load extensions ({sys.executable}): run the scheduler "
                    "with one whose sqlite3 can, such as Debian's /usr/bin/python3 (docs/troubleshooting.md, "
                    "Loading the extension)")
    try:
        conn.enable_load_extension(True)
        conn.load_extension(args.extension)
    except sqlite3.Error as e:
        return fail(f"cannot load the extension {args.extension}: {e} (build it with scripts/build.sh, or "
                    "give --extension)")
    try:
        # The estimator runs once per (job, metric); keep the two metrics the classification needs.
        conn.execute("CREATE TEMP TABLE estimates AS SELECT job_id, layer_type, forward, metric, lower90, "
                     "upper90 FROM layer_type_estimates "
                     "WHERE metric IN ('DCGM_FI_PROF_DRAM_ACTIVE', 'DCGM_FI_PROF_PIPE_FP32_ACTIVE')")
        conn.execute(f"CREATE TEMP TABLE jobs AS {CLASSIFY}")
    except sqlite3.Error as e:
        return fail(f"'{args.database}' is not a precisionprobe results database ({e})")
    measured = {frozenset((a, b)): row for a, b, *row in conn.execute(MEASURED)}
    shared = {job for pair in conn.execute("SELECT job_a, job_b FROM colocated_spans") for job in pair}

    print("Jobs: job-level means (job_overview), and the share of GPU seconds in layer groups whose")
    print("DRAM and FP32 90% intervals lie apart, DRAM above (memory-leaning) or below (compute-leaning):")
    print(f"{'job':<12} {'class':<14} {'util':>5} {'dram':>5} {'fp32':>5} {'sm':>5} {'peak GiB':>8} "
          f"{'mem layers':>10} {'fp32 layers':>11}")
    for job, util, dram, fp32, sm, mem, cls, mshare, cshare in conn.execute(
            "SELECT job_id, util, dram, fp32, sm, mem_gib, class, memory_layers, compute_layers FROM temp.jobs"):
        print(f"{shown(job):<12} {cls:<14} {util:>5.2f} {dram:>5.2f} {fp32:>5.2f} {sm:>5.2f} {mem:>8.1f} "
              f"{mshare:>10.0%} {cshare:>11.0%}" + ("  (shared a GPU)" if job in shared else ""))
    if shared:
        print("(shared a GPU): its job-level means include the other job's activity (colocated_spans)")
    if measured:
        print("\nMeasured together: the GPU's own counters while two jobs shared it:")
        for pair, (seconds, util, dram, fp32, sm, mem) in sorted(measured.items(), key=lambda kv: sorted(kv[0])):
            a, b = sorted(pair)
            print(f"  {shown(a)} + {shown(b)} ({seconds:.1f} s): util {util:.2f}, dram {dram:.2f}, fp32 {fp32:.2f}, "
                  f"sm {sm:.2f}, memory {mem:.1f} GiB")

    limits = f"each load <= {args.max_load:g}, memory <= {args.gpu_memory_gib:g} GiB"
    print(f"\nCandidate pairs, memory-bound + compute-bound (fit: {limits}):")
    taken, proposed = set(), []
    rows = []
    for mjob, cjob, util, dram, fp32, sm, mem, peak in conn.execute(PAIRS):
        source = ""
        if frozenset((mjob, cjob)) in measured:  # what the GPU did, rather than a sum of means
            seconds, util, dram, fp32, sm, mem = measured[frozenset((mjob, cjob))]
            peak, source = max(util, dram, fp32, sm), f" (measured together, {seconds:.1f} s)"
        rows.append((peak, mjob, cjob, util, dram, fp32, sm, mem, source))
    rows.sort(key=lambda row: row[:3])
    if not rows:
        print("  none: no memory-bound and compute-bound jobs to pair")
    for _, mjob, cjob, util, dram, fp32, sm, mem, source in rows:
        over = [name for name, load in (("util", util), ("dram", dram), ("fp32", fp32), ("sm", sm))
                if load > args.max_load]
        if mem > args.gpu_memory_gib:
            over.append(f"memory {mem:.1f} GiB")
        verdict = "fits" if not over else "over: " + ", ".join(over)
        print(f"  {shown(mjob)} + {shown(cjob)}: util {util:.2f}, dram {dram:.2f}, fp32 {fp32:.2f}, sm {sm:.2f}, "
              f"memory {mem:.1f} GiB{source} -> {verdict}")
        if not over and mjob not in taken and cjob not in taken:
            taken.update((mjob, cjob))
            proposed.append((mjob, cjob))

    print("\nProposal:")
    for mjob, cjob in proposed:
        print(f"  share one GPU: {shown(mjob)} (memory-bound) with {shown(cjob)} (compute-bound)")
    alone = [job for (job,) in conn.execute("SELECT job_id FROM temp.jobs") if job not in taken]
    for job in alone:
        print(f"  own GPU: {shown(job)}")
    if rows and not proposed:
        print(f"  (no pair fits {limits}: a larger GPU (--gpu-memory-gib), or --max-load above 1 to accept "
              "some slowdown, may change that)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (`| head`); stdout to /dev/null for the exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
