"""Offline emulation: a generated DLRM-like timeline and the DCGM samples an emulated GPU gives for it.

record() builds, for one emulated GPU, the layer calls (timeline.py), each window's ground-truth
average (truth.py) and the published values with noise (noise.py). write() puts on disk:

  OUT/metrics.om           OpenMetrics for `promtool tsdb create-blocks-from openmetrics
                           OUT/metrics.om DATA_DIR` (then `prometheus --storage.tsdb.path=DATA_DIR`)
  OUT/events/events-emulated-node-1.jsonl
                           the matching layer events in the hook client's format (job header
                           line first; gpu_uuid is the emulated GPU's), for pp_refresh('OUT/events')
  OUT/truth.json           the ground truth: per layer and per (layer type, direction) the six
                           values, the idle values, and how the recording was made

Sample times are multiples of the interval from the recording's start; the sample at T is the
average over (T - interval, T].
"""
import json
import os
from dataclasses import dataclass, field

import numpy as np

from .._version import __version__
from .._event_format import EVENT_FIELDS, FORMAT_VERSION, HEADER_RECORD
from .exposition import EMULATOR_NAME, EmulatedGpu, emulated_uuid, write_openmetrics
from .noise import measure
from .profile import METRICS
from .timeline import dlrm_timeline
from .truth import Timeline

DEFAULT_START_S = 1714557600  # 2024-05-01T10:00:00Z
HOST = "emulated-node"
JOB_ID = "emulated-dlrm"
PID = 1
CPU_NUM = 8.0


@dataclass
class Recording:
    gpu: EmulatedGpu
    profile: object
    events: object            # timeline.Events
    call_values: np.ndarray   # (calls x 6): each call's ground-truth values
    interval_ms: int
    tick_ms: np.ndarray       # sample times, unix ms
    truth_means: np.ndarray   # (ticks x 6): noiseless window averages
    samples: np.ndarray       # (ticks x 6): what the emulated exporter publishes
    noise: float
    mux_zero: float
    seed: int
    start_ns: int
    seconds: float
    extra: dict = field(default_factory=dict)

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


def record(seconds, interval_ms, noise, seed, profile, mux_zero=0.0, start_s=DEFAULT_START_S, events=None):
    """The recording of `seconds` from start_s; events: a timeline made earlier with the same
    start and length (to sample one timeline at several intervals), else dlrm_timeline(seed)."""
    interval_ms = int(interval_ms)
    if interval_ms < 100:
        raise ValueError("interval_ms: DCGM's floor for profiling fields is 100 ms")
    start_ns = int(start_s) * 10**9
    if events is None:
        events = dlrm_timeline(start_ns, seconds, seed)
    layer_values = {(lid, fwd): profile.value(name, kind, fwd)
                    for lid, (name, kind) in enumerate(events.layers) for fwd in (True, False)}
    call_values = np.array([layer_values[(lid, fwd)]
                            for lid, fwd in zip(events.layer_id.tolist(), events.forward.tolist())])
    timeline = Timeline(events.t_start_ns, events.t_end_ns, call_values, profile.idle)
    ticks = np.arange(1, int(seconds * 1000) // interval_ms + 1, dtype=np.int64)
    tick_ms = start_s * 1000 + ticks * interval_ms
    truth_means = timeline.window_means(tick_ms * 10**6, interval_ms * 10**6)
    samples = measure(truth_means, 0, tick_ms // interval_ms, noise=noise, mux_zero=mux_zero, seed=seed)
    gpu = EmulatedGpu(0, emulated_uuid(HOST, 0), HOST, profile.model_name,
                      pod="dlrm-emulated-0", namespace="emulator", container="trainer")
    return Recording(gpu, profile, events, call_values, interval_ms, tick_ms, truth_means, samples,
                     noise, mux_zero, seed, start_ns, seconds)


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
        "samples_per_metric": len(rec.tick_ms), "events": len(rec.events),
        "metrics": list(METRICS), "idle": _values_dict(rec.profile.idle),
        "layer_types": by_type, "layers": by_layer,
    }


def header_line(rec, command):
    record_ = {"record": HEADER_RECORD, "format_version": FORMAT_VERSION, "job_id": JOB_ID,
               "host_name": HOST, "ip": "127.0.0.1", "pod": rec.gpu.pod, "namespace": rec.gpu.namespace,
               "rank": 0, "local_rank": 0, "world_size": 1, "pid": PID, "cpu_num": CPU_NUM,
               "command": list(command), "python_version": "", "torch_version": "",
               "precisionprobe_version": __version__, "start_time_ns": rec.start_ns,
               "model": "DLRM", "parameters": 0, "clock": "emulated"}
    return json.dumps(record_, separators=(",", ":")) + "\n"


def write_events(rec, path, command=("precisionprobe.emulator", "offline")):
    """The hook client's JSON Lines for the recording's calls (EVENT_FIELDS order)."""
    assert EVENT_FIELDS[0] == "job_id" and EVENT_FIELDS[-1] == "cpu_num"
    ev = rec.events
    prefix = json.dumps({"job_id": JOB_ID, "host_name": HOST, "ip": "127.0.0.1", "pod": rec.gpu.pod,
                         "namespace": rec.gpu.namespace, "gpu_uuid": rec.gpu.uuid, "gpu": rec.gpu.index,
                         "rank": 0, "local_rank": 0, "world_size": 1, "pid": PID},
                        separators=(",", ":"))[:-1] + ","
    names = [f'"layer":{json.dumps(n)},"layer_type":{json.dumps(t)},' for n, t in ev.layers]
    suffix = f',"cpu_num":{CPU_NUM}}}\n'
    with open(path, "w") as out:
        out.write(header_line(rec, command))
        epochs = ev.epoch.tolist()
        out.writelines(
            f'{prefix}"epoch":{e},"batch":{b},{names[lid]}"forward":{"true" if f else "false"},'
            f'"t_start_ns":{s},"t_end_ns":{t}{suffix}'
            for e, b, lid, f, s, t in zip(epochs, ev.batch.tolist(), ev.layer_id.tolist(),
                                          ev.forward.tolist(), ev.t_start_ns.tolist(), ev.t_end_ns.tolist()))


def write(rec, out_dir, command=("precisionprobe.emulator", "offline")):
    """Writes metrics.om, events/, truth.json under out_dir; returns their paths."""
    os.makedirs(os.path.join(out_dir, "events"), exist_ok=True)
    paths = {"openmetrics": os.path.join(out_dir, "metrics.om"),
             "events": os.path.join(out_dir, "events", f"events-{HOST}-{PID}.jsonl"),
             "truth": os.path.join(out_dir, "truth.json")}
    with open(paths["openmetrics"], "w") as out:
        write_openmetrics(out, [rec.gpu], rec.tick_ms, [rec.samples])
    write_events(rec, paths["events"], command)
    with open(paths["truth"], "w") as out:
        json.dump(truth_document(rec), out, indent=2)
        out.write("\n")
    return paths
