"""Offline emulation: a generated DLRM-like timeline and the DCGM samples an emulated GPU gives for it.

record() builds, for one emulated GPU, the layer calls (timeline.py), which samples Prometheus
stores and which GPU time each describes (timing.py), their ground-truth values (truth.py) and the
published values with noise (noise.py). write() puts on disk:

  OUT/metrics.om           OpenMetrics for `promtool tsdb create-blocks-from openmetrics
                           OUT/metrics.om DATA_DIR` (then `prometheus --storage.tsdb.path=DATA_DIR`):
                           the recording's samples, then tail_seconds more of the idle GPU (below)
  OUT/events/events-emulated-node-1.jsonl
                           the matching layer events as JSON Lines, one of the hook client's two
                           formats (job header line first; gpu_uuid is the emulated GPU's), for
                           pp_refresh('OUT/events'); JSON keeps them readable by any tool, and
                           the readers take either format
  OUT/truth.json           the ground truth: per layer and per (layer type, direction) the six
                           values, the idle values, how the recording was made, the timing
                           parameters (resolved: phases drawn from the seed are written out),
                           the median offset of a stored time from its window's end, how many
                           stored samples repeat a window and how many windows none stores, and
                           tail_seconds (end_ns is the recording's end, where the tail begins)
  OUT/samples_truth.csv    per stored sample, what it describes:
                             ts_ms               the stored time (unix ms), as in metrics.om
                             window_end_ns       end of the DCGM window (DCGM_FI_PROF_*), which
                                                 began where the previous DCGM window ended
                             util_window_end_ns  end of GPU_UTIL's window (the driver's period)
                             instant_ns          FB_USED's instant (= window_end_ns)
                             repeat              1 if the previous stored sample has the same
                                                 DCGM window (and so the same values), else 0

Timing (timing.py): by default ('realistic') a stored time is a Prometheus scrape time and its
values those of the newest DCGM window that the exporter could serve then, some 30 ms to one
period earlier; with Timing(mode="exact") (IDEALISED) the sample at T is the average over
(T - interval, T] for every window, as this module produced before the timing model.

After the recording's end, in every mode: a job's end stops neither dcgm-exporter nor Prometheus,
so the samples go on for timing.tail_seconds() (5 s at the usual periods) with the GPU idle, the
profile's idle values: no activity, and FB_USED the job's memory still allocated (the profile's
idle FB_USED, as between layers). A real GPU's FB_USED falls to the driver's baseline only when
the process exits, which the events do not record (the last event is the last layer call; the
script may still evaluate, save and tear down), and no tail sample is attributed to a layer, so
the emulator does not invent an exit time. The sample that describes the last events is among
them: a final pp_refresh attributes every event.
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from .._version import __version__
from .._event_format import EVENT_FIELDS, FORMAT_VERSION, HEADER_RECORD
from . import timing as timing_model
from .exposition import EMULATOR_NAME, EmulatedGpu, emulated_uuid, write_openmetrics
from .noise import measure
from .profile import FB_USED, GPU_UTIL, METRICS
from .timeline import dlrm_timeline
from .timing import Timing
from .truth import Timeline

DEFAULT_START_S = 1714557600  # 2024-05-01T10:00:00Z
HOST = "emulated-node"
JOB_ID = "emulated-dlrm"
PID = 1
CPU_NUM = 8.0
# The longest recording, the CLI's --minutes and a replay's (analysis/emulate.py): a week. Its
# samples are arrays in memory (millions of events a day); a longer one is a wrong time.
MAX_SECONDS = 7 * 24 * 3600


@dataclass
class Recording:
    gpu: EmulatedGpu
    profile: object
    events: object            # timeline.Events
    call_values: np.ndarray   # (calls x 6): each call's ground-truth values
    interval_ms: int          # the collection interval: DCGM's period
    tick_ms: np.ndarray       # stored sample times, unix ms (Prometheus' scrape times by default)
    truth_means: np.ndarray   # (samples x 6): noiseless values of what each sample describes:
                              # PROF_* the DCGM window's average, GPU_UTIL the driver window's,
                              # FB_USED the instant's value (idealised modes: all six the window's)
    samples: np.ndarray       # (samples x 6): what the emulated exporter publishes
    noise: float
    mux_zero: float
    seed: int
    start_ns: int
    seconds: float
    timing: Timing = None     # resolved (timing.resolve): every parameter as used
    schedule: object = None   # timing.Schedule: per sample its windows, instant and repeat flag
    extra: dict = field(default_factory=dict)
    tail_seconds: float = 0.0  # samples of the idle GPU stored after the recording's end (timing.py)

    def layer_truth(self):
        """{(layer, forward): values} for every (layer, direction) that ran."""
        out = {}
        for lid, fwd in set(zip(self.events.layer_id.tolist(), self.events.forward.tolist())):
            name, kind = self.events.layers[lid]
            out[(name, fwd)] = self.profile.value(name, kind, fwd)
        return out

    def type_truth(self):
        """{(layer_type, forward): values}. Defined when every layer of a type has its type's values."""
        out = {}
        for lid, fwd in set(zip(self.events.layer_id.tolist(), self.events.forward.tolist())):
            name, kind = self.events.layers[lid]
            value = self.profile.value(name, kind, fwd)
            if (kind, fwd) in out and not np.array_equal(out[(kind, fwd)], value):
                raise ValueError(f"layers of type {kind} have different values: no single truth per type")
            out[(kind, fwd)] = value
        return out


