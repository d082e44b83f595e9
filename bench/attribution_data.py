#!/usr/bin/env python3
"""Data of the attribution benchmark (bench/attribution_bench.py): DLRM-like layer events and the
DCGM samples of the GPUs they ran on, from a fixed seed, so every run measures the same bytes.

  * 8 GPUs on two hosts (4 each), one hour from T0 = 2024-05-01T10:00:00Z;
  * 4 DLRM jobs, staggered over the hour: dlrm-a and later dlrm-d on GPUs 0-3 (4 ranks each),
    dlrm-b on GPUs 4-5, dlrm-c on GPUs 6-7. Leaf layers as the hook client sees them: bottom
    MLP (Linear/ReLU), 16-25 EmbeddingBags, top MLP (Linear/ReLU, Sigmoid), MSELoss: 31-40 layers,
    each called forward in model order and backward in reverse;
  * layer durations 0.1-5 ms (a per-layer base, backward about 2x, per-call jitter and rare
    spikes), launch gaps of 3-40 us between layers, an invisible interaction op before the top
    MLP, optimizer step and data loading between iterations (job-specific: dlrm-b is input
    bound), and a pause of seconds (evaluation, checkpoint) every few hundred iterations;
  * exactly EVENTS events (default 1,000,000), the same number per GPU;
  * the six Table I metrics per GPU every 100 ms for the whole hour: 6 x 8 x 36,000 = 1,728,000
    samples. A sample at ts is the average over (ts - 100 ms, ts]: utilization follows the share
    of the window covered by layers, the profiling ratios follow the layer types in it, memory
    is the job's while a job is resident; 0.5% of profiling samples read 0 (multiplexing).

Writes to DIR (default bench/data/attribution-EVENTS, gitignored):
  events/JOB/rank-R.jsonl   what the hook client writes (job header line first), for layer_events
                            and pp_refresh
  events.csv                the same events: job_id,host_name,ip,gpu_uuid,gpu,layer,layer_type,
                            forward,t_start_ns,t_end_ns,cpu_num
  samples.csv               uuid,metric,ts_ms,value (value as dcgm-exporter prints it)
  samples.om                OpenMetrics for `promtool tsdb create-blocks-from openmetrics`
  manifest.json             counts, seed, T0, checksums of the above
Usage: bench/attribution_data.py [--events N] [--dir DIR]
       PYTHONPATH=python bench/attribution_data.py --production [--minutes 60] [--dir DIR] [--verify [--extension E]]
         the same kind of data at 1,000 events/s per GPU, in the hook client's compact format: see
         bench/attribution_production.py
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = 20240501
T0_S = 1714557600                 # 2024-05-01T10:00:00Z
T0_NS = T0_S * 10**9
HOUR_S = 3600
INTERVAL_MS = 100
WINDOWS = HOUR_S * 1000 // INTERVAL_MS   # 36,000 samples per series
GPUS = 8
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY"]

# Per layer type: (DRAM_ACTIVE, FP32_ACTIVE, SM_ACTIVE, SM_OCCUPANCY) while it runs.
PROFILE = {
    "Linear": (0.32, 0.58, 0.91, 0.42),
    "ReLU": (0.55, 0.12, 0.64, 0.30),
    "EmbeddingBag": (0.78, 0.06, 0.47, 0.22),
    "Sigmoid": (0.20, 0.10, 0.35, 0.15),
    "MSELoss": (0.18, 0.09, 0.30, 0.12),
}

# job_id, GPUs, start (s after T0), embedding tables, data loading gap range (ms), resident MiB,
# share of each GPU's events
JOBS = [
    ("dlrm-a", [0, 1, 2, 3], 75.0, 16, (4.0, 30.0), 24870, 0.6),
    ("dlrm-b", [4, 5], 420.0, 20, (90.0, 420.0), 21120, 1.0),
    ("dlrm-c", [6, 7], 2280.0, 25, (15.0, 90.0), 26480, 1.0),
    ("dlrm-d", [0, 1, 2, 3], None, 24, (6.0, 40.0), 23350, 0.4),  # starts after dlrm-a
]


def uuid_of(g):
    return f"GPU-5d1c{g:04x}-7e2a-4b9c-9f10-{0xa11ce000 + g:012x}"


def host_of(g):
    return f"gpu-node-{g // 4}", f"10.42.0.{17 + g // 4}"


def series_labels(g):
    """The labels dcgm-exporter puts on GPU g's series, as OpenMetrics text."""
    host, _ = host_of(g)
    return (f'gpu="{g % 4}",UUID="{uuid_of(g)}",pci_bus_id="00000000:{0x17 + g % 4:02X}:00.0",'
            f'device="nvidia{g % 4}",modelName="NVIDIA A100-SXM4-40GB",Hostname="{host}",'
            f'DCGM_FI_DRIVER_VERSION="535.104.05"')


