"""Plain sentences from a JobReport's numbers, and what could not be resolved and what would.

Each sentence says where its numbers come from (an identified estimate, an interval, or a
blend). The judgement "memory-bound" follows the paper and the GPU-inference literature on
embedding lookups: DRAM far more active than the FP32 pipes, with low occupancy.
"""
import math

from .report import METRICS

MEMORY_BOUND_DRAM = 0.3        # DRAM active at least this ...
MEMORY_BOUND_RATIO = 2.0       # ... and at least this many times FP32 active
IDLE_WORTH_SAYING = 0.2        # device idle time worth a sentence of its own
UNRESOLVED_SHARE = 0.01        # layer types below this share of GPU time are not listed
TARGET_RELATIVE = 0.05         # what `identified` asks of an interval: within 5% of the value,
MIN_HALF_WIDTH = 0.001         # or within 0.1% of the metric's range
MAX_LISTED = 12
METRIC_LABEL = {short: label for _, short, label in METRICS}


def _percent(x):
    return f"{100 * x:.0f}%"


def _point(value):
    """A number to reason with: the estimate, the middle of an interval, or the blend."""
    if value.kind == "estimate" or value.kind == "blend":
        return value.value
    if value.kind == "interval":
        return (value.lower90 + value.upper90) / 2
    return None


def _blend_text(label, value):
    return f"{label} ~{value.blend:.2f}" if value.blend is not None else f"{label} unknown"


def _source(values):
    kinds = {v.kind for v in values if v.kind}
    if kinds == {"estimate"}:
        return "identified estimates"
    if "blend" in kinds:
        return "some of them blends of the sample window, so only indicative"
    return "estimates and 90% intervals"


def _stage(rows, layer_type):
    return [r for r in rows if r.layer_type == layer_type]


def busy_sentences(job):
    out = []
    if job.busy_share is not None:
        idle = 1 - job.busy_share
        sentence = (f"The GPU ran kernels {_percent(job.busy_share)} of the job's time and was idle "
                    f"{_percent(idle)} (mean GPU_UTIL {100 * job.busy_share:.1f}%).")
        if idle >= IDLE_WORTH_SAYING:
            sentence += (" Idle device time is time between kernels spent on the host (input pipeline, "
                         "index preparation for the embeddings, optimizer, synchronization); in DLRM training "
                         "it is often the first thing to reduce.")
        out.append(sentence)
    if job.untracked_share > 0:
        out.append(f"{_percent(job.untracked_share)} of the job's GPU time ran outside every layer "
                   "(functional operations such as feature interactions and concatenations, the optimizer, "
                   "data loading): see the (untracked) row.")
    return out


def embedding_sentences(job):
    rows = _stage(job.layer_types, "EmbeddingBag") or _stage(job.layer_types, "Embedding")
    if not rows:
        return []
    share = sum(r.share for r in rows)
    dram = [r.metrics["dram_active"] for r in rows]
    fp32 = [r.metrics["fp32_active"] for r in rows]
    occupancy = [r.metrics["sm_occupancy"] for r in rows]
    points = [(_point(d), _point(f)) for d, f in zip(dram, fp32)]
    name = rows[0].layer_type
    sentence = f"The embedding stage ({name}, forward and backward) takes {_percent(share)} of the GPU time"
    if any(d is None or f is None for d, f in points):
        return [sentence + "; its DRAM and FP32 activity are not known."]
    # The directions the estimator resolves decide where they hold most of the stage's time: a
    # blend is the sample window's mix of its neighbours (a short forward lookup beside the dense
    # layers reads as compute-leaning where it is not), so it is named as such and left out.
    resolved = [i for i in range(len(rows)) if dram[i].kind != "blend" and fp32[i].kind != "blend"]
    judged = resolved if sum(rows[i].share for i in resolved) > share / 2 else list(range(len(rows)))
    # The stage as a whole: each direction weighs by its share of the GPU time (a backward pass
    # that takes 500 times longer than the forward decides, as it does on the GPU).
    weights = {i: rows[i].share for i in judged} if sum(rows[i].share for i in judged) > 0 else dict.fromkeys(judged, 1)
    stage_dram = sum(w * points[i][0] for i, w in weights.items()) / sum(weights.values())
    stage_fp32 = sum(w * points[i][1] for i, w in weights.items()) / sum(weights.values())
    bound = stage_dram >= MEMORY_BOUND_DRAM and stage_dram >= MEMORY_BOUND_RATIO * stage_fp32
    detail = ", ".join(f"{r.direction} DRAM {d:.2f} vs FP32 {f:.2f}" for i, (r, (d, f)) in enumerate(zip(rows, points))
                       if i in judged)
    occ = [_point(occupancy[i]) for i in judged]
    if all(o is not None for o in occ):
        detail += ", SM occupancy " + "/".join(f"{o:.2f}" for o in occ)
    verdict = "and is memory-bound" if bound else "and is not memory-bound by this measure"
    weighted = f"DRAM {stage_dram:.2f} vs FP32 {stage_fp32:.2f} weighted by time" if len(judged) > 1 else ""
    left_out = [i for i in range(len(rows)) if i not in judged]
    # What its windows blend is the overlap mean of each metric, also where the other metric's
    # estimate is an interval (whose middle is no blend).
    blends = "; ".join(f"{rows[i].direction} not resolved (its sample windows blend "
                       f"{_blend_text('DRAM', dram[i])}, {_blend_text('FP32', fp32[i])} of its neighbours), left out"
                       for i in left_out)
    return [f"{sentence} {verdict}" + (f" ({weighted})" if weighted else "") +
            f": {detail} ({_source([dram[i] for i in judged] + [fp32[i] for i in judged])})" +
            (f"; {blends}" if blends else "") + "."]


