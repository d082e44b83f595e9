"""Co-location: several DLRM-like training processes on ONE emulated GPU (offline emulation).

Real clusters share GPUs. DCGM samples the whole GPU, so every sample of the time two jobs ran
together describes both. This module makes recordings of that with a known truth per job:
record() generates one timeline per job (timeline.py, each with its own seed and layer-duration
scale), merges them on one GPU as the sharing mode says, derives the GPU's counter signal from
the jobs' layers, and samples it exactly as offline.record() samples one job (the same timing
model, timing.py, realistic by default; noise.py). write() puts on disk what offline.write()
does, with one event file per job:

  OUT/metrics.om               one emulated GPU's six series (no pod label: the GPU is no one
                               pod's), for `promtool tsdb create-blocks-from openmetrics`
  OUT/events/events-emulated-node-PID.jsonl
                               one file per job in the hook client's format: distinct job_id
                               (emulated-dlrm-0, -1, ...), pid (1, 2, ...) and pod, the same
                               gpu_uuid; pp_refresh('OUT/events') reads them all
  OUT/truth.json               per job, per layer and per (layer type, direction), the values
                               that job's layer has when it runs ALONE on the GPU (what an
                               estimator should recover), its seeds and scales; the sharing mode
                               and its parameters under "colocation"; timing as offline.py
  OUT/samples_truth.csv        per stored sample what it describes (as offline.py)

Sharing modes (--sharing; which real behaviour each models, and what is assumed; [c]: chosen
here, the sources leave it open):

  behaviour                                  | real component               | parameter          | default
  -------------------------------------------|------------------------------|--------------------|-------------------
  time-sliced: one context at a time; a call | GPU time-slicing between     | --sharing          | time-sliced
  that becomes ready while another job's     | processes (the default when  | time-sliced        |
  call runs waits until it ends, then runs   | several processes use one    |                    |
  whole (first ready, first served); the     | GPU without MPS)             |                    |
  recorded times are when it ran on the GPU  |                              |                    |
  (the hook client records GPU times)        |                              |                    |
  after another job's call the GPU is idle  | the context switch between   | --context-switch-us| 25 us [c]
  for a context switch: two jobs' calls      | time-sliced processes        |                    |
  never touch                                |                              |                    |
  concurrent: the jobs' kernels run at once; | MPS, or several streams      | --sharing          | -
  the timelines are independent and overlap  | sharing the SMs              | concurrent         |
  each job's calls and gaps: its own DLRM    | the training process (data   | seed + job index,  | job j: seed + j,
  timeline, stretched in time by its scale   | loading, optimizer, batch    | --duration-scales  | 1 + 0.25 j [c]
                                             | size)                        |                    |
  a job's layer values: the profile's, its   | a smaller or larger model on | --activity-scales  | 0.85^j [c]
  activity above idle times its scale        | the same layer types         |                    |
  PROF_* = idle + the sum over running jobs  | the GPU's SMs and memory     | -                  | - [c]: real
  of (value - idle), clipped at the metric's | (DCGM's counters are per     |                    | hardware is sub-
  upper bound                                | GPU, not per process)        |                    | additive for SM
                                             |                              |                    | activity and
                                             |                              |                    | occupancy
  GPU_UTIL = busy when any job's kernel is:  | NVML: "one or more kernels   | -                  | - [c]
  100 * (1 - prod over running jobs of       | executing"                   |                    |
  (1 - value/100)) (independent busy times)  |                              |                    |
  FB_USED = the SUM over all jobs of each    | NVML: memory of co-resident  | -                  | - [c]: a job's
  job's memory: its running layer's FB value,| processes adds up, also while|                    | memory between
  else its profile's idle FB (its baseline)  | one is descheduled           |                    | its layers
  the samples: DCGM windows, exporter,       | as for one job (timing.py)   | the timing flags   | realistic
  Prometheus scrapes, noise; after the       |                              |                    |
  recording's end, the idle tail (offline.py)|                              |                    |

With one job running (or time-sliced, where at most one runs), every activity metric reads that
job's own value, so the signal is exactly the single-job one; FB_USED adds the other jobs'
baselines, so no job's FB_USED truth can be read off a shared GPU (the engine never identifies
FB_USED rows of co-located jobs). The emulator does not enforce the GPU's memory capacity: two
DLRM profiles hold about 47 GiB on an emulated 32 GB card.

Left out, so chosen here [c]: time-slicing at the granularity of whole layer calls. Real
time-slices (a few ms, set by the driver) can pre-empt a long layer's kernels, so a layer's
recorded GPU span can hold turns of the other process and the two jobs' events then overlap;
here they never do. The clipped sum under concurrency is an upper bound on what hardware reports.

  python3 -m precisionprobe.emulator offline --out DIR --jobs 2 --sharing time-sliced|concurrent
      [--duration-scales 1,1.25] [--activity-scales 1,0.85] [--context-switch-us 25]
      (and every flag of offline)
"""
import copy
import heapq
import json
import os
from dataclasses import dataclass

