#!/usr/bin/python3
"""How much storage dedup by similarity saves, and what it costs the per-layer means.

The paper (§III.B) does not persist a layer's new result when it is similar to the stored one
and reports about 90% less data. This bench simulates a recorded-style run, marks rows with
pp_novel at a few tolerances, and compares the per-layer means of the rows that would be kept
with the means of all rows.

The simulated run (the paper's DLRM layers and DCGM's sample windows):
  * ~20 layers (embeddings, bottom and top MLP), each called forward and backward once per
    iteration, 0.3-8 ms per call with 10% jitter, then a 10-40 ms idle gap (data loading);
    the first iterations warm up (activity ramps to its steady level, memory grows);
  * dcgm-exporter samples every INTERVAL: each profiling value is the average over the
    interval ending at its timestamp of whatever ran (a blend of layers and idle time), with
    relative noise, printed like dcgm-exporter (GPU_UTIL and FB_USED integers, ratios %f);
  * a layer row takes, for each of the six metrics, the latest sample at the hook's end time
    (the paper's method), so rows repeat until the next sample arrives.

For each tolerance the table shows how many rows pp_novel keeps, and the largest relative error
over layers x directions x metrics of
  kept only        the mean of the kept rows (the paper's rule: similar rows are not stored);
  run-weighted     the mean of the kept rows weighted by how many rows each one stands for
                   (pp_mean(x, n), n = the kept row and the similar rows after it), which is
                   what storing a count with each kept row buys.

  /usr/bin/python3 bench/dedup_effect.py --extension build/precisionprobe
"""
import argparse
import sqlite3
import statistics
import time

import numpy as np

METRICS = ["gpu_util", "gpu_mem", "dram_active", "fp32_active", "sm_active", "sm_occupancy"]
PROFILED = ["gpu_util", "dram_active", "fp32_active", "sm_active", "sm_occupancy"]


