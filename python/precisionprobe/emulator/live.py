"""Live emulation: follow the layer events a running job writes and serve emulated DCGM counters.

  python3 -m precisionprobe.emulator live --events runs/job1 --profile dlrm \
      --port 9400 --interval-ms 100

Three parts, in one process:

  tail      every 50 ms, new complete lines of the *.jsonl files below --events (files may appear
            later and grow; a partial last line waits for its newline);
  mirror    each line, rewritten so that its gpu_uuid/gpu are those of the emulated GPU that ran it,
            is appended to the same file name below --mirror (default: the events directory's
            path + ".emulated"). pp_refresh reads the MIRROR: its events name GPUs that the
            emulator's series carry, so the attribution matches them by UUID like real data;
  exporter  GET /metrics on 127.0.0.1:PORT in dcgm-exporter's format (exposition.py) for
            --gpus emulated GPUs.

Which emulated GPU an event ran on: its gpu_uuid if that is one of --gpu-uuid; "cpu" (a CPU run:
the hook client writes gpu_uuid "cpu") maps to GPU --cpu-gpu (default 0); any other UUID maps by
the event's host GPU index when that is below --gpus. Events that map nowhere are counted and
left out of the signal (and copied to the mirror unchanged).

Timing. The hook client flushes its events every 0.2 s, so the emulator learns what ran only
after it ran. It therefore publishes, at each scrape, the newest collection window that ended at
least --lag-ms (default 500) ago, stamped with that window's end (ms) as an explicit sample
timestamp, which Prometheus stores as the sample's time (honor_timestamps, the default). So a
stored sample at T is exactly the average over (T - interval, T], as DCGM defines it; real
dcgm-exporter prints no timestamp and Prometheus uses the scrape time. A window's values are
computed once and then fixed; events that arrive after their window was published are counted
as late (raise --lag-ms if any are). Scrape at least as often as the interval, or windows are
skipped (each scrape publishes the newest one).
"""
import bisect
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from .exposition import EMULATOR_NAME, EmulatedGpu, emulated_uuid, metrics_text
from .noise import measure
from .profile import ProfileError

CPU_UUID = "cpu"  # what the hook client writes as gpu_uuid for CPU events


class EventTail:
    """New complete lines of the *.jsonl files below a directory, file by file, in order."""

    def __init__(self, directory, exclude=None, max_bytes_per_poll=8 << 20):
        self.directory = Path(directory)
        self.exclude = Path(exclude).resolve() if exclude else None
        self.max_bytes = max_bytes_per_poll
        self.files = {}  # path -> [offset, partial bytes, inode]

    def poll(self):
        """[(path, line text)] of the lines completed since the last call."""
        out = []
        if not self.directory.is_dir():
            return out
        for path in sorted(self.directory.rglob("*.jsonl")):
            if self.exclude and self.exclude in path.resolve().parents:
                continue
            try:
                st = path.stat()
                state = self.files.get(path)
                if state is None or st.st_size < state[0] or st.st_ino != state[2]:
                    state = self.files[path] = [0, b"", st.st_ino]  # new, truncated or replaced
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
        begin = end_ns - interval_ns
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

    def forget_before(self, t_ns):
        """Drops intervals that no window ending after t_ns can overlap."""
        k = bisect.bisect_left(self.starts, t_ns - self.longest_ns)
        k = max(0, k - 1)  # keep one before: it cuts nothing but keeps overlap logic simple
        if k:
            del self.starts[:k]
            del self.items[:k]


class Emulator:
    """The state shared by the tail thread and the HTTP handlers."""

    def __init__(self, profile, gpus, interval_ms=1000, noise=0.0, mux_zero=0.0, seed=0, lag_ms=500,
                 cpu_gpu=0, clock=time.time_ns):
        if interval_ms < 100:
            raise ValueError("interval_ms: DCGM's floor for profiling fields is 100 ms")
        self.profile = profile
        self.gpus = gpus
        self.map = GpuMap(gpus, cpu_gpu)
        self.interval_ms = int(interval_ms)
        self.noise, self.mux_zero, self.seed, self.lag_ms = noise, mux_zero, seed, int(lag_ms)
        self.clock = clock
        self.signals = [GpuSignal(profile.idle) for _ in gpus]
        self.lock = threading.Lock()
        self.published_tick = None
        self.published_values = None
        self.events = self.unmapped = self.late = self.bad_lines = 0
        self.unknown_types = set()

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
        start, end = int(event["t_start_ns"]), int(event["t_end_ns"])
        with self.lock:
            if self.published_tick is not None and start < self.published_tick * self.interval_ms * 10**6:
                self.late += 1
            self.signals[g].add(start, end, values)
            self.events += 1
        return g

    def collect(self):
        """(sample time ms, values per GPU) of the newest window older than the lag."""
        now_ms = self.clock() // 10**6
        tick = (now_ms - self.lag_ms) // self.interval_ms
        with self.lock:
            if tick != self.published_tick:
                end_ns = tick * self.interval_ms * 10**6
                interval_ns = self.interval_ms * 10**6
                truth = np.array([s.window_mean(end_ns, interval_ns) for s in self.signals])
                self.published_values = np.vstack([
                    measure(truth[g], g, [tick], self.noise, self.mux_zero, self.seed)[0]
                    for g in range(len(self.gpus))])
                self.published_tick = tick
                for s in self.signals:
                    s.forget_before(end_ns - 60 * 10**9)
            return self.published_tick * self.interval_ms, self.published_values

    def metrics(self):
        ts_ms, values = self.collect()
        return metrics_text(self.gpus, values, ts_ms)


