#!/usr/bin/env python3
"""Accuracy of per-layer attribution against the DCGM emulator's ground truth.

For each cell of a grid (sample interval x noise x recording length), the emulator
(python/precisionprobe/emulator, offline mode) generates a DLRM-like timeline (leaf layers of
0.1-5 ms, jittered, with untracked gaps and stalls) and the samples an emulated GPU gives for it.
Three ways to get per-layer-type values (10 groups: 5 layer types x forward/backward) are then
compared with the profile's true values (profile dlrm, emulator/profiles/dlrm.json):

  paper      the paper's method: for each layer call, the sample current at its hook's time (the
             newest sample at or before the call's end, what an instant query returns then),
             averaged per group;
  overlap    pp_refresh + layer_type_metrics: every sample weighted by its window's overlap with
             each call (the extension's SQL, sql/fold.sql);
  estimator  pp_deconvolve(sample_id, layer_key, weight, value, lower, upper) per metric, with the
             overlap fraction of each window per group (pp_events x pp_samples, overlaps as
             sql/fold.sql computes them) and an explicit '(untracked)' row so that each window's fractions sum to 1.

How the data gets in: events are written as the hook client's JSON Lines and imported with
layer_events() (the statement pp_refresh uses) once per timeline; samples are inserted into
pp_samples exactly as dcgm-exporter prints them (%d / %f), which is what pp_refresh would fetch
from Prometheus (python/tests/test_emulator_prometheus.py checks both give the same tables);
then pp_refresh(path, 1) folds. Errors are relative, |estimate - truth| / truth, over the
(group, metric) pairs of the five activity metrics (GPU_UTIL and the four DCGM_FI_PROF_*);
FB_USED, a memory level that varies little between layers, is reported on its own.
"cover90" is the share of (group, metric) pairs whose 90% interval holds the truth.

  PYTHONPATH=python /usr/bin/python3 bench/accuracy.py [--extension build/precisionprobe]
      [--out bench/results/accuracy.txt] [--intervals 100,1000,10000] [--noises 0,0.005,0.02] [--minutes 1,10]

Runs in about 5 minutes on 2 cores (the 10-minute timelines have about 290,000 layer calls).
"""
import argparse
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from precisionprobe.emulator import offline
from precisionprobe.emulator.exposition import format_value
from precisionprobe.emulator.profile import FB_USED, METRICS, UPPER_BOUNDS, Profile
from precisionprobe.emulator.timeline import dlrm_timeline

ROOT = Path(__file__).resolve().parent.parent

ACTIVITY = [m for m in METRICS if m != FB_USED]
SEED = 1


def group_name(layer_type, forward):
    return f"{layer_type} {'fwd' if forward else 'bwd'}"


def connect(extension):
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    return conn


def template_db(extension, rec, work):
    """A database holding the timeline's events, imported from JSON Lines by layer_events()."""
    events_file = work / "events.jsonl"
    offline.write_events(rec, events_file)
    conn = connect(extension)
    conn.execute("SELECT pp_install_views()")
    conn.execute(
        "INSERT INTO pp_events(job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, "
        "batch, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line) "
        "SELECT job_id, host_name, ip, pod, namespace, gpu_uuid, gpu, rank, pid, epoch, batch, layer, "
        "layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, cpu_num, source_file, line "
        "FROM layer_events(?)", (str(events_file),))
    conn.commit()
    events_file.unlink()
    return conn


def paper_method(rec):
    """Per group: mean over calls of the newest sample at or before the call's end."""
    ev = rec.events
    index = np.searchsorted(rec.tick_ms * 10**6, ev.t_end_ns, side="right") - 1
    printed = np.array([[float(format_value(m, v)) for m, v in zip(METRICS, row)] for row in rec.samples])
    out = {}
    kinds = np.array([ev.layers[i][1] for i in ev.layer_id])
    for kind in set(kinds.tolist()):
        for fwd in (True, False):
            mask = (kinds == kind) & (ev.forward == fwd) & (index >= 0)
            out[(kind, fwd)] = printed[index[mask]].mean(axis=0)
    return out


