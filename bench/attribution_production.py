"""The production-rate data of the attribution benchmark: `bench/attribution_data.py --production`.

The default data (attribution_data.py) are generated call by call in Python, which limits them to
about a million events; this module makes the same kind of data at the rate of a production
cluster, with numpy, one GPU at a time:

  * 8 GPUs on two hosts, MINUTES minutes (default 60) from T0, each GPU running one rank of a
    DLRM training job at about 1,000 layer events/s: 8 x 60,000 x MINUTES events in all
    (28,800,000 for the hour), exactly 60,000 x MINUTES per GPU;
  * 4 jobs (PRODUCTION_JOBS), their start and end fractions of the span: dlrm-a on GPUs 0-3 and
    dlrm-c on GPUs 6-7 start in the first minutes and are still running when the data end;
    dlrm-b runs on GPUs 4-5 until 62% of the span, and dlrm-d follows it there from 66%;
  * a step is the model's leaf layers forward in order and backward in reverse, 46-78 events
    (8-24 embedding tables), as model_layers() of the default data builds them; per-call jitter
    and 1% slow calls as there; 3-40 us launch gaps, the invisible interaction op, the loss's
    backward start and the optimizer step as there; a pause of 2-8 s every PAUSE_EVERY_STEPS
    steps (evaluation, checkpoint);
  * the rate is met by construction: a job's layers take its `layer_share` of the rank's span,
    and the data loading between steps is what the span leaves over, split over the steps with
    job-specific random weights (dlrm-b's vary most: it is the input-bound one);
  * the six metrics per GPU every 100 ms for the span, each window's value computed from what ran
    in it exactly as the default data's are (busy share, profile-weighted means, dcgm-exporter's
    printing, 0.5% multiplexing zeros, the memory gauge while a job is resident), stamped at the
    window's end.

Writes to DIR (default bench/data/attribution-production-EVENTS, gitignored):
  events/JOB/rank-R.jsonl   the hook client's compact format (its default; see
                            docs/reference/layer_events.md), a block line at every step and
                            every 0.2 s drain as its writer starts them, for layer_events and
                            pp_refresh
  events.csv, samples.csv, samples.om   as the default data's (same columns)
  manifest.json             "mode": "production", counts, sizes and checksums of the above
"""
import hashlib
import itertools
import json
import os
import random
import shutil
import sqlite3
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attribution_data import (GPUS, INTERVAL_MS, METRICS, PROFILE, ROOT, SEED, T0_NS, T0_S, hash_str, host_of,
                              model_layers, series_labels, uuid_of)

from precisionprobe._compact_format import MAGIC  # the client's format line
from precisionprobe._event_format import FORMAT_VERSION, HEADER_RECORD

EVENTS_PER_SECOND = 1000          # per GPU, over the whole span
EVENTS_PER_MINUTE = GPUS * 60 * EVENTS_PER_SECOND
STEPS_PER_EPOCH = 20_000
PAUSE_EVERY_STEPS = 3000
DRAIN_NS = 200_000_000            # the hook client's writer writes (and starts a block) every 0.2 s
MIN_LOADING_NS = 500_000          # the least mean data loading a step may be left with
WINDOW_NS = INTERVAL_MS * 10**6
CHUNK = 500_000                   # events formatted at a time: bounds the memory of the text


class ProductionJob(NamedTuple):
    job_id: str
    gpus: list
    start: float          # fraction of the span
    end: float | None     # fraction of the span; None: still running when the data end
    tables: int           # embedding tables: a step is 2 x (15 + tables) events
    layer_share: float    # of the span, the time its layers run (the GPU's busy share)
    loading_weights: tuple  # range of each step's weight in splitting the data loading time
    memory_mib: int       # resident framebuffer while it runs


PRODUCTION_JOBS = [
    ProductionJob("dlrm-a", [0, 1, 2, 3], 0.005, None, 24, 0.80, (0.7, 1.5), 24870),
    ProductionJob("dlrm-b", [4, 5], 0.012, 0.62, 12, 0.62, (0.3, 3.0), 21120),
    ProductionJob("dlrm-c", [6, 7], 0.025, None, 8, 0.72, (0.6, 1.8), 26480),
    ProductionJob("dlrm-d", [4, 5], 0.66, None, 20, 0.76, (0.7, 1.4), 23350),
]


class RankPlan(NamedTuple):
    """One rank of a job: where it runs, how many events it writes, over which span."""
    job: ProductionJob
    rank: int
    gpu: int
    events: int
    start_ns: int
    end_ns: int
    layers: list          # (name, type, forward ms, backward ms) in forward order


