#!/usr/bin/env python3
"""Does the estimator keep learning for the whole job? Accuracy after 10 minutes, 1 hour and
6 hours of one job streamed as it runs, beside the Cramér-Rao bound of its true design.

One recording of the offline emulator (python/precisionprobe/emulator: the DLRM-like timeline of
bench/accuracy.py, profile dlrm, realistic timing: Prometheus' scrape times, some 30 ms to one
DCGM period after DCGM's drifting windows; 100 ms, 0.5% noise) is streamed into a database file
as a running job fills one: each --chunk-minutes, the calls that started in it go into pp_events
and the samples stored in it into pp_samples, then pp_refresh(NULL) aligns and folds them with
event_retention_minutes = --retention-minutes, so the database keeps the last minutes of events
and samples and the estimator the sums of every window removed (pp_estimator_state). The job
counts as running (attribution_margin_seconds very large) until its last chunk is in.

At each checkpoint (--checkpoints, minutes) layer_type_estimates is read and scored per (layer
type and direction, metric) against the profile's truth, on the four DCGM_FI_PROF_* activity
metrics (the metrics whose windows are DCGM's own; GPU_UTIL's driver windows and its integer
rounding have no Gaussian bound here):

  crb     the Cramér-Rao bound of the estimator's system: the standard error that no unbiased
          estimator can beat, from the TRUE design: every DCGM window stored by the
          checkpoint (a window stored twice counts once, as the align step counts it), inside the
          job's span, each row the true share of the window each group ran (10 groups and the
          untracked time), and the true noise (multiplicative: sd = 0.5% of the window's true
          value; the information a Gaussian of that variance holds about its mean, including
          what the variance itself tells, is a a^T (1/sd^2 + 2/mean^2))
  ratio   the estimator's stderr / crb: 1 is as good as any unbiased method can do with these
          windows (the target is at most 1.25)
  ols     the true standard deviation of ordinary least squares, the estimator's method, on the
          same true design and noise: stderr / ols near 1 says the reported stderr is honest;
          ols / crb is what unweighted least squares gives away (under multiplicative noise a
          nearly idle window is nearly noiseless, which only a weighted fit can exploit)
  shrink  stderr at this checkpoint / at the previous one, beside sqrt(previous / this time):
          the 1/sqrt(time) a consistent estimator follows
  +-90%   half the 90% interval, relative to the estimate: the noise's part and how far the
          fits with the windows moved both ways by the timing's uncertainty (at least 0.1 ms)
          move the estimate, in quadrature, so it stops shrinking where that uncertainty, not
          the noise, is what limits a layer; identified asks the 98% interval to stay within 5%

and per group: its share of the GPU time, the metrics on which it is identified, the worst error
of those, and whether any identified value is more than 5% off ("wrong"); cover90 is the share
of the (group, metric) pairs whose 90% interval holds the truth. The overlap means
(layer_type_metrics) are shown beside for scale: they are the same blend at every length.

  PYTHONPATH=python /usr/bin/python3 bench/accuracy_growth.py [--checkpoints 10,60,360]
      [--chunk-minutes 10] [--retention-minutes 10] [--noise 0.005] [--seed 1]
      [--extension build/precisionprobe] [--out bench/results/accuracy_growth.txt]

The 6-hour recording has about 10 million layer calls; the run takes about 2-3 minutes on the
2-core VM and 3 GB of memory (the emulator holds the whole timeline).
"""
import argparse
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import group_name, provenance  # noqa: E402

from precisionprobe.emulator import offline  # noqa: E402
from precisionprobe.emulator.exposition import format_value  # noqa: E402
from precisionprobe.emulator.profile import METRICS, PROF_METRICS, Profile  # noqa: E402
from precisionprobe.emulator.timeline import dlrm_timeline  # noqa: E402
from precisionprobe.emulator.timing import Timing  # noqa: E402
from precisionprobe.emulator.truth import Timeline  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WRONG = 0.05
MINUTE_NS = 60 * 10**9
SCORED = [m for m in METRICS if m in PROF_METRICS]  # the four DCGM_FI_PROF_* activity metrics


def connect(extension, path, retention_minutes):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('event_retention_minutes', ?)", (retention_minutes,))
    return conn