def overlap_method(conn):
    rows = conn.execute("SELECT layer_type, forward, gpu_util, gpu_mem, dram_active, fp32_active, "
                        "sm_active, sm_occupancy FROM layer_type_metrics WHERE layer_type <> '(untracked)'")
    return {(r[0], bool(r[1])): np.array(r[2:], dtype=float) for r in rows}


# Overlap fraction of each window per group, computed as sql/fold.sql computes overlaps (integer
# ns). Not from the layer_attribution view: scanned whole, its plan loops over all events for each
# sample (quadratic), while CROSS JOIN here makes each event look up its own few samples.
ESTIMATOR_SQL = """
CREATE TEMP TABLE fractions AS
SELECT ts_ms, layer_key, sum(overlap_ns) / (interval_ms * 1e6) AS fraction
  FROM (SELECT s.ts_ms, i.interval_ms,
               e.layer_type || CASE e.forward WHEN 1 THEN ' fwd' ELSE ' bwd' END AS layer_key,
               min(e.t_end_ns, s.ts_ms * 1000000) - max(e.t_start_ns, (s.ts_ms - i.interval_ms) * 1000000) AS overlap_ns
          FROM pp_events AS e
          CROSS JOIN pp_intervals AS i ON i.uuid = e.gpu_uuid AND i.metric = 'DCGM_FI_DEV_GPU_UTIL'
          CROSS JOIN pp_samples AS s ON s.uuid = e.gpu_uuid AND s.metric = i.metric
               AND s.ts_ms >= e.t_start_ns / 1000000 AND s.ts_ms <= e.t_end_ns / 1000000 + i.interval_ms)
 WHERE overlap_ns > 0 GROUP BY ts_ms, layer_key;
CREATE TEMP TABLE rows AS
SELECT s.metric, s.ts_ms, f.layer_key, f.fraction, s.value
  FROM pp_samples AS s JOIN temp.fractions AS f USING (ts_ms)
UNION ALL
SELECT s.metric, s.ts_ms, '(untracked)', max(0.0, 1.0 - coalesce(t.covered, 0)), s.value
  FROM pp_samples AS s
  LEFT JOIN (SELECT ts_ms, sum(fraction) AS covered FROM temp.fractions GROUP BY ts_ms) AS t USING (ts_ms);
"""


def estimator_method(conn):
    conn.executescript(ESTIMATOR_SQL)
    out = {}
    for m, metric in enumerate(METRICS):
        upper = UPPER_BOUNDS.get(metric)  # None: no upper bound (FB_USED)
        (result,) = conn.execute(
            "SELECT pp_deconvolve(ts_ms, layer_key, fraction, value, 0, ?) FROM temp.rows WHERE metric = ?",
            (upper, metric)).fetchone()
        out[metric] = json.loads(result)
    return out


def errors(estimates, truth, metrics):
    """Relative errors over (group, metric) pairs that have an estimate."""
    errs = []
    for group, values in truth.items():
        est = estimates.get(group)
        for metric in metrics:
            m = METRICS.index(metric)
            if est is not None and est[m] is not None and np.isfinite(est[m]):
                errs.append(abs(est[m] - values[m]) / values[m])
    return np.array(errs)


