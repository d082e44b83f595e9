"""Live emulation: follow the layer events a running job writes and serve emulated DCGM counters.

  python3 -m precisionprobe.emulator live --events runs/job1 --profile dlrm \
      --port 9400 --interval-ms 100

Three parts, in one process:

  tail      every 50 ms, new complete lines of the *.jsonl files below --events (files may appear
            later and grow; a partial last line waits for its newline), in either format the
            hook client writes (compact, its default, or JSON Lines: _event_reader.py). --events
            itself may appear later (the emulator may start before the job that makes it); one
            that never did ends the run with status 1 (and no mirror of it left), and a path that
            is or lies below something other than a folder is refused;
  mirror    each event, rewritten so that its gpu_uuid/gpu are those of the emulated GPU that ran
            it, is appended to the same file name below --mirror (default: the events directory's
            path + ".emulated"; each run writes its files anew) as a JSON line, after the job
            header line: the mirror is JSON Lines
            whatever the followed file's format. pp_refresh reads the MIRROR: its events name GPUs
            that the emulator's series carry, so the attribution matches them by UUID like real data;
  exporter  GET /metrics on 127.0.0.1:PORT in dcgm-exporter's format (exposition.py) for
            --gpus emulated GPUs; GET /served (test support, below) says what it served.

It runs until SIGINT/SIGTERM or --duration, and serves the idle GPU between and after jobs, as
dcgm-exporter does: a job's end stops neither the exporter nor the Prometheus that scrapes it, and
the sample describing a job's last events is stored some time after them (timing.tail_seconds: 5 s
by default). So --duration, once passed, waits until that long after the latest event followed
(at most that long more); a signal stops it at once, so whoever sends one after a job waits for
the last events' sample to be stored first (scripts/main_job.py waits 2 s).

Which emulated GPU an event ran on: its gpu_uuid if that is one of --gpu-uuid; "cpu" (a CPU run:
the hook client writes gpu_uuid "cpu") maps to GPU --cpu-gpu (default 0); any other UUID maps by
the event's host GPU index when that is below --gpus. Events that map nowhere are counted and
left out of the signal (and copied to the mirror unchanged).

Several jobs on one emulated GPU: all its events form one timeline, as for one job. Calls that
overlap are cut where the later one starts (it owns the shared time), so jobs taking turns come
out as time slicing does, but jobs running at once are not added up, and FB_USED is the running
layer's value, not the sum of every resident process's memory. The offline emulator models both
kinds of sharing (--jobs, --sharing: colocation.py).

Timing (timing.py; the package doc has the table). By default (--timing realistic) the text
carries NO timestamps, as dcgm-exporter's does not, so Prometheus stores its scrape time. At each
GET /metrics the emulator works out from the wall clock which DCGM window the exporter would
serve: with --exporter on-scrape (default, dcgm-exporter 4.x) the newest window that ended at
least --exporter-latency-ms (+ Gaussian --exporter-jitter-ms) before the request; with
--exporter cached (2.x, 3.x) the one its own collection ticker read last. The windows lie on
DCGM's drifting grid (--dcgm-phase-ms, --dcgm-drift-ppm, phases from --seed when not given),
counted from the emulator's start (whole seconds); GPU_UTIL is the average over the driver's
window (--util-period-ms) that was newest at the window's end, FB_USED the value at that instant.
Each window's values are computed the first time it is served and kept by window index (GPU_UTIL
by driver window index), so a window served twice is served identically, as a real repeat is.

The hook client flushes its events every 0.2 s and this emulator reads them every 50 ms, so it
learns what ran only after it ran: the live default latency is 300 ms (the upper end of the lag
users report between GPU activity and dcgm-exporter's values; offline it is 30 ms), long enough
for a window's events to have arrived. Events that arrive after a window they overlap was served
are counted as late (raise --exporter-latency-ms if any are; slow CPU layers may need more).

IDEALISED modes: --timing exact publishes the newest window that ended at least --lag-ms
(default 500; the same parameter as --exporter-latency-ms) ago, stamped with that window's end
(ms) as an explicit timestamp, which Prometheus stores (honor_timestamps, its default): a stored
sample at T is exactly the average over (T - interval, T]. --timing offset stamps end +
--offset-ms. --subms-phase puts their grid at a sub-millisecond phase. Scrape at least as often
as the interval, or windows are skipped (each scrape publishes the newest one).

Test support: GET /served returns JSON: the resolved timing parameters, the origin (ns) of the
grids, and per GET /metrics answered (the newest SERVED_LOG) its wall-clock time t_ns, the
User-Agent, the DCGM window (index, begin_ns, end_ns), GPU_UTIL's window (util_window,
util_begin_ns, util_end_ns), FB_USED's instant_ns, the explicit timestamp ts_ms (null when
none is printed) and the values per GPU as printed. Tests match Prometheus' stored samples to it.
"""
import bisect
import errno
import json
import random
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from .. import _emulated_copy as emulated_copy
from .._event_files import event_files_below
from .._path_kind import kind_of
from .._event_reader import EventDecoder
from . import timing as timing_model
from .exposition import EMULATOR_NAME, EmulatedGpu, emulated_uuid, format_value, metrics_text
from .noise import measure
from .profile import FB_USED, GPU_UTIL, METRICS, ProfileError
from .timing import Timing