class RankCalls(NamedTuple):
    """A rank's layer calls in time order: index into step_calls(), step number, times (ns)."""
    call: np.ndarray
    step: np.ndarray
    t_start: np.ndarray
    t_end: np.ndarray


def step_calls(layers):
    """One step's calls: (layer id, forward) with layer ids in forward order, then backward."""
    ids = list(range(len(layers)))
    return [(i, True) for i in ids] + [(i, False) for i in reversed(ids)]


def default_directory(minutes):
    return ROOT / "bench" / "data" / f"attribution-production-{minutes * EVENTS_PER_MINUTE}"


# ---- the plan: which rank runs where, when, and how many events it writes ----

def rank_plans(minutes):
    """Every rank's plan. Each GPU writes exactly 60,000 x MINUTES events; a GPU that two jobs
    share in turn splits them by the jobs' spans, the finished job ending on a whole step."""
    span_ns = minutes * 60 * 10**9
    per_gpu = minutes * 60 * EVENTS_PER_SECOND
    models = {job.job_id: model_layers(random.Random(SEED * 31 + hash_str(job.job_id)), job.tables)
              for job in PRODUCTION_JOBS}
    counts = {}
    for g in range(GPUS):
        jobs = [job for job in PRODUCTION_JOBS if g in job.gpus]
        lengths = [(job.end or 1.0) - job.start for job in jobs]
        left = per_gpu
        for job, length in zip(jobs[:-1], lengths):
            steps = int(per_gpu * length / sum(lengths)) // (2 * len(models[job.job_id]))
            counts[(job.job_id, g)] = steps * 2 * len(models[job.job_id])
            left -= counts[(job.job_id, g)]
        counts[(jobs[-1].job_id, g)] = left
    plans = []
    for job in PRODUCTION_JOBS:
        for rank, g in enumerate(job.gpus):
            rng = rank_rng(job, rank, "span")
            start = T0_NS + int(job.start * span_ns) + int(rng.integers(0, 2_000_000))
            end = T0_NS + int((job.end or 1.0) * span_ns) - int(rng.integers(0, 20_000_000))
            plans.append(RankPlan(job, rank, g, counts[(job.job_id, g)], start, end, models[job.job_id]))
    return plans


def rank_rng(job, rank, purpose):
    """A generator of its own for each (job, rank, purpose): the data do not depend on the order
    in which ranks are generated."""
    return np.random.default_rng([SEED, hash_str(job.job_id), rank, hash_str(purpose)])


# ---- one rank's calls ----

def rank_calls(plan):
    """The rank's calls: durations scaled so its layers take layer_share of the span, the gaps of
    the default data, and data loading filling the rest."""
    rng = rank_rng(plan.job, plan.rank, "calls")
    calls = step_calls(plan.layers)
    per_step = len(calls)
    index = np.arange(plan.events)
    call, step = index % per_step, index // per_step
    span = plan.end_ns - plan.start_ns
    durations = call_durations(plan, calls, call, span, rng)
    gaps = fixed_gaps(plan, calls, call, step, rng)
    step_ends = np.flatnonzero(call == per_step - 1)
    loading = span - durations.sum() - gaps.sum()
    if len(step_ends) == 0 or loading < MIN_LOADING_NS * len(step_ends):
        raise SystemExit(f"{plan.job.job_id} rank {plan.rank}: its layers leave "
                         f"{loading / max(1, len(step_ends)) / 1e6:.2f} ms of data loading a step: "
                         f"a longer span or a smaller layer_share, please")
    weights = rng.uniform(*plan.job.loading_weights, len(step_ends))
    gaps[step_ends] += (loading * weights / weights.sum()).astype(np.int64)
    t_start = plan.start_ns + np.concatenate([[0], np.cumsum(durations + gaps)[:-1]])
    return RankCalls(call.astype(np.uint8), step, t_start, t_start + durations)


def call_durations(plan, calls, call, span, rng):
    """Each call's duration (ns): its layer's base, jitter and rare slow calls as in the default
    data, all scaled so that the layers take layer_share of the span."""
    base_ms = np.array([plan.layers[i][2] if forward else plan.layers[i][3] for i, forward in calls])
    d = base_ms[call] * rng.uniform(0.85, 1.2, len(call))
    slow = rng.random(len(call)) < 0.01
    d[slow] *= rng.uniform(1.5, 2.5, int(slow.sum()))
    d *= plan.job.layer_share * span / (d.sum() * 1e6)
    d_ns = (np.clip(d, 0.01, 5.0) * 1e6).astype(np.int64) + rng.integers(0, 1000, len(call))
    return np.minimum(d_ns, 5_000_000)