def run_cell(conn_template, rec, truth):
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn_template.backup(conn)
    conn.load_extension(EXTENSION)
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                     [(rec.gpu.uuid, metric, int(t), float(format_value(metric, v)))
                      for m, metric in enumerate(METRICS) for t, v in zip(rec.tick_ms, rec.samples[:, m])])
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as empty:  # events are already in pp_events
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (empty.name,)).fetchone()
    paper = paper_method(rec)
    overlap = overlap_method(conn)
    solved = estimator_method(conn)
    est, identified, cover, with_interval = {}, {}, [], 0
    for group in truth:
        key = group_name(*group)
        est[group] = [solved[metric].get(key, {}).get("estimate") for metric in METRICS]
        identified[group] = [solved[metric].get(key, {}).get("identified", False) for metric in METRICS]
        for metric in ACTIVITY:
            m = METRICS.index(metric)
            entry = solved[metric].get(key, {})
            lo, hi = entry.get("lower90"), entry.get("upper90")
            if lo is not None and hi is not None:
                with_interval += 1
                cover.append(lo <= truth[group][m] <= hi)
    est_id = {g: [v if ok else None for v, ok in zip(est[g], identified[g])] for g in est}
    pairs = len(truth) * len(ACTIVITY)
    return {
        "paper": errors(paper, truth, ACTIVITY), "overlap": errors(overlap, truth, ACTIVITY),
        "estimator": errors(est, truth, ACTIVITY), "estimator_identified": errors(est_id, truth, ACTIVITY),
        "identified": sum(ok for g in identified for m, ok in zip(METRICS, identified[g]) if m in ACTIVITY),
        "pairs": pairs, "cover90": (np.mean(cover) if cover else float("nan")), "with_interval": with_interval,
        "fb": {name: errors(x, truth, [FB_USED]) for name, x in
               (("paper", paper), ("overlap", overlap), ("estimator", est))},
        "detail": {"truth": truth, "paper": paper, "overlap": overlap, "solved": solved,
                   "share": time_share(rec)},
        "sigma": {metric: solved[metric]["_system"]["sigma"] for metric in ACTIVITY},
        "condition": solved[METRICS[0]]["_system"]["condition_scaled"],
    }


def time_share(rec):
    """Share of the recording's time each group ran, and its mean call duration in ms."""
    ev = rec.events
    durations = (ev.t_end_ns - ev.t_start_ns).astype(float)
    kinds = np.array([ev.layers[i][1] for i in ev.layer_id])
    out = {}
    for kind in set(kinds.tolist()):
        for fwd in (True, False):
            mask = (kinds == kind) & (ev.forward == fwd)
            out[(kind, fwd)] = (durations[mask].sum() / (rec.seconds * 1e9), durations[mask].mean() / 1e6)
    return out


def detail_lines(r, metrics=("DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE")):
    d = r["detail"]
    out = []
    for metric in metrics:
        m = METRICS.index(metric)
        out.append(f"  {metric}: group, time share, mean call; truth; paper; overlap; estimate +- stderr "
                   "[90% interval] identified")
        for group in sorted(d["truth"], key=lambda g: -d["share"][g][0]):
            share, mean_ms = d["share"][group]
            entry = d["solved"][metric].get(group_name(*group), {})
            est, se = entry.get("estimate"), entry.get("stderr")
            lo, hi = entry.get("lower90"), entry.get("upper90")
            fmt = lambda v: "   null" if v is None else f"{v:7.4f}"  # noqa: E731
            out.append(f"    {group_name(*group):<16} {100 * share:5.2f}% {mean_ms:5.2f} ms  {d['truth'][group][m]:.3f}  "
                       f"{d['paper'][group][m]:.3f}  {d['overlap'][group][m]:.3f}  {fmt(est)} +- {fmt(se)} "
                       f"[{fmt(lo)}, {fmt(hi)}] {'yes' if entry.get('identified') else 'no'}")
    return out


def pct(errs, worst=False):
    if len(errs) == 0:
        return "    -"
    return f"{100 * (errs.max() if worst else errs.mean()):5.1f}"


def provenance(extension, built_from=None):
    """What produced the numbers: the extension's version and the source tree's commit."""
    import subprocess
    conn = connect(extension)
    version = conn.execute("SELECT pp_version()").fetchone()[0]
    if built_from:
        return f"extension {extension} (pp_version {version}), built from {built_from}"
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    return (f"extension {extension} (pp_version {version}), source tree {commit or '?'}"
            + (" with uncommitted changes in src/" if dirty else ""))