def largest_sentence(job):
    tracked = [r for r in job.layer_types if r.direction != "untracked"]
    if not tracked:
        return []
    top = tracked[0]
    return [f"The largest share of GPU time is {top.name} {top.direction} ({_percent(top.share)}, "
            f"{top.calls} calls of {top.mean_ms:.2f} ms)."]


def memory_sentence(job):
    if job.gpu_mem_gib is None:
        return []
    peak = f" (peak {job.gpu_mem_peak_gib:.1f} GiB)" if job.gpu_mem_peak_gib is not None else ""
    return [f"GPU memory in use averaged {job.gpu_mem_gib:.1f} GiB{peak}."]


def sharing_sentence(job):
    if not job.shared_with:
        return []
    return [f"The job shared a GPU with {job.shared_with}: its means include that job's activity, and "
            "the estimates of the time both ran are solved jointly (memory in use is never resolved there)."]


def retention_sentence(job):
    if job.estimate_minutes is None:
        return []
    return [f"Only the last {job.estimate_minutes:.0f} of the run's {job.minutes:.0f} minutes kept their events "
            "(event_retention_minutes): the means cover the whole run, the estimates those minutes."]


def unresolved_items(job):
    """What could not be resolved (layer types holding at least UNRESOLVED_SHARE of the time), each
    with what would resolve it."""
    items = []
    for row in job.layer_types:
        if row.share < UNRESOLVED_SHARE:
            continue
        for short, value in row.metrics.items():
            if value.kind in ("estimate", None):
                continue
            what = f"{row.name} {row.direction if row.direction != 'untracked' else ''}".strip()
            items.append(f"{what}, {METRIC_LABEL[short]}: {_shown(value)}; {_remedy(job, row, value)}")
    return items[:MAX_LISTED] + ([f"... and {len(items) - MAX_LISTED} more (--format json lists every value)"]
                                 if len(items) > MAX_LISTED else [])


def _shown(value):
    if value.kind == "interval":
        return f"between {value.lower90:.3g} and {value.upper90:.3g} (90%), not identified"
    return f"only the blend {value.value:.3g} is known"


def _remedy(job, row, value):
    confidence = value.confidence or ""
    if confidence.startswith("not identified: ") and "honest answer" not in confidence:
        return "the reason: " + confidence[len("not identified: "):]
    # The minutes the estimate saw: the run, or what the retention setting kept of it.
    seen = job.estimate_minutes if job.estimate_minutes is not None else job.minutes
    if value.kind == "interval" and seen > 0:
        middle = (value.lower90 + value.upper90) / 2
        half = (value.upper90 - value.lower90) / 2
        # What `identified` asks: within 5% of the value, or 0.1% of the metric's range.
        target = max(TARGET_RELATIVE * abs(middle), MIN_HALF_WIDTH * (value.scale or 0))
        if target > 0 and half > 0:
            # Intervals narrow as 1/sqrt(windows): the run length needed grows as the square.
            minutes = max(seen * (half / target) ** 2, 2 * seen)
            if minutes < 24 * 60:
                minutes = math.ceil(minutes)
                if job.estimate_minutes is not None:
                    return f"keeping about {minutes} minutes of events (event_retention_minutes) would likely identify it"
                return f"a run of about {minutes} minute{'s' if minutes > 1 else ''} would likely identify it"
    if job.window_ms and row.mean_ms and row.mean_ms < job.window_ms:
        shorter = "a shorter DCGM interval (dcgm-exporter -c 100 and a 100 ms scrape)" if job.window_ms > 100 \
            else "many more windows"
        return (f"its calls ({row.mean_ms:.2f} ms) are far shorter than the {job.window_ms:.0f} ms sample window: "
                f"{shorter} or a much longer run")
    return "a longer run"


def no_gpu_sentences(job):
    """A job whose events name no GPU (a run on the CPU): no share of GPU time or counter exists,
    so what it has is its calls' own time."""
    out = ["The job ran on no GPU (its layer events name none): there are no GPU counters to attribute, so "
           "every share of GPU time is 0% and no metric is known. `precisionprobe analyze RUN_DIR --emulate dlrm` "
           "replays its layer calls on an emulated GPU."]
    timed = [r for r in job.layer_types if r.direction != "untracked" and r.calls and r.mean_ms is not None]
    if timed:
        top = max(timed, key=lambda r: r.calls * r.mean_ms)
        out.append(f"The most time in layer calls went to {top.name} {top.direction} "
                   f"({top.calls * top.mean_ms / 1000:.1f} s: {top.calls} calls of {top.mean_ms:.2f} ms).")
    return out


def complete(job):
    """Fills job.findings and job.unresolved; returns job."""
    if not job.gpus:
        job.findings, job.unresolved = no_gpu_sentences(job), []
        return job
    job.findings = (busy_sentences(job) + largest_sentence(job) + embedding_sentences(job) + memory_sentence(job)
                    + sharing_sentence(job) + retention_sentence(job))
    job.unresolved = unresolved_items(job)
    return job