CPU_UUID = "cpu"  # what the hook client writes as gpu_uuid for CPU events
SERVED_LOG = 100_000   # answers /served remembers (about 3 hours of 100 ms scrapes)
KEEP_WINDOWS = 600     # windows (and driver windows) whose values stay cached after a newer one
_UTIL, _FB = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)


class ExporterDown(Exception):
    """The emulated dcgm-exporter is restarting (timing.unserved): /metrics answers 503."""


class EventTail:
    """New complete lines of the *.jsonl files below a directory, file by file, in order."""

    def __init__(self, directory, exclude=None, max_bytes_per_poll=8 << 20):
        self.directory = Path(directory)
        self.exclude = Path(exclude).resolve() if exclude else None
        self.max_bytes = max_bytes_per_poll
        self.files = {}  # path -> [offset, partial bytes, inode]
        self.decoders = {}  # path -> EventDecoder of the file as it is now

    def poll(self):
        """[(path, line text)] of the lines completed since the last call."""
        out = []
        if not self.directory.is_dir():
            return out
        for path in event_files_below(self.directory):
            if self.exclude and self.exclude in path.resolve().parents:
                continue
            try:
                st = path.stat()
                state = self.files.get(path)
                if state is None or st.st_size < state[0] or st.st_ino != state[2]:
                    state = self.files[path] = [0, b"", st.st_ino]  # new, truncated or replaced
                    self.decoders[path] = EventDecoder()
                if st.st_size == state[0]:
                    continue
                with open(path, "rb") as f:
                    f.seek(state[0])
                    data = f.read(self.max_bytes)
            except OSError:
                continue
            state[0] += len(data)
            data = state[1] + data
            lines = data.split(b"\n")
            state[1] = lines.pop()  # b"" after a final newline, else a line still being written
            out.extend((path, line.decode("utf-8", "replace")) for line in lines if line)
        return out


class GpuMap:
    """Which emulated GPU an event ran on (see the module doc)."""

    def __init__(self, gpus, cpu_gpu=0):
        self.gpus = gpus
        self.cpu_gpu = cpu_gpu
        self.by_uuid = {g.uuid: g.index for g in gpus}

    def index(self, event):
        uuid = event.get("gpu_uuid")
        if uuid == CPU_UUID:
            return self.cpu_gpu
        if uuid in self.by_uuid:
            return self.by_uuid[uuid]
        gpu = event.get("gpu")
        if isinstance(gpu, int) and not isinstance(gpu, bool) and 0 <= gpu < len(self.gpus):
            return gpu
        return None