def layer_profiles(rng, count):
    """Names and per-layer steady activity (forward; backward is derived)."""
    names, kinds = [], []
    n_emb = max(1, count * 2 // 5)
    n_bot = max(1, (count - n_emb) // 2)
    n_top = count - n_emb - n_bot
    names += [f"emb_l.{i}" for i in range(n_emb)]
    kinds += ["emb"] * n_emb
    names += [f"bot_l.{2 * i}" for i in range(n_bot)]
    kinds += ["mlp"] * n_bot
    names += [f"top_l.{2 * i}" for i in range(n_top)]
    kinds += ["mlp"] * n_top
    prof = {}
    emb = np.array([k == "emb" for k in kinds])
    prof["duration_ms"] = np.where(emb, rng.uniform(1.0, 8.0, count), rng.uniform(0.3, 4.0, count))
    prof["gpu_util"] = rng.uniform(0.85, 1.0, count)  # fraction of the call with a kernel running
    prof["sm_active"] = np.where(emb, rng.uniform(0.15, 0.45, count), rng.uniform(0.55, 0.95, count))
    prof["sm_occupancy"] = prof["sm_active"] * rng.uniform(0.3, 0.8, count)
    prof["fp32_active"] = np.where(emb, rng.uniform(0.01, 0.05, count), rng.uniform(0.2, 0.6, count))
    prof["dram_active"] = np.where(emb, rng.uniform(0.5, 0.85, count), rng.uniform(0.05, 0.35, count))
    return names, prof


def simulate(seed, layers, iterations, interval_ms, noise):
    """Returns the layer rows: (layer, forward, iteration, t_end, six metrics)."""
    rng = np.random.default_rng(seed)
    names, prof = layer_profiles(rng, layers)
    # Calls of one iteration: forward 0..L-1, backward L-1..0, then the idle gap.
    order = list(range(layers)) + list(range(layers - 1, -1, -1))
    forward = np.array([1] * layers + [0] * layers)
    base_ms = np.array([prof["duration_ms"][i] * (1 if f else 2) for i, f in zip(order, forward)])
    segments = len(order) + 1
    durations = np.empty((iterations, segments))
    durations[:, :-1] = base_ms * rng.lognormal(0, 0.1, (iterations, len(order)))
    durations[:, -1] = rng.uniform(10, 40, iterations)
    durations /= 1000.0  # seconds
    # Activity per segment; backward is a bit busier on memory; warm-up ramps from 60%.
    activity = {}
    warm = 0.6 + 0.4 * np.minimum(1.0, np.arange(iterations) / 200.0)
    for m in PROFILED:
        per_call = np.array([prof[m][i] * (1.0 if f else (1.15 if m == "dram_active" else 1.05))
                             for i, f in zip(order, forward)])
        per_call = np.minimum(per_call, 1.0)
        values = np.zeros((iterations, segments))
        values[:, :-1] = per_call
        activity[m] = values * (warm[:, None] if m != "gpu_util" else 1.0)
    bounds = np.concatenate([[0.0], np.cumsum(durations.ravel())])
    total = bounds[-1]
    interval = interval_ms / 1000.0
    sample_t = np.arange(interval, total, interval)
    samples = {}
    for m in PROFILED:
        cumulative = np.concatenate([[0.0], np.cumsum((durations * activity[m]).ravel())])
        mean = (np.interp(sample_t, bounds, cumulative) - np.interp(sample_t - interval, bounds, cumulative)) / interval
        mean = np.clip(mean * (1 + noise * rng.standard_normal(len(sample_t))), 0.0, 1.0)
        samples[m] = np.round(mean * 100) if m == "gpu_util" else np.round(mean, 6)
    # FB_USED: grows during warm-up (allocator caching), then steady with rare small changes.
    iteration_of_sample = np.searchsorted(bounds[::segments], sample_t) - 1
    grown = 21000 + 3870 * np.minimum(1.0, iteration_of_sample / 50.0)
    jitter = np.cumsum(rng.choice([-2, 0, 0, 0, 0, 0, 0, 0, 0, 2], len(sample_t)))
    samples["gpu_mem"] = np.round(grown + jitter)
    # Layer rows: the latest sample at each call's end.
    ends = bounds[1:].reshape(iterations, segments)[:, :-1]
    which = np.searchsorted(sample_t, ends, side="right") - 1
    rows = []
    for it in range(iterations):
        for c, layer in enumerate(order):
            j = which[it, c]
            if j < 0:
                continue  # before the first sample
            rows.append((names[layer], int(forward[c]), it, float(ends[it, c]),
                         *(float(samples[m][j]) for m in METRICS)))
    return rows, len(sample_t), total


def load(conn, rows):
    conn.execute("DROP TABLE IF EXISTS layer_rows")
    conn.execute("CREATE TABLE layer_rows(layer TEXT, forward INTEGER, iteration INTEGER, t_end REAL, "
                 + ", ".join(f"{m} REAL" for m in METRICS) + ", PRIMARY KEY (layer, forward, iteration))")
    conn.executemany(f"INSERT INTO layer_rows VALUES ({', '.join('?' * (4 + len(METRICS)))})", rows)


def measure(conn, rel_tol):
    vector = "json_array(" + ", ".join(METRICS) + ")"
    started = time.perf_counter()
    conn.execute("DROP TABLE IF EXISTS flagged")
    conn.execute(f"""
        CREATE TEMP TABLE flagged AS
        SELECT *, pp_novel({vector}, ?) OVER (PARTITION BY layer, forward ORDER BY iteration) AS novel
          FROM layer_rows""", (rel_tol,))
    seconds = time.perf_counter() - started
    total, kept = conn.execute("SELECT count(*), sum(novel) FROM flagged").fetchone()
    # Each kept row stands for itself and the similar rows after it (its run).
    conn.execute("DROP TABLE IF EXISTS runs")
    conn.execute("""
        CREATE TEMP TABLE runs AS
        SELECT *, sum(novel) OVER (PARTITION BY layer, forward ORDER BY iteration) AS run FROM flagged""")
    states = ", ".join(
        f"pp_mean_value(pp_mean({m})) AS all_{m}, "
        f"pp_mean_value(pp_mean(CASE WHEN novel = 1 THEN {m} END)) AS kept_{m}, "
        f"pp_mean_value(pp_mean(CASE WHEN novel = 1 THEN {m} END, run_rows)) AS weighted_{m}"
        for m in METRICS)
    errors = {"kept": [], "weighted": []}
    for row in conn.execute(f"""
        WITH sized AS (SELECT *, count(*) OVER (PARTITION BY layer, forward, run) AS run_rows FROM runs)
        SELECT layer, forward, {states} FROM sized GROUP BY layer, forward"""):
        values = row[2:]
        for k, _ in enumerate(METRICS):
            everything, kept_only, weighted = values[3 * k:3 * k + 3]
            if everything:
                errors["kept"].append(abs(kept_only - everything) / abs(everything))
                errors["weighted"].append(abs(weighted - everything) / abs(everything))
    return {"rows": total, "kept": kept, "seconds": seconds,
            "kept_max": max(errors["kept"]), "kept_median": statistics.median(errors["kept"]),
            "weighted_max": max(errors["weighted"]), "weighted_median": statistics.median(errors["weighted"])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extension", default="build/precisionprobe", help="path of precisionprobe(.so)")
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=3000)
    parser.add_argument("--interval-ms", type=float, action="append",
                        help="dcgm-exporter collection interval (repeatable; default 100, 1000, 30000)")
    parser.add_argument("--noise", type=float, default=0.01, help="relative noise of each sample")
    parser.add_argument("--tolerance", type=float, action="append", help="rel_tol (default 0.01, 0.05, 0.10)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    intervals = args.interval_ms or [100.0, 1000.0, 30000.0]
    tolerances = args.tolerance or [0.01, 0.05, 0.10]

    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(args.extension)
    conn.enable_load_extension(False)

    print(f"{args.layers} layers x forward/backward x {args.iterations} iterations, "
          f"sample noise {args.noise:.1%}, seed {args.seed}")
    header = (f"{'interval':>8} {'samples':>7} {'rel_tol':>7} {'rows':>7} {'kept':>6} {'saved':>6} "
              f"{'kept-only err max / median':>27} {'run-weighted err max / median':>30} {'pp_novel s':>10}")
    print(header)
    print("-" * len(header))
    for interval in intervals:
        rows, samples, _ = simulate(args.seed, args.layers, args.iterations, interval, args.noise)
        load(conn, rows)
        for tol in tolerances:
            r = measure(conn, tol)
            saved = 1 - r["kept"] / r["rows"]
            print(f"{interval:>6.0f}ms {samples:>7} {tol:>7.0%} {r['rows']:>7} {r['kept']:>6} {saved:>6.1%} "
                  f"{r['kept_max']:>14.2%} / {r['kept_median']:>8.3%} "
                  f"{r['weighted_max']:>17.3%} / {r['weighted_median']:>8.4%} {r['seconds']:>10.2f}")


if __name__ == "__main__":
    main()