import numpy as np

from . import offline
from . import timing as timing_model
from .exposition import EMULATOR_NAME, EmulatedGpu, emulated_uuid, write_openmetrics
from .noise import measure
from .profile import FB_USED, GPU_UTIL, METRICS, PROF_METRICS, UPPER_BOUNDS, Profile
from .timeline import Events, dlrm_timeline
from .timing import Timing
from .truth import Timeline

SHARING = ("time-sliced", "concurrent")
DEFAULT_SHARING = "time-sliced"
DEFAULT_SWITCH_US = 25.0  # chosen: a context switch costs tens of microseconds
MAX_SWITCH_US = 1e6       # a second: far beyond any GPU's, and the ns arithmetic stays in int64
_UTIL, _FB = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)
_PROF = [METRICS.index(m) for m in PROF_METRICS]


def default_duration_scales(jobs):
    return [1.0 + 0.25 * j for j in range(jobs)]


def default_activity_scales(jobs):
    return [round(0.85 ** j, 6) for j in range(jobs)]


def job_id(j):
    return f"{offline.JOB_ID}-{j}"


def scaled_profile(profile, scale):
    """The profile with every layer's activity above idle (GPU_UTIL, DCGM_FI_PROF_*) times scale,
    clipped at the metric's bound; memory and idle unchanged. scale 1: the profile itself."""
    if scale == 1:
        return profile
    data = copy.deepcopy(profile.data)
    idle = data["idle"]

    def scale_values(values):
        for metric in METRICS:
            if metric != FB_USED:
                v = idle[metric] + scale * (values[metric] - idle[metric])
                values[metric] = float(min(max(v, 0.0), UPPER_BOUNDS[metric]))

    for section in ("layer_types", "layers"):
        for directions in data.get(section, {}).values():
            for values in directions.values():
                scale_values(values)
    if "default" in data:
        for values in data["default"].values():
            scale_values(values)
    return Profile(data, f"{profile.source} (activity x{scale:g})")


def stretched(events, start_ns, scale):
    """The timeline with every time after start_ns multiplied by scale (calls and gaps alike)."""
    if scale == 1:
        return events
    stretch = lambda t: start_ns + np.rint((t - start_ns) * float(scale)).astype(np.int64)  # noqa: E731
    return Events(events.layers, events.layer_id, events.forward, events.batch,
                  stretch(events.t_start_ns), stretch(events.t_end_ns))