def model_layers(rng, tables):
    """(name, type, forward base ms, backward base ms) in forward order."""
    layers = []
    for i, width in enumerate([512, 512, 64]):
        layers.append((f"bot_l.{2 * i}", "Linear", 0.25 + width / 1024 * rng.uniform(0.8, 1.6), None))
        layers.append((f"bot_l.{2 * i + 1}", "ReLU", rng.uniform(0.10, 0.18), None))
    for t in range(tables):
        layers.append((f"emb_l.{t}", "EmbeddingBag", rng.uniform(0.6, 2.4), None))
    for i in range(4):
        layers.append((f"top_l.{2 * i}", "Linear", rng.uniform(0.5, 1.8) if i < 3 else 0.12, None))
        if i < 3:
            layers.append((f"top_l.{2 * i + 1}", "ReLU", rng.uniform(0.10, 0.2), None))
    layers.append(("top_l.7", "Sigmoid", 0.10, None))
    layers.append(("loss_fn", "MSELoss", 0.10, None))
    out = []
    for name, kind, fwd, _ in layers:
        bwd = fwd * (rng.uniform(2.0, 2.6) if kind == "EmbeddingBag" else rng.uniform(1.5, 2.1))
        out.append((name, kind, fwd, min(bwd, 4.2)))
    return out


class Windows:
    """Per GPU, per 100 ms window: busy ns and busy-weighted profile sums, for the sample values."""

    def __init__(self):
        self.busy = [0.0] * WINDOWS
        self.prof = [[0.0] * WINDOWS for _ in range(4)]

    def add(self, start_ns, end_ns, kind):
        profile = PROFILE[kind]
        step = INTERVAL_MS * 10**6
        t = start_ns
        while t < end_ns:
            k = (t - T0_NS) // step          # window (T0 + k*100ms, T0 + (k+1)*100ms]
            stop = min(end_ns, T0_NS + (k + 1) * step)
            if 0 <= k < WINDOWS:
                d = stop - t
                self.busy[k] += d
                for m in range(4):
                    self.prof[m][k] += d * profile[m]
            t = stop