class Mirror:
    """Appends rewritten event lines to mirror_dir, one file per followed file."""

    def __init__(self, events_dir, mirror_dir, gpus):
        self.events_dir = Path(events_dir)
        self.mirror_dir = Path(mirror_dir)
        self.gpus = gpus
        self.handles = {}
        self.lines = 0

    def write(self, path, line, gpu_index, event):
        if gpu_index is not None and event is not None:
            gpu = self.gpus[gpu_index]
            event["gpu_uuid"], event["gpu"] = gpu.uuid, gpu.index
            line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        out = self.handles.get(path)
        if out is None:
            target = self.mirror_dir / path.relative_to(self.events_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            out = self.handles[path] = open(target, "a", encoding="utf-8")
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
        event, g = None, None
        try:
            event = json.loads(line)
            if isinstance(event, dict) and "layer" in event and event.get("record") != "job":
                g = emulator.add_event(event)
        except (ValueError, KeyError, TypeError):
            emulator.bad_lines += 1
            event = None
        mirror.write(path, line, g, event if g is not None else None)
    if lines:
        mirror.flush()
    return len(lines)


def make_handler(emulator):
    class Handler(BaseHTTPRequestHandler):
        server_version = "precisionprobe-emulator"

        def do_GET(self):  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, ctype = emulator.metrics().encode(), "text/plain; version=0.0.4; charset=utf-8"
            elif path == "/":
                body = (f"{EMULATOR_NAME}: {len(emulator.gpus)} emulated GPU(s), not real counters. "
                        "Metrics at /metrics.\n").encode()
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


def build_gpus(count, uuids, host_name, model_name, pod="", namespace="", container=""):
    uuids = list(uuids or [])
    if len(uuids) > count:
        raise ValueError(f"{len(uuids)} --gpu-uuid values for {count} GPUs")
    return [EmulatedGpu(i, uuids[i] if i < len(uuids) else emulated_uuid(host_name, i), host_name,
                        model_name, pod, namespace, container) for i in range(count)]


def run(args, profile):
    """The `live` command: runs until SIGINT/SIGTERM or --duration; returns an exit status."""
    host_name = args.hostname or socket.gethostname()
    gpus = build_gpus(args.gpus, args.gpu_uuid, host_name, profile.model_name, args.pod,
                      args.namespace, args.container)
    if not 0 <= args.cpu_gpu < len(gpus):
        raise ValueError(f"--cpu-gpu {args.cpu_gpu}: there are {len(gpus)} emulated GPUs")
    events_dir = Path(args.events).resolve()
    mirror_dir = Path(args.mirror).resolve() if args.mirror else Path(str(events_dir) + ".emulated")
    if mirror_dir == events_dir or events_dir in mirror_dir.parents:
        raise ValueError("--mirror must not be inside --events (pp_refresh would read both)")
    mirror_dir.mkdir(parents=True, exist_ok=True)
    emulator = Emulator(profile, gpus, args.interval_ms, args.noise, args.mux_zero, args.seed,
                        args.lag_ms, args.cpu_gpu)
    tail = EventTail(events_dir, exclude=mirror_dir)
    mirror = Mirror(events_dir, mirror_dir, gpus)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(emulator))
    server.daemon_threads = True
    port = server.server_address[1]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    http_thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                   name="emulator-http", daemon=True)
    http_thread.start()
    print(f"{EMULATOR_NAME}: serving http://127.0.0.1:{port}/metrics for {len(gpus)} emulated "
          f"GPU(s) ({', '.join(g.uuid for g in gpus)}); NOT real GPU counters", flush=True)
    print(f"{EMULATOR_NAME}: following {events_dir}; events rewritten to emulated GPUs in "
          f"{mirror_dir} (give that to pp_refresh)", flush=True)
    deadline = None if args.duration is None else time.monotonic() + args.duration
    try:
        while not stop.wait(args.poll_ms / 1000.0):
            follow_once(tail, emulator, mirror)
            if deadline is not None and time.monotonic() >= deadline:
                break
        follow_once(tail, emulator, mirror)
    finally:
        server.shutdown()
        server.server_close()
        mirror.close()
    print(f"{EMULATOR_NAME}: followed {emulator.events} events, {emulator.unmapped} on no emulated "
          f"GPU, {emulator.late} late (after their window was published), {emulator.bad_lines} "
          f"unreadable lines; mirror {mirror_dir}", file=sys.stderr, flush=True)
    if emulator.unknown_types:
        print(f"{EMULATOR_NAME}: warning: no profile values for layer types "
              f"{sorted(map(str, emulator.unknown_types))}: left out of the signal", file=sys.stderr)
    if emulator.late:
        print(f"{EMULATOR_NAME}: warning: {emulator.late} events arrived after their window was "
              "published; those windows do not include them (raise --lag-ms)", file=sys.stderr)
    return 0