def fixed_gaps(plan, calls, call, step, rng):
    """The time after each call up to the next one, data loading left out: the launch gap, the
    interaction op after the last embedding bag, the loss's backward start, the optimizer step
    after the last call of a step, and a pause of seconds every PAUSE_EVERY_STEPS steps."""
    n, per_step = len(call), len(calls)
    gaps = rng.integers(3_000, 40_000, n)
    last_embedding = max(i for i, (name, *_) in enumerate(plan.layers) if name.startswith("emb_l."))
    at = call == last_embedding                      # forward calls come first: call id == layer id
    gaps[at] += rng.integers(200_000, 600_000, int(at.sum()))
    at = call == len(plan.layers) - 1                # the loss, forward
    gaps[at] += rng.integers(50_000, 200_000, int(at.sum()))
    step_end = call == per_step - 1
    gaps[step_end] += rng.integers(500_000, 2_000_000, int(step_end.sum()))
    pause = step_end & ((step + 1) % PAUSE_EVERY_STEPS == 0)
    gaps[pause] += rng.integers(2 * 10**9, 8 * 10**9, int(pause.sum()))
    return gaps


# ---- the event files ----

def job_header(plan):
    """The job header line as the hook client writes it (fixed values where it reads the machine)."""
    host, ip = host_of(plan.gpu)
    return json.dumps({
        "record": HEADER_RECORD, "format_version": FORMAT_VERSION, "job_id": plan.job.job_id,
        "host_name": host, "ip": ip, "pod": f"{plan.job.job_id}-worker-{plan.rank}", "namespace": "recsys",
        "rank": plan.rank, "local_rank": plan.rank % 4, "world_size": len(plan.job.gpus),
        "pid": 41000 + 1000 * PRODUCTION_JOBS.index(plan.job) + 10 * plan.gpu + plan.rank, "cpu_num": 16.0,
        "command": ["python", "dlrm_s_pytorch.py"], "python_version": "3.10.12", "torch_version": "2.3.0",
        "precisionprobe_version": "bench", "start_time_ns": plan.start_ns, "model": "DLRM_Net",
        "parameters": 540_000_000, "clock": "cuda"}, separators=(",", ":")) + "\n"


def block_starts(calls, rng):
    """Where the writer starts a block line: at its first event, at every new step (batch), and at
    the first event of each 0.2 s drain (an event is queued when its call ends)."""
    drain = (calls.t_end - T0_NS - int(rng.integers(0, DRAIN_NS))) // DRAIN_NS
    starts = np.ones(len(calls.call), bool)
    starts[1:] = (calls.step[1:] != calls.step[:-1]) | (drain[1:] != drain[:-1])
    return starts


def compact_chunks(plan, calls):
    """The rank's compact file as text chunks: format line, header, then the events, each layer's
    L line before its first event and the device's D line before the first event (the writer's
    order)."""
    rng = rank_rng(plan.job, plan.rank, "drains")
    steps = step_calls(plan.layers)
    heads = [f"{layer} {'f0' if forward else 'b0'} " for layer, forward in steps]
    definitions = {i: f"L {i} {json.dumps(name)} {json.dumps(kind)}\n"
                   for i, (name, kind, _, _) in enumerate(plan.layers)}
    definitions[0] += f"D 0 {plan.gpu % 4} {json.dumps(uuid_of(plan.gpu))}\n"
    starts = block_starts(calls, rng)
    block_of = np.maximum.accumulate(np.where(starts, np.arange(len(starts)), 0))
    offsets = calls.t_start - calls.t_start[block_of]
    durations = calls.t_end - calls.t_start
    yield MAGIC + job_header(plan)
    for lo in range(0, len(calls.call), CHUNK):
        hi = min(lo + CHUNK, len(calls.call))
        lines = [f"{heads[c]}{o} {d}\n" for c, o, d in zip(
            calls.call[lo:hi].tolist(), offsets[lo:hi].tolist(), durations[lo:hi].tolist())]
        for i in (np.flatnonzero(starts[lo:hi]) + lo).tolist():
            step = int(calls.step[i])
            lines[i - lo] = f"@ {calls.t_start[i]} {step // STEPS_PER_EPOCH} {step}\n" + lines[i - lo]
        if lo == 0:  # the first step defines every layer, in forward order
            for i, text in definitions.items():
                lines[i] = text + lines[i]
        yield "".join(lines)