def time_slice(timelines, start_ns, switch_ns=0):
    """Merges the jobs' timelines onto one GPU that runs one call at a time.

    Each job keeps its own order, call durations and the untracked gap before each call (host
    time: data loading, launches), measured from the end of ITS previous call; a call is ready
    at that end plus its gap and runs when the GPU is free, the earliest-ready call first (ties:
    the lower job index); after another job's call the GPU is free switch_ns later (the context
    switch). Returns per job (the Events as run, per call how long it waited, ns)."""
    n = len(timelines)
    gaps, durations = [], []
    for ev in timelines:
        previous_end = np.concatenate([[start_ns], ev.t_end_ns[:-1]]) if len(ev) else np.zeros(0, np.int64)
        gaps.append((ev.t_start_ns - previous_end).tolist())
        durations.append((ev.t_end_ns - ev.t_start_ns).tolist())
    starts = [[] for _ in range(n)]
    heap = [(start_ns + gaps[j][0], j) for j in range(n) if gaps[j]]
    heapq.heapify(heap)
    free, waited, previous = start_ns, [[] for _ in range(n)], None
    while heap:
        ready, j = heapq.heappop(heap)
        begin = max(free + (switch_ns if previous not in (None, j) else 0), ready)
        previous = j
        waited[j].append(begin - ready)
        free = begin + durations[j][len(starts[j])]
        starts[j].append(begin)
        i = len(starts[j])
        if i < len(gaps[j]):
            heapq.heappush(heap, (free + gaps[j][i], j))
    out = []
    for j, ev in enumerate(timelines):
        begin = np.asarray(starts[j], dtype=np.int64)
        out.append((Events(ev.layers, ev.layer_id, ev.forward, ev.batch, begin,
                           begin + np.asarray(durations[j], dtype=np.int64)),
                    np.asarray(waited[j], dtype=np.int64)))
    return out


def combined_signal(jobs, idle):
    """The GPU's signal (a truth.Timeline) from the jobs' calls: jobs is [(starts_ns, ends_ns,
    values (calls x 6))] per job, each job's calls not overlapping each other; idle: the GPU's
    values when no job runs, with FB_USED that of ONE job's baseline. Between any two of the
    jobs' start or end times the signal is constant: the module doc's sums over running jobs."""
    idle = np.asarray(idle, dtype=np.float64)
    bounds = np.unique(np.concatenate([np.concatenate([s, e]) for s, e, _ in jobs]).astype(np.int64))
    seg_begin, seg_end = bounds[:-1], bounds[1:]
    excess = np.zeros((len(seg_begin), len(METRICS)))
    idle_util = np.ones(len(seg_begin))  # prod over running jobs of (1 - busy fraction)
    running_any = np.zeros(len(seg_begin), bool)
    util_span = UPPER_BOUNDS[GPU_UTIL] - idle[_UTIL]
    for starts, ends, values in jobs:
        starts = np.asarray(starts, dtype=np.int64)
        if not len(starts):
            continue
        i = np.searchsorted(starts, seg_begin, side="right") - 1
        last = np.maximum(i, 0)
        running = (i >= 0) & (seg_begin < np.asarray(ends, dtype=np.int64)[last])
        e = np.where(running[:, None], np.asarray(values, dtype=np.float64)[last] - idle, 0.0)
        excess += e
        if util_span > 0:
            idle_util *= 1.0 - e[:, _UTIL] / util_span
        running_any |= running
    out = idle + excess
    out[:, _UTIL] = idle[_UTIL] + util_span * (1.0 - idle_util)
    for m in _PROF:
        out[:, m] = np.clip(out[:, m], 0.0, UPPER_BOUNDS[METRICS[m]])
    out[:, _FB] += (len(jobs) - 1) * idle[_FB]  # the other jobs' baselines
    gpu_idle = idle.copy()
    gpu_idle[_FB] *= len(jobs)
    # Where no job runs the signal is the GPU's idle: those stretches need no segment.
    return Timeline(seg_begin[running_any], seg_end[running_any], out[running_any], gpu_idle)


@dataclass
class JobRun:
    """One training process on the shared GPU."""
    index: int
    job_id: str
    pid: int
    pod: str
    timeline_seed: int
    duration_scale: float
    activity_scale: float
    profile: Profile          # its values (the recording's profile, activity-scaled)
    events: Events            # its calls as they ran on the shared GPU
    call_values: np.ndarray   # (calls x 6): each call's values when it runs alone
    waited_ns: int            # time-sliced: how long its calls waited for other jobs' calls


