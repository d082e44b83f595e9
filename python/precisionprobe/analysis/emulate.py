"""`analyze --emulate PROFILE`: a run's events replayed on EMULATED GPUs, for a machine without one.

The DCGM emulator (precisionprobe.emulator) computes what dcgm-exporter behind Prometheus would
have stored for the recorded layer calls, in its realistic timing (scrape times stored, for
windows that ended tens of ms to over 100 ms before), from the values of a profile: the layer timings are the run's own, every
counter value is the profile's. It writes, in OUT (by default RUN_DIR + '.emulated', beside the
run and never inside it, so that a later refresh of RUN_DIR does not read the copy):

  OUT/events/...     the run's event files as JSON Lines, each GPU's events under that GPU's UUID
                     and each CPU process's on an emulated GPU of its own (what pp_refresh reads)
  OUT/metrics-N.om   the samples of emulated GPU N, for `promtool tsdb create-blocks-from`,
                     through a few seconds after its last event (the idle tail that dcgm-exporter
                     and Prometheus store after a job: timing.tail_seconds)

and then serves them from a Prometheus on loopback (harness/prometheus.py) while the refresh runs.
The files are written the same way every time, so refreshing the same database again imports
nothing twice.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np

from .. import _emulated_copy as emulated_copy
from . import render
from .._event_files import event_files_below
from .._event_reader import read_event_file
from ..harness import processes, prometheus
from ..emulator import offline
from ..emulator.exposition import EmulatedGpu, emulated_uuid, write_openmetrics
from ..emulator.profile import Profile
from ..emulator.timeline import Events

CPU_UUID = "cpu"
INTERVAL_MS = 100
NOISE = 0.005
SEED = 1


def default_out(run_dir):
    run_dir = Path(run_dir).resolve()
    return run_dir.parent / (run_dir.name + ".emulated")


def _streams(run_dir, stream=sys.stderr):
    """The run's events per GPU: {key: (gpu_uuid or None for an emulated one, host, [events])}
    keyed by the GPU's UUID, or by (host, pid) for a CPU process; and the files' headers.
    Malformed lines (a torn last line of a killed job among them) are left out with a warning
    per file, as layer_events() leaves them out."""
    streams, files, skipped_folders = {}, [], []
    for path in event_files_below(run_dir, skipped_folders):
        skipped = []
        try:
            headers, events = read_event_file(path, skipped)
        except OSError as e:  # (a ValueError: not the copy it writes, which a PermissionError would be)
            raise ValueError(f"cannot open '{path}': {e.strerror or e}") from None
        if skipped:
            (first, reason), n = skipped[0], len(skipped)
            print(f"precisionprobe: warning: skipped {n} malformed line{'s' if n > 1 else ''} in {path} "
                  f"(first at line {first}: {reason})", file=stream)
        files.append((path, headers, events))
        for e in events:
            cpu = e.get("gpu_uuid") == CPU_UUID
            key = ("cpu", e.get("host_name"), e.get("pid")) if cpu else ("gpu", e["gpu_uuid"])
            streams.setdefault(key, []).append(e)
    for note in skipped_folders:  # (as layer_events() says it of the run's own folder)
        print(f"precisionprobe: warning: {note}", file=stream)
    return streams, files


def _events_of(stream):
    stream = sorted(stream, key=lambda e: e["t_start_ns"])
    layers, ids = [], {}
    for e in stream:
        ids.setdefault((e["layer"], e.get("layer_type") or e["layer"]), len(ids))
    layers = list(ids)
    return Events(layers=layers,
                  layer_id=np.array([ids[(e["layer"], e.get("layer_type") or e["layer"])] for e in stream], int),
                  forward=np.array([bool(e["forward"]) for e in stream]),
                  batch=np.array([int(e.get("batch") or 0) for e in stream]),
                  t_start_ns=np.array([int(e["t_start_ns"]) for e in stream], np.int64),
                  t_end_ns=np.array([int(e["t_end_ns"]) for e in stream], np.int64))


def _seconds(start_ns, end_ns):
    """(start_s, seconds): what offline.record replays of calls from start_ns to end_ns."""
    start_s = start_ns // 10**9
    return start_s, math.ceil((end_ns - start_s * 10**9) / 1e9)


def _check_span(key, stream, files):
    """Refuses the calls of one GPU spanning more than the emulator records (a wrong time, say):
    the samples of the whole span are arrays in memory."""
    first = min(stream, key=lambda e: e["t_start_ns"])
    last = max(stream, key=lambda e: e["t_end_ns"])
    _, seconds = _seconds(first["t_start_ns"], last["t_end_ns"])
    if seconds <= offline.MAX_SECONDS:
        return

    def where(event):  # (found only here: a replay keeps no file per event)
        path = next(path for path, _, events in files if any(e is event for e in events))
        return f"layer {event['layer']!r} of job {event.get('job_id')!r} in '{path}'"
    gpu = f"CPU process {key[2]} on {key[1]}" if key[0] == "cpu" else f"GPU {key[1]}"
    span = f"{seconds / 86400:.1f} days, more than the emulator replays ({offline.MAX_SECONDS / 86400:g} days)"
    if first is last:
        raise ValueError(f"one call on {gpu} spans {span}: {where(first)} (t_start_ns {first['t_start_ns']}, "
                         f"t_end_ns {first['t_end_ns']})")
    raise ValueError(f"the calls on {gpu} span {span}: from {where(first)} to {where(last)}")


def replay(run_dir, out, profile_name, stream=sys.stderr):
    """Writes OUT/events and OUT/metrics-N.om for the run's events; returns (events dir, the
    OpenMetrics files). Raises ValueError with a one-line reason (no events; an unknown profile;
    one GPU's calls spanning more than a week, offline.MAX_SECONDS)."""
    profile = Profile.named(profile_name)
    streams, files = _streams(run_dir, stream)
    if not streams:
        raise ValueError(f"no layer events in '{run_dir}' to emulate GPUs for")
    for key, events in streams.items():
        _check_span(key, events, files)
    out = Path(out)
    gpus = {}
    for n, key in enumerate(sorted(streams, key=str)):
        host = key[1] if key[0] == "cpu" else streams[key][0].get("host_name") or "emulated-node"
        # A GPU of this run's process alone: another run analyzed into the same database (--db)
        # gets other GPUs, as its processes would have had, not this one shared.
        first = streams[key][0]
        uuid = emulated_uuid(host, n, f"{first.get('job_id')}:{first.get('pid')}") if key[0] == "cpu" else key[1]
        gpus[key] = EmulatedGpu(n, uuid, host, profile.model_name)
    missing = sorted({e.get("layer_type") or e["layer"] for s in streams.values() for e in s}
                     - set(profile.types))
    if missing:
        print(f"precisionprobe: warning: profile {profile_name!r} has no values for layer types "
              f"{', '.join(render.shown(m) for m in missing)}: the emulator gives them its default values", file=stream)
    events_dir = out / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    emulated_copy.mark(events_dir, run_dir, profile.name)
    for path, headers, events in files:
        target = events_dir / path.relative_to(run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            for h in headers:
                f.write(json.dumps(h, separators=(",", ":")) + "\n")
            for e in events:
                cpu = e.get("gpu_uuid") == CPU_UUID
                gpu = gpus[("cpu", e.get("host_name"), e.get("pid")) if cpu else ("gpu", e["gpu_uuid"])]
                f.write(json.dumps(dict(e, gpu_uuid=gpu.uuid, gpu=gpu.index), separators=(",", ":")) + "\n")
    openmetrics = []
    for key, gpu in gpus.items():
        events = _events_of(streams[key])
        # Through the last event; the recording's idle tail (offline.py) holds its sample.
        start_s, seconds = _seconds(int(events.t_start_ns.min()), int(events.t_end_ns.max()))
        rec = offline.record(seconds, INTERVAL_MS, NOISE, SEED + gpu.index, profile, start_s=start_s, events=events)
        path = out / f"metrics-{gpu.index}.om"
        with open(path, "w") as f:
            write_openmetrics(f, [gpu], rec.tick_ms, [rec.samples])
        openmetrics.append(path)
    return events_dir, openmetrics


class Served:
    """A Prometheus on loopback serving the OpenMetrics files from a temporary storage directory,
    while the `with` block runs: `with Served(files) as url: ...`."""

    def __init__(self, openmetrics):
        self.openmetrics = openmetrics

    def __enter__(self):
        import tempfile
        self.work, self.process = Path(tempfile.mkdtemp(prefix="precisionprobe-emulate-")), None
        try:
            for path in self.openmetrics:
                prometheus.backfill(path, self.work / prometheus.TSDB_DIR)
            self.process, url = prometheus.serve(self.work)  # (stops its process if it fails to start)
        except BaseException:  # (SIGTERM or Ctrl-C too: `with` runs no __exit__ for a failed __enter__)
            self.__exit__()
            raise
        return url

    def __exit__(self, *exc):
        import shutil
        processes.stop(self.process)
        shutil.rmtree(self.work, ignore_errors=True)
        return False