def csv_chunks(plan, calls):
    """The rank's rows of events.csv (the default data's columns)."""
    host, ip = host_of(plan.gpu)
    prefixes = [f"{plan.job.job_id},{host},{ip},{uuid_of(plan.gpu)},{plan.gpu % 4},{plan.layers[i][0]},"
                f"{plan.layers[i][1]},{1 if forward else 0}," for i, forward in step_calls(plan.layers)]
    for lo in range(0, len(calls.call), CHUNK):
        hi = min(lo + CHUNK, len(calls.call))
        yield "".join([f"{prefixes[c]}{s},{e},16.0\n" for c, s, e in zip(
            calls.call[lo:hi].tolist(), calls.t_start[lo:hi].tolist(), calls.t_end[lo:hi].tolist())])


class HashingFile:
    """A text file written in chunks, its sha256 and size kept on the way (no second read)."""

    def __init__(self, path):
        self.file = open(path, "wb")
        self.hash = hashlib.sha256()
        self.bytes = 0

    def write(self, text):
        data = text.encode()
        self.file.write(data)
        self.hash.update(data)
        self.bytes += len(data)

    def close(self):
        self.file.close()
        return self.hash.hexdigest()


# ---- the samples ----

def window_sums(t_start, t_end, weights, window_ends):
    """For each window (end - 100 ms, end]: the sum over calls of (ns of the call inside it) x the
    call's weight, per weight column. The calls are sorted and do not overlap (one GPU), so this
    is a difference of cumulative sums at the window's two ends."""
    cumulative = np.vstack([np.zeros(weights.shape[1]), np.cumsum((t_end - t_start)[:, None] * weights, axis=0)])

    def until(t):  # sum of covered ns x weight up to time t
        i = np.searchsorted(t_start, t, side="right")
        last = np.maximum(i - 1, 0)
        partial = np.clip(t - t_start[last], 0, t_end[last] - t_start[last])
        return np.where((i > 0)[:, None], cumulative[last] + partial[:, None] * weights[last], 0.0)
    return until(window_ends) - until(window_ends - WINDOW_NS)


def gpu_samples(g, plans, calls, windows):
    """The six metrics' printed values (rows: windows, columns: METRICS) of GPU g, as the default
    data computes them: utilization from the busy share, the profiling ratios from the profile of
    the layer types, weighted by their time in the window, memory while a job is resident."""
    rng = np.random.default_rng([SEED, 1, g])
    window_ends = T0_NS + WINDOW_NS * np.arange(1, windows + 1, dtype=np.int64)
    sums = np.zeros((windows, 5))
    for plan, c in zip(plans, calls):
        kinds = [plan.layers[i][1] for i, _ in step_calls(plan.layers)]
        per_call = np.array([[1.0, *PROFILE[kind]] for kind in kinds])
        sums += window_sums(c.t_start, c.t_end, per_call[c.call], window_ends)
    busy = sums[:, 0] / WINDOW_NS
    util = np.minimum(100, np.round(100 * np.minimum(1.0, busy * rng.uniform(0.96, 1.04, windows))))
    resident = np.zeros(windows, np.int64)
    for plan, c in reversed(list(zip(plans, calls))):  # the earlier job wins, as there
        inside = (c.t_start[0] - 2 * 10**9 < window_ends) & (window_ends <= plan.end_ns + 10**9)
        resident[inside] = plan.job.memory_mib
    mem = 427 + 3 * g + np.where(resident > 0, resident + (1800 * busy).astype(np.int64)
                                 + rng.integers(0, 64, windows), 0)
    ratios = np.clip(sums[:, 1:] / WINDOW_NS * rng.uniform(0.97, 1.03, (windows, 4))
                     + rng.uniform(0.0, 0.004, (windows, 4)), 0.0, 1.0)
    ratios[rng.random((windows, 4)) < 0.005] = 0.0   # multiplexed: reads 0, still data
    columns = [["%d" % v for v in util.astype(np.int64).tolist()], ["%d" % v for v in mem.tolist()]]
    columns += [["%f" % v for v in ratios[:, m].tolist()] for m in range(4)]
    return columns


