"""MIG emulation (offline): one emulated GPU split into GPU instances, each running its own DLRM-like job.

Multi-Instance GPU splits a GPU into up to seven slices of SMs and memory; a process on an
instance sees only its MIG device. What a real node shows, and where it comes from:

  behaviour                                   | real component                 | here
  --------------------------------------------|--------------------------------|---------------------------------
  the process sees a MIG device UUID,         | CUDA, NVML (nvidia-smi -L)     | mig_uuid(): "MIG-" + a uuid5 of
  "MIG-<uuid>", not its GPU's "GPU-<uuid>"    |                                | the parent UUID and GPU instance
  its events carry that UUID as gpu_uuid and  | the hook client                | events-<host>-<pid>.jsonl per job
  the parent's host index as gpu             |                                |
  which GPU instance the MIG device is        | NVML, recorded by the hook     | a mig_device record before the
                                              | client (_mig_device.py)        | first event, as the client writes
  one series per GPU instance, labelled with  | dcgm-exporter (GPU instance    | instance_labels(): UUID = parent,
  the PARENT's UUID and gpu index, plus       | entities)                      | GPU_I_PROFILE, GPU_I_ID after
  GPU_I_PROFILE and GPU_I_ID                  |                                | modelName
  DCGM_FI_PROF_* per instance, as ratios of   | DCGM profiling (GPM / DCP per  | the instance's own job, its own
  the instance's own SMs and memory           | GPU instance)                  | profile values
  no GPU_UTIL series for an instance          | NVML has no per-instance       | DCGM_FI_DEV_GPU_UTIL left out
                                              | utilization; DCGM leaves it    |
                                              | blank, the exporter skips it   |
  FB_USED per instance: its own memory        | DCGM / NVML per instance       | FB_USED of the instance's job
  all instances polled together, one scrape   | DCGM polls the GPU's entities, | one timing schedule for the GPU
  stores every series at the same time        | Prometheus scrapes one target  | (timing.py), noise per instance
  GPU instance IDs                            | the driver, at creation        | 1, 2, ... in the order given [c]
  a smaller instance runs the same kernels    | fewer SMs and memory slices    | ratios r -> r (1 + (1 - r)(1 -
  with more of its SMs busy                   |                                | slices / 7)) [c]; FB_USED x
                                              |                                | instance GiB / 40 [c]

[c]: chosen, the sources leave it open. The parent GPU's own series (without GPU_I_ID) are not
written: none of the six fields describes a MIG-enabled GPU as a whole.

record() makes one Recording (offline.py) per instance over one timeline each and one shared
timing schedule; write() puts on disk:

  OUT/metrics.om                   every instance's series, for promtool backfill
  OUT/events/events-<host>-<pid>.jsonl
                                   per job: header, mig_device record, events on its MIG UUID
  OUT/instances/<GPU_I_ID>/truth.json, samples_truth.csv
                                   per instance its job's ground truth (offline.truth_document,
                                   with the job, the MIG UUID and the instance)
  OUT/mig.json                     the parent GPU and, per instance, its MIG UUID, profile, job

Command line: python3 -m precisionprobe.emulator offline --out DIR --mig 4g.40gb,3g.40gb
(or --mig N for N instances of the profiles in DEFAULT_LAYOUTS).
"""
import copy
import json
import os
import re
import uuid as uuid_module
from dataclasses import dataclass

from .._event_format import mig_device_record
from . import offline
from .exposition import HELP, HELP_PREFIX, EmulatedGpu, _seconds_text, emulated_uuid, escape, format_value
from .noise import measure
from .profile import FB_USED, GPU_UTIL, METRICS, PROF_METRICS, Profile
from .timeline import dlrm_timeline
from .timing import Timing

SLICES = 7  # compute slices of an A100 / H100
MEMORY_GIB = 80
MODEL_NAME = "Emulated NVIDIA H100 80GB HBM3 (precisionprobe emulator)"
PUBLISHED = tuple(m for m in METRICS if m != GPU_UTIL)  # what an instance's series carry
# Layouts for --mig N: valid MIG geometries of an 80 GB A100 / H100.
DEFAULT_LAYOUTS = {1: ("7g.80gb",), 2: ("4g.40gb", "3g.40gb"), 3: ("3g.40gb", "2g.20gb", "2g.20gb"),
                   4: ("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"), 7: ("1g.10gb",) * 7}
PROFILE_PATTERN = re.compile(r"^([1-7])g\.([0-9]+)gb$")