@dataclass
class ColocatedRecording:
    gpu: EmulatedGpu
    profile: Profile
    sharing: str
    jobs: list                # JobRun per job
    interval_ms: int
    tick_ms: np.ndarray       # as offline.Recording: stored sample times, unix ms
    truth_means: np.ndarray   # (samples x 6): noiseless values of what each sample describes
    samples: np.ndarray       # (samples x 6): what the emulated exporter publishes
    noise: float
    mux_zero: float
    seed: int
    start_ns: int
    seconds: float
    timing: Timing            # resolved
    schedule: object          # timing.Schedule
    signal: Timeline          # the GPU's ground-truth signal (all jobs)
    context_switch_us: float = None  # time-sliced: the GPU's time to pass between jobs
    tail_seconds: float = 0.0  # samples of the idle GPU stored after the recording's end (timing.py)

    def job_recording(self, j):
        """Job j as an offline.Recording sharing the GPU's samples: its events and its own truth
        (layer_truth(), type_truth(): the values of its layers running alone)."""
        job = self.jobs[j]
        return offline.Recording(self.gpu, job.profile, job.events, job.call_values, self.interval_ms,
                                 self.tick_ms, self.truth_means, self.samples, self.noise, self.mux_zero,
                                 self.seed, self.start_ns, self.seconds, self.timing, self.schedule,
                                 extra={"job_id": job.job_id, "pid": job.pid}, tail_seconds=self.tail_seconds)


def _scales(values, jobs, name, default):
    if values is None:
        return default(jobs)
    values = [float(v) for v in values]
    if len(values) != jobs:
        raise ValueError(f"{name}: {len(values)} values for {jobs} jobs (give one per job)")
    bad = [v for v in values if not (np.isfinite(v) and v > 0)]
    if bad:
        raise ValueError(f"{name}: scales must be positive numbers, got {bad[0]:g}")
    return values