class GpuSignal:
    """Layer intervals of one emulated GPU seen so far, and window averages over them."""

    def __init__(self, idle):
        self.idle = np.asarray(idle, dtype=np.float64)
        self.starts = []   # sorted t_start_ns
        self.items = []    # (t_start_ns, t_end_ns, excess values) in the same order
        self.longest_ns = 0

    def add(self, start_ns, end_ns, values):
        i = bisect.bisect_right(self.starts, start_ns)
        self.starts.insert(i, start_ns)
        self.items.insert(i, (start_ns, end_ns, np.asarray(values, dtype=np.float64) - self.idle))
        self.longest_ns = max(self.longest_ns, end_ns - start_ns)

    def window_mean(self, end_ns, interval_ns):
        return self.mean(end_ns - interval_ns, end_ns)

    def mean(self, begin, end_ns):
        """Average over (begin, end_ns] (ns)."""
        interval_ns = end_ns - begin
        i = bisect.bisect_left(self.starts, begin - self.longest_ns)
        total = np.zeros_like(self.idle)
        j = i
        while j < len(self.items) and self.items[j][0] < end_ns:
            start, end, excess = self.items[j]
            if j + 1 < len(self.items):  # the later-starting layer owns shared time (truth.py)
                end = min(end, self.items[j + 1][0])
            lo, hi = max(start, begin), min(end, end_ns)
            if hi > lo:
                total += excess * (hi - lo)
            j += 1
        return self.idle + total / interval_ns

    def value_at(self, t_ns):
        """The signal at instant t_ns: the layer running then (over [start, end), cut where the
        next one starts), else idle."""
        i = bisect.bisect_right(self.starts, t_ns) - 1
        if i >= 0:
            start, end, excess = self.items[i]
            if t_ns < end:
                return self.idle + excess
        return self.idle.copy()

    def forget_before(self, t_ns):
        """Drops intervals that no window ending after t_ns can overlap."""
        k = bisect.bisect_left(self.starts, t_ns - self.longest_ns)
        k = max(0, k - 1)  # keep one before: it cuts nothing but keeps overlap logic simple
        if k:
            del self.starts[:k]
            del self.items[:k]