def write_samples(directory, texts, windows):
    """samples.csv and samples.om as the default data writes them: metric by metric, GPU by GPU."""
    csv, om = HashingFile(directory / "samples.csv"), open(directory / "samples.om", "w")
    csv.write("uuid,metric,ts_ms,value\n")
    stamps = [str(T0_S * 1000 + (k + 1) * INTERVAL_MS) for k in range(windows)]
    om_stamps = [f"{int(s) // 1000}.{int(s) % 1000:03d}" for s in stamps]
    for m, metric in enumerate(METRICS):
        om.write(f"# TYPE {metric} gauge\n")
        for g in range(GPUS):
            labels = series_labels(g)
            values = texts[g][m]
            csv.write("".join([f"{uuid_of(g)},{metric},{s},{v}\n" for s, v in zip(stamps, values)]))
            om.write("".join([f"{metric}{{{labels}}} {v} {s}\n" for s, v in zip(om_stamps, values)]))
    om.write("# EOF\n")
    om.close()
    return csv.close()


# ---- the whole data set ----

def generate(minutes, directory=None):
    """Writes the data of MINUTES minutes into DIRECTORY (through DIRECTORY.tmp); returns the
    manifest."""
    directory = Path(directory or default_directory(minutes))
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "events").mkdir(parents=True)
    windows = minutes * 60 * 1000 // INTERVAL_MS
    plans = rank_plans(minutes)
    events_csv = HashingFile(tmp / "events.csv")
    events_csv.write("job_id,host_name,ip,gpu_uuid,gpu,layer,layer_type,forward,t_start_ns,t_end_ns,cpu_num\n")
    files, samples = {}, []
    for g in range(GPUS):
        on_gpu = sorted((p for p in plans if p.gpu == g), key=lambda p: p.start_ns)
        calls = [rank_calls(p) for p in on_gpu]
        for plan, c in zip(on_gpu, calls):
            name = f"events/{plan.job.job_id}/rank-{plan.rank}.jsonl"
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            out = HashingFile(tmp / name)
            for text in compact_chunks(plan, c):
                out.write(text)
            files[name] = {"gpu": g, "events": plan.events, "bytes": out.bytes, "sha256": out.close()}
            for text in csv_chunks(plan, c):
                events_csv.write(text)
        samples.append(gpu_samples(g, on_gpu, calls, windows))
        del calls
    events = sum(f["events"] for f in files.values())
    assert events == minutes * EVENTS_PER_MINUTE
    compact_bytes = sum(f["bytes"] for f in files.values())
    manifest = {
        "mode": "production", "seed": SEED, "events": events, "samples": len(METRICS) * GPUS * windows,
        "gpus": GPUS, "t0": T0_S, "minutes": minutes, "interval_ms": INTERVAL_MS,
        "events_per_second_per_gpu": EVENTS_PER_SECOND, "event_format": "compact",
        "jobs": [job.job_id for job in PRODUCTION_JOBS],
        "compact_bytes": compact_bytes, "compact_bytes_per_event": round(compact_bytes / events, 2),
        "events_csv_bytes": events_csv.bytes, "files": files,
        "sha256": {"events.csv": events_csv.close(), "samples.csv": write_samples(tmp, samples, windows)}}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return manifest


def ensure(minutes, directory=None):
    """The production data directory of MINUTES minutes, generated when missing."""
    directory = Path(directory or default_directory(minutes))
    if not (directory / "manifest.json").exists():
        generate(minutes, directory)
    return directory


# ---- the check that the compact files say what events.csv says ----

def verify(directory, extension):
    """Reads the compact files with the extension's layer_events() and compares them row by row
    with events.csv, which is in the same order (GPU by GPU, in time). Returns the number of rows
    and a sha256 of them; raises SystemExit at the first difference."""
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(extension)
    decoded = conn.execute(
        "SELECT job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns FROM layer_events(?) "
        "ORDER BY gpu_uuid, t_start_ns", (str(Path(directory) / "events"),))
    digest = hashlib.sha256()
    rows = 0
    with open(Path(directory) / "events.csv") as f:
        next(f)
        for row, line in itertools.zip_longest(decoded, f):
            if row is None or line is None:
                raise SystemExit(f"compact files and events.csv differ: after {rows:,} rows, only "
                                 f"{'events.csv' if row is None else 'the compact files'} go on")
            r = line.split(",")
            written = (r[0], r[3], r[5], r[6], int(r[7]), int(r[8]), int(r[9]))
            if row != written:
                raise SystemExit(f"compact files and events.csv differ at row {rows + 1:,}: {row} against {written}")
            digest.update(repr(row).encode())
            rows += 1
    return rows, digest.hexdigest()