def mig_uuid(parent_uuid, gpu_instance_id):
    """A well-formed MIG device UUID, stable per parent GPU and instance, never a real one's."""
    return "MIG-" + str(uuid_module.uuid5(uuid_module.NAMESPACE_URL,
                                          f"precisionprobe-emulator://{parent_uuid}/mig/{gpu_instance_id}"))


def parse_layout(text):
    """--mig: "4g.40gb,3g.40gb" (one profile per instance) or a count of DEFAULT_LAYOUTS."""
    text = text.strip()
    if text.isdigit():
        if int(text) not in DEFAULT_LAYOUTS:
            raise ValueError(f"--mig {text}: give the profiles, or a count of {sorted(DEFAULT_LAYOUTS)}")
        return DEFAULT_LAYOUTS[int(text)]
    profiles = tuple(p.strip() for p in text.split(",") if p.strip())
    for p in profiles:
        if not PROFILE_PATTERN.match(p):
            raise ValueError(f"--mig: {p!r} is not a GPU instance profile such as 3g.40gb")
    slices = sum(int(PROFILE_PATTERN.match(p).group(1)) for p in profiles)
    if not profiles or slices > SLICES:
        raise ValueError(f"--mig: {len(profiles)} instances of {slices} slices; a GPU has {SLICES}")
    return profiles


def instance_profile(profile, gi_profile):
    """The ground truth of `profile` on an instance of gi_profile ("3g.40gb"): its ratios raised as
    fewer slices are kept busier, FB_USED scaled to the instance's memory ([c], see the table)."""
    match = PROFILE_PATTERN.match(gi_profile)
    smaller = 1 - int(match.group(1)) / SLICES
    memory = int(match.group(2)) / 40

    def scaled(values):
        out = dict(values)
        for metric in PROF_METRICS:
            r = float(values[metric])
            out[metric] = r * (1 + (1 - r) * smaller)
        out[FB_USED] = round(float(values[FB_USED]) * memory)
        return out

    def walk(node):
        if isinstance(node, dict) and set(METRICS) <= set(node):
            return scaled(node)
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        return node

    data = copy.deepcopy(profile.data)
    for key in ("idle", "layer_types", "default", "layers"):
        if key in data:
            data[key] = walk(data[key])
    data["model_name"] = MODEL_NAME
    return Profile(data, f"{profile.source} on a MIG {gi_profile} instance")


@dataclass(frozen=True)
class EmulatedInstance(EmulatedGpu):
    """A GPU instance as dcgm-exporter labels it: the parent's UUID and index, GPU_I_PROFILE, GPU_I_ID."""
    gpu_instance_id: int = 0
    profile: str = ""
    mig_uuid: str = ""

    def labels(self):
        pairs = (("gpu", str(self.index)), ("UUID", self.uuid), ("pci_bus_id", self.pci_bus_id),
                 ("device", f"nvidia{self.index}"), ("modelName", self.model_name),
                 ("GPU_I_PROFILE", self.profile), ("GPU_I_ID", str(self.gpu_instance_id)),
                 ("Hostname", self.host_name), ("DCGM_FI_DRIVER_VERSION", "emulated"),
                 ("container", self.container), ("namespace", self.namespace), ("pod", self.pod))
        return ",".join(f'{k}="{escape(v)}"' for k, v in pairs)


@dataclass
class Instance:
    gpu: EmulatedInstance
    job_id: str
    pid: int
    recording: object  # offline.Recording of this instance's job


@dataclass
class MigRecording:
    parent_uuid: str
    instances: list


def record(seconds, interval_ms, noise, seed, profile, layout=DEFAULT_LAYOUTS[2], mux_zero=0.0,
           start_s=offline.DEFAULT_START_S, timing=Timing()):
    """One GPU split as `layout` (GPU instance profiles), instance k running a DLRM-like job on a
    timeline of its own (seed 1000 * seed + k) with the values instance_profile() gives; one
    timing schedule for all (from seed), noise keyed per instance."""
    host = offline.HOST
    parent = emulated_uuid(host, 0)
    instances = []
    for k, gi_profile in enumerate(layout, start=1):
        truth = instance_profile(profile, gi_profile)
        events = dlrm_timeline(int(start_s) * 10**9, seconds, 1000 * seed + k)
        rec = offline.record(seconds, interval_ms, noise, seed, truth, mux_zero, start_s, events=events,
                             timing=timing)
        ticks = rec.schedule.window
        rec.samples = measure(rec.truth_means, k, ticks, noise=noise, mux_zero=mux_zero, seed=seed,
                              util_ticks=None if rec.timing.idealised else rec.schedule.util_window)
        job = f"emulated-dlrm-mig{k}"
        gpu = EmulatedInstance(0, parent, host, MODEL_NAME, pod=f"{job}-0", namespace="emulator",
                               container="trainer", gpu_instance_id=k, profile=gi_profile,
                               mig_uuid=mig_uuid(parent, k))
        rec.gpu = gpu
        instances.append(Instance(gpu, job, offline.PID + k, rec))
    return MigRecording(parent, instances)