def insert_events(conn, rec, lo, hi):
    """The calls with index lo..hi-1 into pp_events, as pp_refresh's import writes them."""
    ev = rec.events
    names = [name for name, _ in ev.layers]
    kinds = [kind for _, kind in ev.layers]
    rows = [(offline.JOB_ID, offline.HOST, rec.gpu.uuid, rec.gpu.index, 0, offline.PID, b // 1000, b,
             names[lid], kinds[lid], int(f), s, e, s / 1e9, e / 1e9, offline.CPU_NUM, "growth.jsonl", i + 1)
            for i, b, lid, f, s, e in zip(range(lo, hi), ev.batch[lo:hi].tolist(), ev.layer_id[lo:hi].tolist(),
                                          ev.forward[lo:hi].tolist(), ev.t_start_ns[lo:hi].tolist(),
                                          ev.t_end_ns[lo:hi].tolist())]
    conn.executemany("INSERT INTO pp_events(job_id, host_name, gpu_uuid, gpu, rank, pid, epoch, batch, layer, "
                     "layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def insert_samples(conn, rec, lo, hi):
    """The stored samples lo..hi-1 into pp_samples, at their stored times, as dcgm-exporter prints them."""
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                     [(rec.gpu.uuid, metric, int(t), float(format_value(metric, v)))
                      for m, metric in enumerate(METRICS)
                      for t, v in zip(rec.tick_ms[lo:hi].tolist(), rec.samples[lo:hi, m].tolist())])


class TrueDesign:
    """Per distinct stored DCGM window: the true share of it each group (and the untracked time) ran."""

    def __init__(self, rec, groups):
        ev, s = rec.events, rec.schedule
        first = ~s.repeat
        begin, end = s.window_begin_ns[first], s.window_end_ns[first]
        self.ts_ms = s.ts_ms[first]
        inside = (begin >= ev.t_start_ns[0]) & (end <= ev.t_end_ns[-1])  # the job's span
        self.begin, self.end, self.ts_ms = begin[inside], end[inside], self.ts_ms[inside]
        kinds = np.array([kind for _, kind in ev.layers])[ev.layer_id]
        shares = []
        for kind, forward in groups:
            mask = (kinds == kind) & (ev.forward == forward)
            indicator = Timeline(ev.t_start_ns[mask], ev.t_end_ns[mask], np.ones((int(mask.sum()), 1)), [0.0])
            shares.append(indicator.means(self.begin, self.end)[:, 0])
        shares.append(1.0 - np.sum(shares, axis=0))  # the untracked time
        self.shares = np.column_stack(shares)

    def bounds(self, through_ms, truth_row, noise):
        """For a metric whose true values per group are truth_row, from the windows stored by
        through_ms: the Cramér-Rao standard deviations of the groups' values (untracked last), and
        the true standard deviations of ordinary least squares (what the estimator solves) on the
        same windows; and how many windows."""
        a = self.shares[self.ts_ms <= through_ms]
        mean = a @ truth_row
        keep = mean > 0  # a window with no activity at all holds no information under this noise
        a, mean = a[keep], mean[keep]
        variance = (noise * mean) ** 2
        fisher = (a * (1.0 / variance + 2.0 / mean ** 2)[:, None]).T @ a
        crb = np.sqrt(np.diag(np.linalg.inv(fisher)))
        gram_inverse = np.linalg.inv(a.T @ a)
        ols = np.sqrt(np.diag(gram_inverse @ ((a * variance[:, None]).T @ a) @ gram_inverse))
        return crb, ols, int(keep.sum())


def estimates(conn):
    out = {}
    for layer_type, forward, metric, estimate, stderr, lo, hi, windows, confidence in conn.execute(
            "SELECT layer_type, forward, metric, estimate, stderr, lower90, upper90, windows, confidence "
            "FROM layer_type_estimates"):
        out[(layer_type, bool(forward), metric)] = {
            "estimate": estimate, "stderr": stderr, "lower90": lo, "upper90": hi, "windows": windows,
            "identified": confidence == "identified"}
    return out