def job_events(job, gpus_events, per_gpu, layers, windows, spans, start_s):
    """Appends the events of one job (all ranks), returns the time its last rank ended (s)."""
    job_id, gpus, _, _, (load_lo, load_hi), memory, share = job
    count = int(round(per_gpu * share))
    end_s = start_s
    for rank, g in enumerate(gpus):
        host, ip = host_of(g)
        local = random.Random(SEED * 31 + hash_str(job_id) * 7 + rank)
        t = T0_NS + int(start_s * 1e9) + local.randrange(0, 2_000_000)
        written, batch = 0, 0
        first = t
        out = gpus_events[g]
        header = {"record": "job", "format_version": 1, "job_id": job_id, "host_name": host,
                  "rank": rank, "pid": 41000 + 10 * g + rank, "command": ["python", "dlrm_s_pytorch.py"],
                  "torch_version": "1.13.1", "start_time_ns": t, "model": "DLRM_Net", "clock": "cuda"}
        out.append(("header", job_id, rank, header))
        while written < count:
            order = [(layer, True) for layer in layers] + [(layer, False) for layer in reversed(layers)]
            for i, ((name, kind, fwd, bwd), forward) in enumerate(order):
                if written == count:
                    break
                base = fwd if forward else bwd
                d_ms = base * local.uniform(0.85, 1.2)
                if local.random() < 0.01:
                    d_ms *= local.uniform(1.5, 2.5)          # a rare slow call
                d_ns = int(min(5.0, max(0.1, d_ms)) * 1e6) + local.randrange(0, 1000)
                d_ns = min(d_ns, 5_000_000)
                out.append((job_id, rank, g, host, ip, batch // 2000, batch, name, kind, forward, t, t + d_ns))
                windows[g].add(t, t + d_ns, kind)
                written += 1
                t += d_ns + local.randrange(3_000, 40_000)     # launch gap
                if forward and name.startswith("emb_l.") and i + 1 < len(layers) and \
                        layers[i + 1][0].startswith("top_l."):
                    t += local.randrange(200_000, 600_000)     # feature interaction (invisible)
                if forward and name == "loss_fn":
                    t += local.randrange(50_000, 200_000)      # loss backward starts
            t += local.randrange(500_000, 2_000_000)           # optimizer step
            t += int(local.uniform(load_lo, load_hi) * 1e6)    # data loading
            batch += 1
            if batch % 400 == 0:
                t += int(local.uniform(2.0, 8.0) * 1e9)        # evaluation / checkpoint
        last = t
        spans[g].append((first, last, memory))
        end_s = max(end_s, (last - T0_NS) / 1e9)
        assert written == count
    return end_s


def hash_str(s):
    return int(hashlib.sha256(s.encode()).hexdigest()[:8], 16)


def generate(events, directory):
    if events % GPUS:
        raise SystemExit("--events must be a multiple of 8")
    per_gpu = events // GPUS
    rng = random.Random(SEED)
    directory = Path(directory)
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "events").mkdir(parents=True)
    gpus_events = [[] for _ in range(GPUS)]
    windows = [Windows() for _ in range(GPUS)]
    spans = [[] for _ in range(GPUS)]
    models = {job[0]: model_layers(rng, job[3]) for job in JOBS}
    a_end = None
    for job in JOBS:
        start_s = job[2] if job[2] is not None else a_end + 240.0
        end_s = job_events(job, gpus_events, per_gpu, models[job[0]], windows, spans, start_s)
        if job[0] == "dlrm-a":
            a_end = end_s
        if end_s >= HOUR_S:
            raise SystemExit(f"{job[0]} runs past the hour ({end_s:.0f} s): fewer events, please")

    # Events: one JSON Lines file per (job, rank), and one CSV of all.
    total = 0
    files = {}
    with open(tmp / "events.csv", "w") as csv:
        csv.write("job_id,host_name,ip,gpu_uuid,gpu,layer,layer_type,forward,t_start_ns,t_end_ns,cpu_num\n")
        for g in range(GPUS):
            uuid = uuid_of(g)
            for row in gpus_events[g]:
                if row[0] == "header":
                    _, job_id, rank, header = row
                    path = tmp / "events" / job_id / f"rank-{rank}.jsonl"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    f = files[(job_id, rank)] = open(path, "w")
                    f.write(json.dumps(header, separators=(",", ":")) + "\n")
                    host, ip = host_of(g)
                    world = len(next(j for j in JOBS if j[0] == job_id)[1])
                    prefix = json.dumps({
                        "job_id": job_id, "host_name": host, "ip": ip, "pod": f"{job_id}-worker-{rank}",
                        "namespace": "recsys", "gpu_uuid": uuid, "gpu": g % 4, "rank": rank,
                        "local_rank": rank % 4, "world_size": world, "pid": header["pid"]},
                        separators=(",", ":"))[:-1] + ","
                    continue
                job_id, rank, _, host, ip, epoch, batch, name, kind, forward, t0, t1 = row
                fwd = "true" if forward else "false"
                files[(job_id, rank)].write(
                    f'{prefix}"epoch":{epoch},"batch":{batch},"layer":"{name}","layer_type":"{kind}",'
                    f'"forward":{fwd},"t_start_ns":{t0},"t_end_ns":{t1},"cpu_num":16.0}}\n')
                csv.write(f"{job_id},{host},{ip},{uuid},{g % 4},{name},{kind},{1 if forward else 0},"
                          f"{t0},{t1},16.0\n")
                total += 1
    for f in files.values():
        f.close()
    assert total == events

    # Samples: values from what ran in each window, printed as dcgm-exporter prints them.
    values = random.Random(SEED + 1)
    step = INTERVAL_MS * 10**6
    samples = 0
    with open(tmp / "samples.csv", "w") as csv, open(tmp / "samples.om", "w") as om:
        csv.write("uuid,metric,ts_ms,value\n")
        series = {}
        for g in range(GPUS):
            w = windows[g]
            host, _ = host_of(g)
            mem_base = 427 + 3 * g
            for k in range(WINDOWS):
                end = T0_NS + (k + 1) * step
                busy = w.busy[k] / step
                resident = [m for (first, last, m) in spans[g] if first - 2 * 10**9 < end <= last + 10**9]
                util = min(100, int(round(100 * min(1.0, busy * values.uniform(0.96, 1.04)))))
                mem = mem_base + (resident[0] + int(1800 * busy) + values.randrange(0, 64) if resident else 0)
                texts = ["%d" % util, "%d" % mem]
                for m in range(4):
                    if values.random() < 0.005:
                        v = 0.0                               # multiplexed: reads 0, still data
                    else:
                        v = min(1.0, max(0.0, w.prof[m][k] / step * values.uniform(0.97, 1.03)
                                         + values.uniform(0.0, 0.004)))
                    texts.append("%f" % v)
                for metric, text in zip(METRICS, texts):
                    series.setdefault((metric, g), []).append((T0_S * 1000 + (k + 1) * INTERVAL_MS, text))
        for m, metric in enumerate(METRICS):
            om.write(f"# TYPE {metric} gauge\n")
            for g in range(GPUS):
                labels = series_labels(g)
                uuid = uuid_of(g)
                for ts_ms, text in series[(metric, g)]:
                    csv.write(f"{uuid},{metric},{ts_ms},{text}\n")
                    om.write(f"{metric}{{{labels}}} {text} {ts_ms // 1000}.{ts_ms % 1000:03d}\n")
                    samples += 1
        om.write("# EOF\n")
    assert samples == len(METRICS) * GPUS * WINDOWS

    manifest = {"seed": SEED, "events": events, "samples": samples, "gpus": GPUS, "t0": T0_S,
                "interval_ms": INTERVAL_MS, "jobs": [j[0] for j in JOBS],
                "sha256": {name: sha256(tmp / name) for name in ("events.csv", "samples.csv")}}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return manifest


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ensure(events, directory=None):
    """The data directory for EVENTS events, generated when missing."""
    directory = Path(directory or ROOT / "bench" / "data" / f"attribution-{events}")
    if not (directory / "manifest.json").exists():
        generate(events, directory)
    return directory


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, help="default mode: the number of events (default 1,000,000)")
    parser.add_argument("--production", action="store_true",
                        help="production rate: 1,000 events/s per GPU over --minutes (bench/attribution_production.py)")
    parser.add_argument("--minutes", type=int, help="--production: the span (default 60: 28,800,000 events)")
    parser.add_argument("--verify", action="store_true",
                        help="--production: check with the extension that the compact files decode to events.csv")
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"), help="for --verify")
    parser.add_argument("--dir")
    args = parser.parse_args()
    if args.production:
        production(args)
        return
    if args.minutes is not None or args.verify:
        parser.error("--minutes and --verify go with --production")
    events = 1_000_000 if args.events is None else args.events
    directory = Path(args.dir or ROOT / "bench" / "data" / f"attribution-{events}")
    print(json.dumps(generate(events, directory), indent=2))


def production(args):
    """--production: the data of attribution_production.py, timed, and checked if asked."""
    import attribution_production  # imports this module: only when asked for
    if args.events is not None:
        raise SystemExit("--production sizes the data by --minutes (8 GPUs x 60,000 events a minute), "
                         "not --events")
    minutes = 60 if args.minutes is None else args.minutes
    directory = Path(args.dir or attribution_production.default_directory(minutes))
    started = time.perf_counter()
    manifest = attribution_production.generate(minutes, directory)
    manifest["generation_seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps({k: v for k, v in manifest.items() if k != "files"}, indent=2))
    if args.verify:
        rows, digest = attribution_production.verify(directory, args.extension)
        print(f"verified: layer_events() of the compact files gives the {rows:,} rows of events.csv "
              f"(sha256 of the rows {digest[:16]})")


if __name__ == "__main__":
    main()