def record(seconds, interval_ms, noise, seed, profile, jobs=2, sharing=DEFAULT_SHARING, mux_zero=0.0,
           start_s=offline.DEFAULT_START_S, timing=Timing(), duration_scales=None, activity_scales=None,
           job_seconds=None, context_switch_us=DEFAULT_SWITCH_US):
    """A recording of `seconds` from start_s of `jobs` DLRM-like jobs on one emulated GPU.

    sharing: 'time-sliced' or 'concurrent' (module doc); job j's timeline is dlrm_timeline(seed + j)
    stretched by duration_scales[j] (default 1 + 0.25 j), its activity scaled by
    activity_scales[j] (default 0.85^j); timing, noise and mux_zero as offline.record (the timing
    model's phases and jitter and the noise drawn from seed); job_seconds: how long the jobs run
    from the start (default: the whole recording; the GPU is idle after); context_switch_us:
    time-sliced, how long the GPU takes to pass from one job's call to another's (idle then).
    ValueError names the flag at fault."""
    interval_ms = timing_model.collection_interval(interval_ms)
    if sharing not in SHARING:
        raise ValueError(f"--sharing {sharing!r}: use one of {', '.join(SHARING)}")
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise ValueError(f"--jobs must be a whole number of at least 1, got {jobs!r}")
    durations = _scales(duration_scales, jobs, "--duration-scales", default_duration_scales)
    activities = _scales(activity_scales, jobs, "--activity-scales", default_activity_scales)
    switch = float(context_switch_us)
    if not (np.isfinite(switch) and 0 <= switch <= MAX_SWITCH_US):
        raise ValueError(f"--context-switch-us must be a number from 0 to {MAX_SWITCH_US:.0f} (a second), "
                         f"got {context_switch_us!r}")
    resolved = timing_model.resolve(timing, interval_ms, seed)
    start_ns = int(start_s) * 10**9
    job_seconds = seconds if job_seconds is None else min(float(job_seconds), seconds)
    end_ns = start_ns + int(job_seconds * 1e9)

    # Each job's own timeline, as it would run alone, filling the recording.
    alone = [stretched(dlrm_timeline(start_ns, job_seconds / durations[j], seed + j), start_ns, durations[j])
             for j in range(jobs)]
    if sharing == "time-sliced":
        ran = time_slice(alone, start_ns, int(round(switch * 1000)))
    else:
        ran = [(ev, np.zeros(len(ev), np.int64)) for ev in alone]
    runs, parts = [], []
    for j, (ev, waited) in enumerate(ran):
        keep = ev.t_end_ns <= end_ns  # calls pushed past the end are not in the recording
        ev = Events(ev.layers, ev.layer_id[keep], ev.forward[keep], ev.batch[keep], ev.t_start_ns[keep],
                    ev.t_end_ns[keep])
        job_profile = scaled_profile(profile, activities[j])
        values = {(lid, fwd): job_profile.value(name, kind, fwd)
                  for lid, (name, kind) in enumerate(ev.layers) for fwd in (True, False)}
        call_values = np.array([values[(lid, fwd)] for lid, fwd in zip(ev.layer_id.tolist(), ev.forward.tolist())])
        call_values = call_values.reshape(len(ev), len(METRICS))
        runs.append(JobRun(j, job_id(j), offline.PID + j, f"dlrm-emulated-{j}", seed + j, durations[j],
                           activities[j], job_profile, ev, call_values, int(waited[keep].sum())))
        parts.append((ev.t_start_ns, ev.t_end_ns, call_values))
    signal = combined_signal(parts, profile.idle)

    # Sampled as offline.record() samples one job's timeline, the idle tail after the end too.
    tail = timing_model.tail_seconds(resolved)
    sched = timing_model.schedule(resolved, start_ns, seconds + tail, seed)
    if resolved.idealised:
        truth_means = signal.window_means(sched.window_end_ns, interval_ms * 10**6)
        samples = measure(truth_means, 0, sched.window, noise=noise, mux_zero=mux_zero, seed=seed)
    else:
        truth_means = signal.means(sched.window_begin_ns, sched.window_end_ns)
        truth_means[:, _UTIL] = signal.means(sched.util_begin_ns, sched.util_end_ns)[:, _UTIL]
        truth_means[:, _FB] = signal.value_at(sched.instant_ns)[:, _FB]
        samples = measure(truth_means, 0, sched.window, noise=noise, mux_zero=mux_zero, seed=seed,
                          util_ticks=sched.util_window)
    gpu = EmulatedGpu(0, emulated_uuid(offline.HOST, 0), offline.HOST, profile.model_name)
    return ColocatedRecording(gpu, profile, sharing, runs, interval_ms, sched.ts_ms, truth_means, samples,
                              noise, mux_zero, seed, start_ns, seconds, resolved, sched, signal,
                              switch if sharing == "time-sliced" else None, tail)


def busy_share(rec, at_least=1):
    """Share of the recording's time in which at least `at_least` jobs had a call running."""
    points = [(s, 1) for job in rec.jobs for s in job.events.t_start_ns.tolist()]
    points += [(e, -1) for job in rec.jobs for e in job.events.t_end_ns.tolist()]
    if not points:
        return 0.0
    t = np.array([p[0] for p in points], dtype=np.int64)
    d = np.array([p[1] for p in points], dtype=np.int64)
    order = np.lexsort((d, t))  # an end before a start at the same time: touching is not overlap
    t, running = t[order], np.cumsum(d[order])
    spans = np.diff(t)
    return float(spans[running[:-1] >= at_least].sum() / (rec.seconds * 1e9))


def _values_dict(values):
    return {metric: float(v) for metric, v in zip(METRICS, values)}