def write_openmetrics(out, mig):
    """OpenMetrics of every instance (all share the stored times), GPU_UTIL left out."""
    tick_ms = mig.instances[0].recording.tick_ms
    for metric in PUBLISHED:
        m = METRICS.index(metric)
        out.write(f"# HELP {metric} {HELP_PREFIX}{HELP[metric]}\n")
        out.write(f"# TYPE {metric} gauge\n")
        for inst in mig.instances:
            prefix = f"{metric}{{{inst.gpu.labels()}}} "
            out.writelines(f"{prefix}{format_value(metric, v)} {_seconds_text(t)}\n"
                           for t, v in zip(tick_ms, inst.recording.samples[:, m]))
    out.write("# EOF\n")


def write_events(inst, path, command):
    """The job's JSON Lines as offline.write_events writes them, with this instance's job, pid and
    MIG UUID, and its mig_device record after the header."""
    rec, gpu = inst.recording, inst.gpu
    offline.write_job_events(path, rec.events, job_id=inst.job_id, pod=gpu.pod, namespace=gpu.namespace,
                             gpu_uuid=gpu.mig_uuid, gpu_index=gpu.index, pid=inst.pid, start_ns=rec.start_ns,
                             command=command, host_name=gpu.host_name,
                             records=[mig_device_record(gpu.mig_uuid, gpu.uuid, gpu.gpu_instance_id, gpu.profile)])


def truth_document(inst):
    doc = offline.truth_document(inst.recording)
    doc.update(job_id=inst.job_id, gpu_uuid=inst.gpu.mig_uuid,
               mig={"gpu_uuid": inst.gpu.uuid, "gpu_instance_id": inst.gpu.gpu_instance_id,
                    "profile": inst.gpu.profile},
               published_metrics=list(PUBLISHED))
    return doc


def write(mig, out_dir, command=("precisionprobe.emulator", "offline", "--mig")):
    """Writes metrics.om, events/, instances/<GPU_I_ID>/, mig.json under out_dir; returns their paths:
    {"openmetrics", "events" (the directory), "mig", "instances": {GPU_I_ID: {"events", "truth",
    "samples_truth"}}}."""
    os.makedirs(os.path.join(out_dir, "events"), exist_ok=True)
    paths = {"openmetrics": os.path.join(out_dir, "metrics.om"), "events": os.path.join(out_dir, "events"),
             "mig": os.path.join(out_dir, "mig.json"), "instances": {}}
    with open(paths["openmetrics"], "w") as out:
        write_openmetrics(out, mig)
    for inst in mig.instances:
        gi = inst.gpu.gpu_instance_id
        folder = os.path.join(out_dir, "instances", str(gi))
        os.makedirs(folder, exist_ok=True)
        own = {"events": os.path.join(paths["events"], f"events-{inst.gpu.host_name}-{inst.pid}.jsonl"),
               "truth": os.path.join(folder, "truth.json"),
               "samples_truth": os.path.join(folder, "samples_truth.csv")}
        write_events(inst, own["events"], command)
        with open(own["truth"], "w") as out:
            json.dump(truth_document(inst), out, indent=2)
            out.write("\n")
        offline.write_samples_truth(inst.recording, own["samples_truth"])
        paths["instances"][gi] = own
    with open(paths["mig"], "w") as out:
        json.dump({"note": "emulated MIG instances, not measurements", "gpu_uuid": mig.parent_uuid,
                   "model_name": MODEL_NAME,
                   "instances": [{"gpu_instance_id": i.gpu.gpu_instance_id, "profile": i.gpu.profile,
                                  "mig_uuid": i.gpu.mig_uuid, "job_id": i.job_id,
                                  "truth": paths["instances"][i.gpu.gpu_instance_id]["truth"]}
                                 for i in mig.instances]}, out, indent=2)
        out.write("\n")
    return paths


def summary(mig):
    """What the CLI prints: one line per instance."""
    lines = []
    for inst in mig.instances:
        rec = inst.recording
        lines.append(f"  GPU instance {inst.gpu.gpu_instance_id} ({inst.gpu.profile}) {inst.gpu.mig_uuid}: job "
                     f"{inst.job_id}, {len(rec.events)} layer events, {len(rec.tick_ms)} samples per metric")
    return lines