def main():
    global EXTENSION
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    parser.add_argument("--out", help="also write the report here (e.g. bench/results/accuracy.txt)")
    parser.add_argument("--intervals", default="100,1000,10000", help="sample intervals, ms")
    parser.add_argument("--noises", default="0,0.005,0.02", help="multiplicative noise, fractions")
    parser.add_argument("--minutes", default="1,10", help="recording lengths, minutes")
    parser.add_argument("--built-from", help="say what the extension was built from (default: this tree's commit)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"timeline and noise seed (default {SEED})")
    args = parser.parse_args()
    EXTENSION = args.extension
    seed = args.seed
    intervals = [int(x) for x in args.intervals.split(",")]
    noises = [float(x) for x in args.noises.split(",")]
    lengths = [float(x) for x in args.minutes.split(",")]
    profile = Profile.named("dlrm")
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    say(provenance(args.extension, args.built_from))
    say("Per-layer-type attribution error vs the DCGM emulator's ground truth (precisionprobe emulator,")
    say(f"profile precisionprobe/emulator/profiles/dlrm.json, DLRM-like timeline seed {seed}; 10 groups = 5 layer types x fwd/bwd).")
    say("Errors: relative, in %, mean and worst over (group, metric) pairs of the 5 activity metrics.")
    say("est: all estimates pp_deconvolve gave; id: those it marks identified (count of 50 pairs);")
    say("cover90: share of pairs whose 90% interval holds the truth (pairs with an interval).")
    say()
    header = (f"{'interval':>8} {'noise':>5} {'min':>3} {'samples':>7} | {'paper':^11} | {'overlap':^11} | "
              f"{'estimator est':^13} {'id':>3} {'est id':^11} {'cover90':>12} | {'s':>4}")
    say(header)
    say(f"{'':>8} {'':>5} {'':>3} {'':>7} | {'mean':>5} {'worst':>5} | {'mean':>5} {'worst':>5} | "
        f"{'mean':>6} {'worst':>6} {'':>3} {'mean':>5} {'worst':>5} {'':>12} |")
    say("-" * len(header))
    results = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pp-accuracy-") as tmp:
        work = Path(tmp)
        for minutes in lengths:
            seconds = minutes * 60
            events = dlrm_timeline(offline.DEFAULT_START_S * 10**9, seconds, seed)
            base = offline.record(seconds, intervals[0], 0.0, seed, profile, events=events)
            truth = base.type_truth()
            template = template_db(args.extension, base, work)
            for interval in intervals:
                for noise in noises:
                    t0 = time.perf_counter()
                    rec = offline.record(seconds, interval, noise, seed, profile, events=events)
                    r = run_cell(template, rec, truth)
                    results[(interval, noise, minutes)] = r
                    cover = (f"{100 * r['cover90']:5.1f}% ({r['with_interval']:2d})"
                             if r["with_interval"] else "     - ( 0)")
                    say(f"{interval / 1000:>7g}s {100 * noise:>4g}% {minutes:>3g} {len(rec.tick_ms):>7} | "
                        f"{pct(r['paper'])} {pct(r['paper'], True)} | {pct(r['overlap'])} {pct(r['overlap'], True)} | "
                        f"{pct(r['estimator']):>6} {pct(r['estimator'], True):>6} {r['identified']:>3} "
                        f"{pct(r['estimator_identified'])} {pct(r['estimator_identified'], True)} {cover:>12} | "
                        f"{time.perf_counter() - t0:4.0f}")
            template.close()
    say()
    say("FB_USED (MiB, a level: layers differ by a few %), mean relative error in %:")
    for (interval, noise, minutes), r in results.items():
        if noise == noises[min(1, len(noises) - 1)]:
            say(f"  {interval / 1000:>5g}s {100 * noise:g}% {minutes:g} min: paper {pct(r['fb']['paper'])}  "
                f"overlap {pct(r['fb']['overlap'])}  estimator {pct(r['fb']['estimator'])}")
    key = (100, 0.005, 10.0)
    if key in results:
        r = results[key]
        say()
        say("Target at 100 ms / 0.5% noise / 10 minutes: estimator per-layer-type error < 5%, "
            "cover90 >= 85%; paper's method 50-70% off.")
        say(f"  measured: estimator mean {pct(r['estimator']).strip()}% worst {pct(r['estimator'], True).strip()}%"
            f" (identified {r['identified']}/{r['pairs']}: mean {pct(r['estimator_identified']).strip()}% "
            f"worst {pct(r['estimator_identified'], True).strip()}%), cover90 {100 * r['cover90']:.1f}%; "
            f"paper mean {pct(r['paper']).strip()}% worst {pct(r['paper'], True).strip()}%; "
            f"overlap mean {pct(r['overlap']).strip()}%")
        say("Per group at that cell (two of the metrics):")
        for line in detail_lines(r):
            say(line)
    say(f"Total {time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs.")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