def job_truth(rec, j):
    """truth.json's entry for job j: who it is, how it was made, its own truth."""
    job, view = rec.jobs[j], rec.job_recording(j)
    by_type, by_layer = {}, {}
    for (kind, fwd), values in sorted(view.type_truth().items()):
        by_type.setdefault(kind, {})["forward" if fwd else "backward"] = _values_dict(values)
    kinds = dict(job.events.layers)
    for (name, fwd), values in sorted(view.layer_truth().items()):
        entry = by_layer.setdefault(name, {"layer_type": kinds[name]})
        entry["forward" if fwd else "backward"] = _values_dict(values)
    busy = float((job.events.t_end_ns - job.events.t_start_ns).sum() / (rec.seconds * 1e9))
    return {"job_id": job.job_id, "pid": job.pid, "pod": job.pod,
            "events_file": f"events/{events_file_name(job)}", "events": len(job.events),
            "timeline_seed": job.timeline_seed, "duration_scale": job.duration_scale,
            "activity_scale": job.activity_scale, "busy_share": busy,
            "waited_ms": job.waited_ns / 1e6, "idle": _values_dict(job.profile.idle),
            "layer_types": by_type, "layers": by_layer}


def truth_document(rec):
    gpu_idle = rec.profile.idle.copy()
    gpu_idle[_FB] *= len(rec.jobs)
    return {
        "emulator": EMULATOR_NAME,
        "note": "ground truth of emulated GPU counters, not measurements; per job: its layers' values "
                "when they run alone on the GPU",
        "profile": rec.profile.source, "profile_description": rec.profile.description,
        "gpu_uuid": rec.gpu.uuid, "hostname": rec.gpu.host_name,
        "interval_ms": rec.interval_ms, "noise": rec.noise, "mux_zero": rec.mux_zero, "seed": rec.seed,
        "start_ns": rec.start_ns, "end_ns": rec.start_ns + int(rec.seconds * 1e9),
        "tail_seconds": rec.tail_seconds, "samples_per_metric": len(rec.tick_ms),
        "events": sum(len(job.events) for job in rec.jobs),
        "timing": timing_model.parameters(rec.timing),
        "median_offset_ms": float(np.median(rec.schedule.offset_ms)) if len(rec.schedule) else None,
        "repeats": int(rec.schedule.repeat.sum()), "skipped_windows": rec.schedule.skipped,
        "metrics": list(METRICS),
        "colocation": {
            "sharing": rec.sharing, "jobs": len(rec.jobs), "context_switch_us": rec.context_switch_us,
            "model": ("time-sliced: one call at a time, a ready call waits for the running one "
                      "(and for the context switch after another job's call)"
                      if rec.sharing == "time-sliced" else
                      "concurrent: calls overlap freely; PROF_* summed above idle and clipped at the bound, "
                      "GPU_UTIL the union of busy times") + "; FB_USED the sum of every job's memory",
            "gpu_busy_share": busy_share(rec), "overlap_share": busy_share(rec, 2),
        },
        "idle": _values_dict(gpu_idle),
        "jobs": [job_truth(rec, j) for j in range(len(rec.jobs))],
    }


def events_file_name(job):
    return f"events-{offline.HOST}-{job.pid}.jsonl"


def write_job_events(rec, j, path, command=("precisionprobe.emulator", "offline")):
    """Job j's calls as the hook client's JSON Lines (its header first)."""
    job, gpu = rec.jobs[j], rec.gpu
    offline.write_job_events(path, job.events, job_id=job.job_id, pod=job.pod, namespace="emulator",
                             gpu_uuid=gpu.uuid, gpu_index=gpu.index, pid=job.pid, start_ns=rec.start_ns,
                             command=command)