def record(seconds, interval_ms, noise, seed, profile, mux_zero=0.0, start_s=DEFAULT_START_S, events=None,
           timing=Timing()):
    """The recording of `seconds` from start_s; events: a timeline made earlier with the same
    start and length (to sample one timeline at several intervals), else dlrm_timeline(seed);
    timing: the timing model (timing.Timing; default realistic, Timing(mode="exact") for the
    IDEALISED exact windows), its phases and jitter drawn from seed. The samples go on for
    timing.tail_seconds() after the recording's end, of the idle GPU, as dcgm-exporter and
    Prometheus go on after a job: the sample describing the last events is stored then."""
    interval_ms = timing_model.collection_interval(interval_ms)
    resolved = timing_model.resolve(timing, interval_ms, seed)
    start_ns = int(start_s) * 10**9
    if events is None:
        events = dlrm_timeline(start_ns, seconds, seed)
    if not len(events.t_start_ns):
        raise ValueError(f"--minutes: {seconds / 60:g} minutes ({seconds * 1000:g} ms) hold no layer call of the "
                         "emulated DLRM (its first step's calls take some ms): record at least 0.001 minutes")
    layer_values = {(lid, fwd): profile.value(name, kind, fwd)
                    for lid, (name, kind) in enumerate(events.layers) for fwd in (True, False)}
    call_values = np.array([layer_values[(lid, fwd)]
                            for lid, fwd in zip(events.layer_id.tolist(), events.forward.tolist())])
    timeline = Timeline(events.t_start_ns, events.t_end_ns, call_values, profile.idle)
    tail = timing_model.tail_seconds(resolved)
    sched = timing_model.schedule(resolved, start_ns, seconds + tail, seed)
    if resolved.idealised:  # every metric averaged over the DCGM window, as before the timing model
        truth_means = timeline.window_means(sched.window_end_ns, interval_ms * 10**6)
        samples = measure(truth_means, 0, sched.window, noise=noise, mux_zero=mux_zero, seed=seed)
    else:
        truth_means = timeline.means(sched.window_begin_ns, sched.window_end_ns)
        util, fb = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)
        truth_means[:, util] = timeline.means(sched.util_begin_ns, sched.util_end_ns)[:, util]
        truth_means[:, fb] = timeline.value_at(sched.instant_ns)[:, fb]
        samples = measure(truth_means, 0, sched.window, noise=noise, mux_zero=mux_zero, seed=seed,
                          util_ticks=sched.util_window)
    gpu = EmulatedGpu(0, emulated_uuid(HOST, 0), HOST, profile.model_name,
                      pod="dlrm-emulated-0", namespace="emulator", container="trainer")
    return Recording(gpu, profile, events, call_values, interval_ms, sched.ts_ms, truth_means, samples,
                     noise, mux_zero, seed, start_ns, seconds, resolved, sched, tail_seconds=tail)


def _values_dict(values):
    return {metric: float(v) for metric, v in zip(METRICS, values)}


def truth_document(rec):
    by_type = {}
    for (kind, fwd), values in sorted(rec.type_truth().items()):
        by_type.setdefault(kind, {})["forward" if fwd else "backward"] = _values_dict(values)
    by_layer = {}
    for (name, fwd), values in sorted(rec.layer_truth().items()):
        entry = by_layer.setdefault(name, {"layer_type": dict(rec.events.layers)[name]})
        entry["forward" if fwd else "backward"] = _values_dict(values)
    return {
        "emulator": EMULATOR_NAME,
        "note": "ground truth of emulated GPU counters, not measurements",
        "profile": rec.profile.source, "profile_description": rec.profile.description,
        "gpu_uuid": rec.gpu.uuid, "hostname": rec.gpu.host_name, "job_id": JOB_ID,
        "interval_ms": rec.interval_ms, "noise": rec.noise, "mux_zero": rec.mux_zero, "seed": rec.seed,
        "start_ns": rec.start_ns, "end_ns": rec.start_ns + int(rec.seconds * 1e9),
        "tail_seconds": rec.tail_seconds, "samples_per_metric": len(rec.tick_ms), "events": len(rec.events),
        "timing": timing_model.parameters(rec.timing),
        "median_offset_ms": float(np.median(rec.schedule.offset_ms)) if len(rec.schedule) else None,
        "repeats": int(rec.schedule.repeat.sum()), "skipped_windows": rec.schedule.skipped,
        "metrics": list(METRICS), "idle": _values_dict(rec.profile.idle),
        "layer_types": by_type, "layers": by_layer,
    }