def overlap_means(conn):
    columns = {"DCGM_FI_PROF_DRAM_ACTIVE": "dram_active", "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp32_active",
               "DCGM_FI_PROF_SM_ACTIVE": "sm_active", "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy"}
    out = {}
    for metric, column in columns.items():
        for layer_type, forward, value in conn.execute(
                f"SELECT layer_type, forward, {column} FROM layer_type_metrics WHERE layer_type <> '(untracked)'"):
            out[(layer_type, bool(forward), metric)] = value
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--out", help="also write the report here (e.g. bench/results/accuracy_growth.txt)")
    parser.add_argument("--checkpoints", default="10,60,360", help="minutes at which to score (default 10,60,360)")
    parser.add_argument("--chunk-minutes", type=int, default=10, help="minutes of data per refresh (default 10)")
    parser.add_argument("--retention-minutes", type=int, default=10,
                        help="event_retention_minutes of every refresh (default 10; 0 keeps everything)")
    parser.add_argument("--noise", type=float, default=0.005, help="multiplicative noise (default 0.005)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", help="the database (default: a temporary file, removed at the end)")
    args = parser.parse_args()
    checkpoints = sorted(int(x) for x in args.checkpoints.split(","))
    if any(c % args.chunk_minutes for c in checkpoints):
        parser.error("--checkpoints must be multiples of --chunk-minutes")
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    started = time.perf_counter()
    profile = Profile.named("dlrm")
    seconds = checkpoints[-1] * 60
    events = dlrm_timeline(offline.DEFAULT_START_S * 10**9, seconds, args.seed)
    # Samples until two seconds past the job, as in bench/accuracy.py.
    rec = offline.record(seconds + 2.1, 100, args.noise, args.seed, profile, events=events, timing=Timing())
    truth = rec.type_truth()
    groups = sorted(truth, key=lambda g: (g[0], not g[1]))
    design = TrueDesign(rec, groups)
    durations = (events.t_end_ns - events.t_start_ns).astype(float)
    kinds = np.array([kind for _, kind in events.layers])[events.layer_id]
    share = {g: durations[(kinds == g[0]) & (events.forward == g[1])].sum() / (seconds * 1e9) for g in groups}
    generated = time.perf_counter() - started

    say(provenance(args.extension))
    say(f"One job streamed as it runs: offline emulator, profile dlrm, seed {args.seed}, realistic timing "
        f"({offline.describe_timing(rec)}),")
    say(f"100 ms DCGM windows, {100 * args.noise:g}% noise; {len(events):,} layer calls in {checkpoints[-1]} minutes; "
        f"a refresh every {args.chunk_minutes} minutes with event_retention_minutes = {args.retention_minutes}.")
    say("Scored on the four DCGM_FI_PROF_* metrics per group (layer type x direction); crb: the Cramér-Rao bound of the")
    say("true design (every distinct stored window, true shares, true noise); ratio: stderr / crb; ols: the true standard")
    say("deviation of ordinary least squares (the estimator's method) on that design; shrink: stderr now / stderr at the")
    say("previous checkpoint, beside sqrt(previous / now) (1/sqrt(time)).")
    say()

    with tempfile.TemporaryDirectory(prefix="pp-growth-accuracy-") as tmp:
        path = args.db or str(Path(tmp) / "growth.db")
        if os.path.exists(path):
            sys.exit(f"accuracy_growth: {path} exists; give a new --db")
        conn = connect(args.extension, path, args.retention_minutes)
        conn.execute("SELECT pp_config('attribution_margin_seconds', 3153600000)")  # the job still runs
        start_ns = rec.start_ns
        event_at, sample_at, refresh_s, previous = 0, 0, [], None
        for minute in range(args.chunk_minutes, checkpoints[-1] + 1, args.chunk_minutes):
            last = minute == checkpoints[-1]
            chunk_end_ns = start_ns + minute * MINUTE_NS
            event_to = len(events) if last else int(np.searchsorted(events.t_start_ns, chunk_end_ns))
            sample_to = len(rec.tick_ms) if last else int(np.searchsorted(rec.tick_ms, chunk_end_ns // 10**6))
            conn.execute("BEGIN")
            insert_events(conn, rec, event_at, event_to)
            insert_samples(conn, rec, sample_at, sample_to)
            conn.execute("COMMIT")
            event_at, sample_at = event_to, sample_to
            if last:  # the job has ended: its last windows are folded
                conn.execute("SELECT pp_config('attribution_margin_seconds', 60)")
            t = time.perf_counter()
            conn.execute("SELECT * FROM pp_refresh(NULL)").fetchone()
            refresh_s.append(time.perf_counter() - t)
            if minute in checkpoints:
                t = time.perf_counter()
                solved = estimates(conn)
                solve_s = time.perf_counter() - t
                overlap = overlap_means(conn)
                through_ms = int(rec.tick_ms[sample_to - 1])
                previous = report(say, minute, previous, solved, overlap, truth, profile.idle, groups, share, design,
                                  through_ms, args.noise, conn, path, refresh_s, solve_s)
        conn.close()
    say(f"Total {time.perf_counter() - started:.0f} s ({generated:.0f} s generating the recording), peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, {os.cpu_count()} CPUs.")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


def report(say, minute, previous, solved, overlap, truth, idle, groups, share, design, through_ms, noise, conn,
           path, refresh_s, solve_s):
    """The checkpoint's table; returns its stderrs for the next checkpoint's shrink."""
    events, = conn.execute("SELECT count(*) FROM pp_events").fetchone()
    states, state_bytes = conn.execute("SELECT count(*), coalesce(sum(length(state)), 0) "
                                       "FROM pp_estimator_state").fetchone()
    size_mb = (os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0)) / 1e6
    say(f"After {minute} minutes ({minute / 60:g} h): database {size_mb:.0f} MB ({events:,} events kept, "
        f"{states} estimator state rows, {state_bytes / 1e3:.0f} KB); refreshes {sum(refresh_s):.0f} s in all "
        f"(last {refresh_s[-1]:.1f} s); layer_type_estimates {solve_s:.1f} s")
    say(f"  {'group':<16} {'share':>6} | {'metric':<13} {'truth':>6} {'overlap':>7} {'estimate':>8} {'stderr':>8} "
        f"{'crb':>8} {'ratio':>5} {'ols':>8} {'shrink':>13} {'windows':>8} {'+-90%':>6} id")
    stderrs, ratios, honest, cover, wrong, per_group = {}, [], [], [], 0, {}
    crb_windows = 0
    for m, metric in ((METRICS.index(x), x) for x in SCORED):
        truth_row = np.array([truth[g][m] for g in groups] + [idle[m]])  # untracked time reads idle
        crb, ols, crb_windows = design.bounds(through_ms, truth_row, noise)
        for k, g in enumerate(groups):
            entry = solved.get((g[0], g[1], metric))
            if entry is None:
                continue
            se, est = entry["stderr"], entry["estimate"]
            true_value = truth[g][m]
            ratio = se / crb[k] if se is not None else float("nan")
            if se is not None:
                ratios.append(ratio)
                honest.append(se / ols[k])
                stderrs[(g, metric)] = se
            if entry["lower90"] is not None:
                cover.append(entry["lower90"] <= true_value <= entry["upper90"])
            error = abs(est - true_value) / true_value if est is not None else float("nan")
            bad = entry["identified"] and error > WRONG
            wrong += bad
            ids, worst = per_group.setdefault(g, ([], []))
            if entry["identified"]:
                ids.append(metric)
                worst.append(error)
            shrink = "-"
            if previous and (g, metric) in previous["stderr"] and se is not None:
                shrink = f"{se / previous['stderr'][(g, metric)]:.3f} ({np.sqrt(previous['minute'] / minute):.3f})"
            ov = overlap.get((g[0], g[1], metric))
            say(f"  {group_name(*g):<16} {100 * share[g]:5.2f}% | {metric[13:]:<13} {true_value:6.3f} "
                f"{fmt(ov, 7, 3)} {fmt(est, 8, 4)} {fmt(se, 8, 5)} {crb[k]:8.5f} {ratio:5.2f} {ols[k]:8.5f} {shrink:>13} "
                f"{entry['windows']:>8} {half_width(entry):>6} {'yes' if entry['identified'] else 'no'}"
                f"{' WRONG' if bad else ''}")
    ratios, honest = np.array(ratios), np.array(honest)
    say(f"  summary: {crb_windows:,} distinct windows with activity in the bounds; stderr/crb median "
        f"{np.median(ratios):.2f}, worst {ratios.max():.2f} (target <= 1.25: {int((ratios <= 1.25).sum())} of "
        f"{len(ratios)}); stderr/ols median {np.median(honest):.2f}, range {honest.min():.2f}-{honest.max():.2f}; "
        f"cover90 {100 * np.mean(cover):.1f}%; identified-but-wrong {wrong}")
    held = [g for g in groups if share[g] >= 0.001]
    full = [g for g in held if len(per_group.get(g, ([], []))[0]) == len(SCORED)
            and max(per_group[g][1]) <= WRONG]
    say(f"  groups with at least 0.1% of the GPU time identified within 5% on all four metrics: {len(full)} of "
        f"{len(held)}" + ("" if len(full) == len(held) else " (not: " + ", ".join(
            f"{group_name(*g)} {len(per_group.get(g, ([], []))[0])}/4" for g in held if g not in full) + ")"))
    say()
    return {"minute": minute, "stderr": stderrs}


def half_width(entry):
    """The 90% interval's half-width relative to the estimate, in %: with the timing's
    uncertainty in it, unlike stderr."""
    if entry["lower90"] is None or entry["upper90"] is None or not entry["estimate"]:
        return "-"
    return f"{50 * (entry['upper90'] - entry['lower90']) / abs(entry['estimate']):.1f}%"


def fmt(value, width, decimals):
    return f"{'null':>{width}}" if value is None else f"{value:{width}.{decimals}f}"


if __name__ == "__main__":
    main()