class Emulator:
    """The state shared by the tail thread and the HTTP handlers.

    timing: a timing.Timing (default realistic); lag_ms: the same parameter as its
    exporter_latency_ms (the old name, kept for the idealised modes' --lag-ms)."""

    def __init__(self, profile, gpus, interval_ms=1000, noise=0.0, mux_zero=0.0, seed=0, lag_ms=None,
                 cpu_gpu=0, clock=time.time_ns, timing=Timing()):
        interval_ms = timing_model.collection_interval(interval_ms)
        if lag_ms is not None:
            if isinstance(lag_ms, bool) or not isinstance(lag_ms, (int, float)) \
                    or not 0 <= lag_ms <= timing_model.MAX_MS:
                raise ValueError(f"--lag-ms must be a number of ms from 0 to {timing_model.MAX_MS:.0f} "
                                 f"(an hour), got {lag_ms!r}")
            if timing.exporter_latency_ms is not None and float(timing.exporter_latency_ms) != float(lag_ms):
                raise ValueError("--lag-ms and --exporter-latency-ms are one parameter: give one of them")
            timing = replace(timing, exporter_latency_ms=float(lag_ms))
        self.timing = timing_model.resolve(timing, interval_ms, seed, live=True)
        self.profile = profile
        self.gpus = gpus
        self.map = GpuMap(gpus, cpu_gpu)
        self.interval_ms = int(interval_ms)
        self.noise, self.mux_zero, self.seed = noise, mux_zero, seed
        self.lag_ms = self.timing.exporter_latency_ms
        self.clock = clock
        # The idealised grid counts from the epoch (tick k ends at k * interval ms, as before the
        # timing model); the realistic grids from the emulator's start, in whole seconds.
        self.origin_ns = 0 if self.timing.idealised else clock() // 10**9 * 10**9
        self.signals = [GpuSignal(profile.idle) for _ in gpus]
        self.lock = threading.Lock()
        self.rng = random.Random(seed)  # the on-scrape exporter's latency jitter
        self.windows = {}       # DCGM window index -> served entry (values fixed once served)
        self.util_truth = {}    # driver window index -> noiseless GPU_UTIL per GPU
        self.served_end_ns = None  # end of the newest window served: older events are late
        self.last_end_ns = None    # end of the latest event followed: the idle tail runs from it
        self.tail_ns = int(timing_model.tail_seconds(self.timing) * 1e9)
        self.served = deque(maxlen=SERVED_LOG)
        self.events = self.unmapped = self.late = self.bad_lines = 0
        self.unknown_types = set()
        self.defaulted_types = set()  # layer types only the profile's "default" covers

    def add_event(self, event):
        """Adds one parsed event; returns the emulated GPU index or None."""
        g = self.map.index(event)
        if g is None:
            self.unmapped += 1
            return None
        try:
            values = self.profile.value(event["layer"], event.get("layer_type"), event["forward"])
        except ProfileError:
            self.unknown_types.add(event.get("layer_type"))
            return g
        layer_type = event.get("layer_type")
        if (layer_type not in self.profile.types and event["layer"] not in self.profile.layers
                and layer_type not in self.defaulted_types):
            self.defaulted_types.add(layer_type)
            print(f"{EMULATOR_NAME}: warning: profile {self.profile.source} has no values for layer type "
                  f"{layer_type!r}: its calls get the profile's default values", file=sys.stderr, flush=True)
        start, end = int(event["t_start_ns"]), int(event["t_end_ns"])
        with self.lock:
            if self.served_end_ns is not None and start < self.served_end_ns:
                self.late += 1
            self.signals[g].add(start, end, values)
            self.events += 1
            self.last_end_ns = end if self.last_end_ns is None else max(self.last_end_ns, end)
        return g

    def in_tail(self):
        """Whether the idle tail after the latest event followed is still running (module doc)."""
        with self.lock:
            return self.last_end_ns is not None and self.clock() < self.last_end_ns + self.tail_ns

    def _window(self, k):
        """The entry of DCGM window k: computed once, then kept (a repeat serves it unchanged)."""
        entry = self.windows.get(k)
        if entry is not None:
            return entry
        t, origin = self.timing, self.origin_ns
        end = int(timing_model.dcgm_end_ns(t, origin, k))
        begin = int(timing_model.dcgm_end_ns(t, origin, k - 1))
        entry = {"window": k, "window_begin_ns": begin, "window_end_ns": end}
        if t.idealised:  # every metric averaged over the window, stamped with its end (+ offset)
            truth = np.array([s.window_mean(end, end - begin) for s in self.signals])
            values = np.vstack([measure(truth[g], g, [k], self.noise, self.mux_zero, self.seed)[0]
                                for g in range(len(self.gpus))])
            stamp = end if t.mode == "exact" else end + int(round(t.offset_ms * 1e6))
            entry.update(util_window=k, util_begin_ns=begin, util_end_ns=end, instant_ns=end,
                         ts_ms=stamp // 10**6)
        else:
            j = int(timing_model.util_window_at(t, origin, end))
            util_begin = int(timing_model.util_end_ns(t, origin, j - 1))
            util_end = int(timing_model.util_end_ns(t, origin, j))
            if j not in self.util_truth:
                self.util_truth[j] = [s.mean(util_begin, util_end)[_UTIL] for s in self.signals]
            truth = np.array([s.mean(begin, end) for s in self.signals])
            for g, s in enumerate(self.signals):
                truth[g, _UTIL] = self.util_truth[j][g]
                truth[g, _FB] = s.value_at(end)[_FB]
            values = np.vstack([measure(truth[g], g, [k], self.noise, self.mux_zero, self.seed,
                                        util_ticks=[j])[0] for g in range(len(self.gpus))])
            entry.update(util_window=j, util_begin_ns=util_begin, util_end_ns=util_end, instant_ns=end,
                         ts_ms=None)
            for old in [i for i in self.util_truth if i < j - KEEP_WINDOWS]:
                del self.util_truth[old]
        entry["values"] = values
        self.windows[k] = entry
        for old in [i for i in self.windows if i < k - KEEP_WINDOWS]:
            del self.windows[old]
        self.served_end_ns = end if self.served_end_ns is None else max(self.served_end_ns, end)
        for s in self.signals:
            s.forget_before(end - 60 * 10**9)
        return entry

    def served_window(self, now_ns):
        """Index of the DCGM window the exporter serves at now_ns (the timing model)."""
        t = self.timing
        if t.idealised:
            lag_ns = int(round(t.exporter_latency_ms * 1e6))
            return int(timing_model.dcgm_window_at(t, self.origin_ns, now_ns - lag_ns))
        z = self.rng.gauss(0.0, 1.0) if t.exporter == "on-scrape" else None
        return int(timing_model.served_window(t, self.origin_ns, self.seed, now_ns, z))

    def collect(self, agent=None):
        """(explicit timestamp ms or None, values per GPU) of what one scrape now is served; the
        answer is remembered for /served."""
        now = self.clock()
        with self.lock:
            k = self.served_window(now)
            if not self.timing.idealised and timing_model.unserved(self.timing, self.origin_ns, now, k):
                raise ExporterDown(f"{EMULATOR_NAME}: restarting (--exporter-restart-s)")
            entry = self._window(k)
            printed = [[float(format_value(m, v)) for m, v in zip(METRICS, row)] for row in entry["values"]]
            self.served.append({"t_ns": now, "agent": agent,
                                **{k: v for k, v in entry.items() if k != "values"}, "values": printed})
            return entry["ts_ms"], entry["values"]

    def metrics(self, agent=None):
        ts_ms, values = self.collect(agent)
        return metrics_text(self.gpus, values, ts_ms)

    def served_document(self):
        """What /served returns (test support, module doc)."""
        with self.lock:
            served = list(self.served)
        return {"emulator": EMULATOR_NAME, "note": "test support: what each GET /metrics was served",
                "timing": timing_model.parameters(self.timing), "origin_ns": self.origin_ns,
                "interval_ms": self.interval_ms, "gpus": [g.uuid for g in self.gpus], "served": served}


class Mirror:
    """Writes rewritten event lines to mirror_dir, one file per followed file. Each run writes
    its files anew: a restarted emulator reads the events from the start again, and appending
    would give pp_refresh every event twice."""

    def __init__(self, events_dir, mirror_dir, gpus):
        self.events_dir = Path(events_dir)
        self.mirror_dir = Path(mirror_dir)
        self.gpus = gpus
        self.handles = {}
        self.lines = 0

    def write(self, path, line, gpu_index, event):
        """`event`: the line's event (None for other lines); written as JSON, on the emulated
        GPU that ran it when gpu_index is one."""
        if event is not None:
            if gpu_index is not None:
                gpu = self.gpus[gpu_index]
                event["gpu_uuid"], event["gpu"] = gpu.uuid, gpu.index
            line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        out = self.handles.get(path)
        if out is None:
            target = self.mirror_dir / path.relative_to(self.events_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            out = self.handles[path] = open(target, "w", encoding="utf-8")
        out.write(line + "\n")
        self.lines += 1

    def flush(self):
        for out in self.handles.values():
            out.flush()

    def close(self):
        for out in self.handles.values():
            out.close()
        self.handles = {}


def follow_once(tail, emulator, mirror):
    """One poll: new lines into the signal and the mirror; returns how many lines."""
    lines = tail.poll()
    for path, line in lines:
        decoder = tail.decoders[path]
        event, g = None, None
        try:
            kind, record = decoder.decode(line)
            if kind is None and decoder.compact:
                continue  # format, definition and block lines: the mirror is JSON Lines
            if kind == "event" and "layer" in record:
                event = record
                g = emulator.add_event(event)
        except (ValueError, KeyError, TypeError):  # EventFormatError is a ValueError
            emulator.bad_lines += 1
            event = None
            if decoder.compact:
                continue
        # A JSON line is copied as it is unless the event moves to an emulated GPU.
        mirror.write(path, line, g, event if g is not None or decoder.compact else None)
    if lines:
        mirror.flush()
    return len(lines)


def make_handler(emulator):
    class Handler(BaseHTTPRequestHandler):
        server_version = "precisionprobe-emulator"

        def do_GET(self):  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                try:
                    body = emulator.metrics(self.headers.get("User-Agent")).encode()
                except ExporterDown as down:  # Prometheus stores nothing and marks the target down
                    self.send_error(503, str(down))
                    return
                ctype = "text/plain; version=0.0.4; charset=utf-8"
            elif path == "/served":
                body, ctype = json.dumps(emulator.served_document()).encode(), "application/json"
            elif path == "/":
                body = (f"{EMULATOR_NAME}: {len(emulator.gpus)} emulated GPU(s), not real counters. "
                        "Metrics at /metrics; what each scrape was served at /served.\n").encode()
                ctype = "text/plain; charset=utf-8"
            else:
                self.send_error(404)
                return
            try:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the scraper gave up (scrape timeout); the next scrape gets the next window

        def log_message(self, *args):  # scraped 10 times a second: no access log
            pass

    return Handler


def describe(t):
    """One line saying what the live exporter does (printed at start)."""
    if t.idealised:
        stamp = "its end" if t.mode == "exact" else f"its end + {t.offset_ms:g} ms"
        return (f"{t.mode} (IDEALISED): the newest window that ended {t.exporter_latency_ms:g} ms ago, "
                f"stamped with {stamp}")
    return (f"realistic: no timestamps (Prometheus stores its scrape time); exporter {t.exporter}, "
            f"latency {t.exporter_latency_ms:g} +- {t.exporter_jitter_ms:g} ms; DCGM period "
            f"{t.dcgm_period_ms:g} ms, phase {t.dcgm_phase_ms:g} ms, drift {t.dcgm_drift_ppm:g} ppm; "
            f"GPU_UTIL period {t.util_period_ms:.6g} ms" + timing_model.describe_restart(t))


def build_gpus(count, uuids, host_name, model_name, pod="", namespace="", container=""):
    uuids = list(uuids or [])
    if len(uuids) > count:
        raise ValueError(f"{len(uuids)} --gpu-uuid values for {count} GPUs")
    # An empty UUID names no GPU (pp_refresh matches series to events by it); a repeated one two.
    if "" in uuids:
        raise ValueError(f"--gpu-uuid: value {uuids.index('') + 1} is empty: give the emulated GPU's UUID")
    repeated = next((uuid for i, uuid in enumerate(uuids) if uuid in uuids[:i]), None)
    if repeated is not None:
        raise ValueError(f"--gpu-uuid: {repeated!r} is given twice: each emulated GPU needs its own")
    return [EmulatedGpu(i, uuids[i] if i < len(uuids) else emulated_uuid(host_name, i), host_name,
                        model_name, pod, namespace, container) for i in range(count)]


def check_events_dir(given, events_dir):
    """Refuses an --events that cannot hold event files. One that does not exist yet is followed
    once it appears: the emulator may start before the job that makes it."""
    there = next((p for p in (events_dir, *events_dir.parents) if kind_of(p) is not None), None)
    if there is None or kind_of(there) == "a directory":
        return
    if there == events_dir:
        raise ValueError(f"--events: '{given}' is {kind_of(there)}, not a folder")
    raise ValueError(f"--events: '{given}' cannot appear: '{there}' is {kind_of(there)}, not a folder")


def run(args, profile):
    """The `live` command: runs until SIGINT/SIGTERM or --duration; returns an exit status."""
    host_name = args.hostname or socket.gethostname()
    gpus = build_gpus(args.gpus, args.gpu_uuid, host_name, profile.model_name, args.pod,
                      args.namespace, args.container)
    if not 0 <= args.cpu_gpu < len(gpus):
        raise ValueError(f"--cpu-gpu {args.cpu_gpu}: there are {len(gpus)} emulated GPUs")
    events_dir = Path(args.events).resolve()
    check_events_dir(args.events, events_dir)
    mirror_dir = Path(args.mirror).resolve() if args.mirror else Path(str(events_dir) + ".emulated")
    if mirror_dir == events_dir or events_dir in mirror_dir.parents:
        raise ValueError("--mirror must not be inside --events (pp_refresh would read both)")
    if mirror_dir.exists() and not mirror_dir.is_dir():
        raise ValueError(f"--mirror{'' if args.mirror else ' (by default EVENTS.emulated)'}: '{mirror_dir}' is "
                         f"{kind_of(mirror_dir)}, not a folder")
    emulator = Emulator(profile, gpus, args.interval_ms, args.noise, args.mux_zero, args.seed,
                        args.lag_ms, args.cpu_gpu, timing=args.timing)
    # The port first, so that a busy one leaves no mirror folder behind.
    try:
        server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(emulator))
    except OSError as error:
        busy = " (another exporter or emulator listens there: stop it, or give another --port)" \
            if error.errno == errno.EADDRINUSE else ""
        raise ValueError(f"--port {args.port}: cannot listen on 127.0.0.1:{args.port}: "
                         f"{error.strerror or error}{busy}") from None
    server.daemon_threads = True
    made_mirror = not mirror_dir.exists()
    try:
        mirror_dir.mkdir(parents=True, exist_ok=True)
        emulated_copy.mark(mirror_dir, events_dir, profile.name)
    except OSError as error:
        server.server_close()
        raise ValueError(f"--mirror{'' if args.mirror else ' (by default EVENTS.emulated)'}: cannot write "
                         f"'{error.filename or mirror_dir}': {error.strerror or error}") from None
    tail = EventTail(events_dir, exclude=mirror_dir)
    mirror = Mirror(events_dir, mirror_dir, gpus)
    port = server.server_address[1]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # A real exporter answers a scrape within a millisecond or two; with Python's default 5 ms
    # switch interval the HTTP thread can wait that long for the follower to give up the GIL.
    sys.setswitchinterval(0.0005)
    http_thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                   name="emulator-http", daemon=True)
    http_thread.start()
    print(f"{EMULATOR_NAME}: serving http://127.0.0.1:{port}/metrics for {len(gpus)} emulated "
          f"GPU(s) ({', '.join(g.uuid for g in gpus)}); NOT real GPU counters", flush=True)
    print(f"{EMULATOR_NAME}: timing {describe(emulator.timing)}", flush=True)
    print(f"{EMULATOR_NAME}: following {events_dir}{'' if events_dir.is_dir() else ' (not there yet)'}; "
          f"events rewritten to emulated GPUs in {mirror_dir} (give that to pp_refresh)", flush=True)
    deadline = None if args.duration is None else time.monotonic() + args.duration
    try:
        while not stop.wait(args.poll_ms / 1000.0):
            follow_once(tail, emulator, mirror)
            # --duration: past it, serve out the idle tail of the latest event (a real exporter
            # does not stop with the job), but never longer than one tail past it.
            if deadline is not None and time.monotonic() >= deadline and (
                    not emulator.in_tail() or time.monotonic() >= deadline + emulator.tail_ns / 1e9):
                break
        follow_once(tail, emulator, mirror)
    finally:
        server.shutdown()
        server.server_close()
        mirror.close()
    print(f"{EMULATOR_NAME}: followed {emulator.events} events, {emulator.unmapped} on no emulated "
          f"GPU, {emulator.late} late (after their window was served), {emulator.bad_lines} "
          f"unreadable lines; mirror {mirror_dir}", file=sys.stderr, flush=True)
    if emulator.unknown_types:
        print(f"{EMULATOR_NAME}: warning: no profile values for layer types "
              f"{sorted(map(str, emulator.unknown_types))}: left out of the signal", file=sys.stderr)
    if emulator.late:
        knob = "--lag-ms" if emulator.timing.idealised else "--exporter-latency-ms"
        print(f"{EMULATOR_NAME}: warning: {emulator.late} events arrived after their window was "
              f"served; those windows do not include them (raise {knob})", file=sys.stderr)
    if not events_dir.is_dir():
        if made_mirror and not mirror.lines:  # a mirror of nothing, made here: not left behind
            try:
                (mirror_dir / emulated_copy.MARK).unlink(missing_ok=True)
                mirror_dir.rmdir()
            except OSError:
                pass
        print(f"{EMULATOR_NAME}: error: --events: '{args.events}' never appeared: no job wrote there "
              "(give the folder the job writes: --out of precisionprobe run)", file=sys.stderr)
        return 1
    return 0