def write_job_events(path, events, *, job_id, pod, namespace, gpu_uuid, gpu_index, pid, start_ns, command,
                     host_name=HOST, records=()):
    """One job's calls as the hook client's JSON Lines: its job header, then `records` (whole
    lines, such as a mig_device record), then one line per call (EVENT_FIELDS order)."""
    assert EVENT_FIELDS[0] == "job_id" and EVENT_FIELDS[-1] == "cpu_num"
    header = {"record": HEADER_RECORD, "format_version": FORMAT_VERSION, "job_id": job_id,
              "host_name": host_name, "ip": "127.0.0.1", "pod": pod, "namespace": namespace,
              "rank": 0, "local_rank": 0, "world_size": 1, "pid": pid, "cpu_num": CPU_NUM,
              "command": list(command), "python_version": "", "torch_version": "",
              "precisionprobe_version": __version__, "start_time_ns": start_ns,
              "model": "DLRM", "parameters": 0, "clock": "emulated"}
    prefix = json.dumps({"job_id": job_id, "host_name": host_name, "ip": "127.0.0.1", "pod": pod,
                         "namespace": namespace, "gpu_uuid": gpu_uuid, "gpu": gpu_index,
                         "rank": 0, "local_rank": 0, "world_size": 1, "pid": pid},
                        separators=(",", ":"))[:-1] + ","
    names = [f'"layer":{json.dumps(n)},"layer_type":{json.dumps(t)},' for n, t in events.layers]
    suffix = f',"cpu_num":{CPU_NUM}}}\n'
    with open(path, "w") as out:
        out.write(json.dumps(header, separators=(",", ":")) + "\n")
        out.writelines(records)
        out.writelines(
            f'{prefix}"epoch":{e},"batch":{b},{names[lid]}"forward":{"true" if f else "false"},'
            f'"t_start_ns":{s},"t_end_ns":{t}{suffix}'
            for e, b, lid, f, s, t in zip(events.epoch.tolist(), events.batch.tolist(), events.layer_id.tolist(),
                                          events.forward.tolist(), events.t_start_ns.tolist(),
                                          events.t_end_ns.tolist()))


def write_events(rec, path, command=("precisionprobe.emulator", "offline")):
    """The hook client's JSON Lines for the recording's calls."""
    write_job_events(path, rec.events, job_id=JOB_ID, pod=rec.gpu.pod, namespace=rec.gpu.namespace,
                     gpu_uuid=rec.gpu.uuid, gpu_index=rec.gpu.index, pid=PID, start_ns=rec.start_ns,
                     command=command)


def describe_timing(rec):
    """One line on how the stored samples relate to their windows (printed by the CLI)."""
    t, s = rec.timing, rec.schedule
    median = float(np.median(s.offset_ms)) if len(s) else float("nan")
    if t.idealised:
        return (f"{t.mode} (IDEALISED): every window once, stored at its end"
                + (f" + {t.offset_ms:g} ms" if t.mode == "offset" else "")
                + f"; median stored time - window end {median:g} ms")
    return (f"realistic: scrapes every {t.scrape_interval_ms:g} ms, exporter {t.exporter}; median stored "
            f"time - window end {median:.1f} ms; {int(s.repeat.sum())} repeated windows, "
            f"{s.skipped} skipped" + timing_model.describe_restart(t))


SAMPLES_TRUTH_COLUMNS = ("ts_ms", "window_end_ns", "util_window_end_ns", "instant_ns", "repeat")


def write_samples_truth(rec, path):
    """samples_truth.csv: per stored sample what it describes (SAMPLES_TRUTH_COLUMNS)."""
    s = rec.schedule
    with open(path, "w") as out:
        out.write(",".join(SAMPLES_TRUTH_COLUMNS) + "\n")
        out.writelines(f"{t},{w},{u},{i},{int(r)}\n" for t, w, u, i, r in zip(
            s.ts_ms.tolist(), s.window_end_ns.tolist(), s.util_end_ns.tolist(), s.instant_ns.tolist(),
            s.repeat.tolist()))


def write(rec, out_dir, command=("precisionprobe.emulator", "offline")):
    """Writes metrics.om, events/, truth.json, samples_truth.csv under out_dir; returns their paths."""
    os.makedirs(os.path.join(out_dir, "events"), exist_ok=True)
    paths = {"openmetrics": os.path.join(out_dir, "metrics.om"),
             "events": os.path.join(out_dir, "events", f"events-{HOST}-{PID}.jsonl"),
             "truth": os.path.join(out_dir, "truth.json"),
             "samples_truth": os.path.join(out_dir, "samples_truth.csv")}
    with open(paths["openmetrics"], "w") as out:
        write_openmetrics(out, [rec.gpu], rec.tick_ms, [rec.samples])
    write_events(rec, paths["events"], command)
    with open(paths["truth"], "w") as out:
        json.dump(truth_document(rec), out, indent=2)
        out.write("\n")
    write_samples_truth(rec, paths["samples_truth"])
    return paths