def write(rec, out_dir, command=("precisionprobe.emulator", "offline")):
    """Writes metrics.om, events/ (one file per job), truth.json, samples_truth.csv under out_dir;
    returns their paths (events: the list of the jobs' files)."""
    os.makedirs(os.path.join(out_dir, "events"), exist_ok=True)
    paths = {"openmetrics": os.path.join(out_dir, "metrics.om"),
             "events": [os.path.join(out_dir, "events", events_file_name(job)) for job in rec.jobs],
             "truth": os.path.join(out_dir, "truth.json"),
             "samples_truth": os.path.join(out_dir, "samples_truth.csv")}
    with open(paths["openmetrics"], "w") as out:
        write_openmetrics(out, [rec.gpu], rec.tick_ms, [rec.samples])
    for j, path in enumerate(paths["events"]):
        write_job_events(rec, j, path, command)
    with open(paths["truth"], "w") as out:
        json.dump(truth_document(rec), out, indent=2)
        out.write("\n")
    offline.write_samples_truth(rec, paths["samples_truth"])
    return paths


# --- the command line (offline) ----------------------------------------------------------------

def _scale_list(text):
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(f"not a comma-separated list of numbers: {text!r}") from None


def add_arguments(sub):
    """The co-location flags of `offline`."""
    group = sub.add_argument_group(
        "co-location", "several jobs on the one emulated GPU (colocation.py); truth.json then holds "
        "each job's own truth")
    group.add_argument("--jobs", type=int, default=1,
                       help="training jobs sharing the emulated GPU (default 1: no sharing)")
    group.add_argument("--sharing", choices=SHARING, default=None,
                       help="time-sliced (default with --jobs 2 or more): one job's layer at a time; "
                            "concurrent (MPS, streams): layers overlap, counters add up")
    group.add_argument("--duration-scales", default=None, metavar="LIST",
                       help="per job, a factor on its layer durations and gaps (default 1,1.25,...)")
    group.add_argument("--activity-scales", default=None, metavar="LIST",
                       help="per job, a factor on its layers' activity above idle (default 1,0.85,...)")
    group.add_argument("--context-switch-us", type=float, default=None, metavar="US",
                       help=f"time-sliced: the GPU's time to pass from one job's call to another's, "
                            f"idle (default {DEFAULT_SWITCH_US:g})")


def requested(args):
    """True if the flags ask for co-location; ValueError names a flag given without --jobs 2+."""
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.jobs == 1:
        for name in ("sharing", "duration_scales", "activity_scales", "context_switch_us"):
            if getattr(args, name) is not None:
                raise ValueError(f"--{name.replace('_', '-')} applies to --jobs 2 or more")
        return False
    if args.context_switch_us is not None and (args.sharing or DEFAULT_SHARING) != "time-sliced":
        raise ValueError("--context-switch-us applies to --sharing time-sliced")
    return True


def main(args, profile, start_s, argv):
    """The `offline` command for --jobs 2 or more: records, writes, says what it wrote."""
    scales = {}
    for name in ("duration_scales", "activity_scales"):
        text = getattr(args, name)
        if text is not None:
            try:
                scales[name] = _scale_list(text)
            except ValueError as error:
                raise ValueError(f"--{name.replace('_', '-')}: {error}") from None
    if args.context_switch_us is not None:
        scales["context_switch_us"] = args.context_switch_us
    rec = record(args.minutes * 60, args.interval_ms, args.noise, args.seed, profile, jobs=args.jobs,
                 sharing=args.sharing or DEFAULT_SHARING, mux_zero=args.mux_zero, start_s=start_s,
                 timing=args.timing, **scales)
    paths = write(rec, args.out, ["python3", "-m", "precisionprobe.emulator", *argv])
    print(f"{EMULATOR_NAME}: {len(rec.jobs)} jobs sharing emulated GPU {rec.gpu.uuid} ({rec.sharing}): "
          + ", ".join(f"{job.job_id} {len(job.events)} layer events" for job in rec.jobs)
          + f"; {len(rec.tick_ms)} samples per metric (interval {rec.interval_ms} ms, noise {rec.noise})")
    print(f"  GPU busy {100 * busy_share(rec):.1f}% of the time, two or more jobs at once "
          f"{100 * busy_share(rec, 2):.1f}%")
    print(f"  timing {offline.describe_timing(rec)}")
    for what, path in paths.items():
        for p in (path if isinstance(path, list) else [path]):
            print(f"  {what}: {p}")
    return 0
