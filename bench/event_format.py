#!/usr/bin/env python3
"""The two event formats side by side: bytes per event, writer-thread CPU per event, read rate.

  PYTHONPATH=python /usr/bin/python3 bench/event_format.py [--events 200000] [--runs 5]
      [--extension build/precisionprobe]

The same EVENTS layer events of one GPU of a DLRM job (22 layers, forward and backward: 44 events
a step, about 1,000 events/s) go through the hook client's real writer (_event_writer.py) once
per format: the queue is filled with what the training thread would have put there, and the
writer's drain (format, join, encode, write(2)) runs every 200 events, as its 0.2 s flush would
at 1,000 events/s. Measured, best of --runs, rounds alternating the formats:

  bytes/event    the file's size over the events (header and definitions included)
  writer CPU     thread CPU time of the drains over the events (what the writer thread costs)
  read           SELECT count(*), sum(t_end - t_start) FROM layer_events(FILE), events/s
  zlib -1        the file compressed at zlib level 1, bytes/event (what compression would add)

The training thread's cost is the same for both formats: it appends one tuple to a deque
(bench/hook_overhead.py measures it); nothing in it depends on the format.
"""
import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from precisionprobe._compact_format import CompactFormatter  # noqa: E402
from precisionprobe._event_format import EventFormatter, job_header  # noqa: E402
from precisionprobe._event_writer import HEADER, EventWriter  # noqa: E402
from precisionprobe._job_identity import JobIdentity  # noqa: E402
from precisionprobe._layer_names import ModuleInfo  # noqa: E402

T0 = 1714557600 * 10**9
EVENTS_PER_FLUSH = 200  # 0.2 s of a GPU at 1,000 events/s
LAYERS = ([(f"bot_l.{i}", "Linear" if i % 2 == 0 else "ReLU", 180_000) for i in range(6)]
          + [(f"emb_l.{i}", "EmbeddingBag", 420_000) for i in range(8)]
          + [(f"top_l.{i}", ("Linear" if i % 2 == 0 else "ReLU") if i < 7 else "Sigmoid", 260_000)
             for i in range(8)])
IDENTITY = JobIdentity(job_id="dlrm-criteo-terabyte-20240501-0001", host_name="gpu-node-07",
                       ip="10.42.7.19", pod="dlrm-criteo-terabyte-worker-3",
                       namespace="recsys-training", rank=3, local_rank=3, world_size=8,
                       pid=31337, cpu_num=16.0)
GPU = ("GPU-5d5b7c1a-93f2-4c7e-8a61-2f0e9b3d4c11", 3)


def queue_items(events):
    """What the training thread queues: (ModuleInfo, forward, batch, epoch, start, end, device)."""
    infos = [(ModuleInfo(name, kind, True), duration) for name, kind, duration in LAYERS]
    items, t, batch = [], T0, 0
    while len(items) < events:
        for forward, order in ((True, infos), (False, infos[::-1])):
            for info, duration in order:
                d = duration * (2 if not forward else 1) + (len(items) * 7919) % 20_000
                items.append((info, forward, batch, 0, t, t + d, 0))
                t += d + 3_000
        t += 2_000_000  # data loading and the optimizer between steps
        batch += 1
    return items[:events]


def write(fmt, items, out_dir):
    """Writes the items through the real writer; returns (path, writer CPU seconds)."""
    formatter = (CompactFormatter if fmt == "compact" else EventFormatter)(IDENTITY, lambda d: GPU)
    writer = EventWriter(str(out_dir), f"events-{fmt}.jsonl", formatter)
    header = job_header(IDENTITY, command=["python", "dlrm_s_pytorch.py"], torch_version="2.3.0",
                        start_time_ns=T0, parameters=540_000_000, model="DLRM_Net", clock="cuda",
                        package_version="bench")
    writer.put((HEADER, header))
    cpu = 0.0
    for i in range(0, len(items), EVENTS_PER_FLUSH):
        for item in items[i:i + EVENTS_PER_FLUSH]:
            writer.put(item)
        started = time.thread_time()
        writer._drain(final=False)  # the writer thread's work, run here to time it alone
        cpu += time.thread_time() - started
    writer.close()
    assert writer.written == len(items), (writer.written, writer.dropped)
    return Path(writer.path), cpu


def read_seconds(connection, path):
    started = time.perf_counter()
    count, _ = connection.execute("SELECT count(*), sum(t_end - t_start) FROM layer_events(?1)",
                                  (str(path),)).fetchone()
    return time.perf_counter() - started, count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--extension", default=str(ROOT / "build" / "precisionprobe"))
    args = parser.parse_args()
    items = queue_items(args.events)
    formats = ("json", "compact")
    best_cpu = {f: float("inf") for f in formats}
    best_read = {f: float("inf") for f in formats}
    size, packed = {}, {}
    work = Path(tempfile.mkdtemp(prefix="pp_event_format_"))
    connection = None
    if Path(args.extension + ".so").exists() or Path(args.extension).exists():
        connection = sqlite3.connect(":memory:")
        connection.enable_load_extension(True)
        connection.load_extension(args.extension)
    try:
        for run in range(args.runs):
            for fmt in formats if run % 2 == 0 else formats[::-1]:
                out = work / f"{fmt}-{run}"
                path, cpu = write(fmt, items, out)
                best_cpu[fmt] = min(best_cpu[fmt], cpu)
                size[fmt] = path.stat().st_size
                if run == 0:
                    packed[fmt] = len(zlib.compress(path.read_bytes(), 1))
                if connection is not None:
                    seconds, count = read_seconds(connection, path)
                    assert count == len(items), count
                    best_read[fmt] = min(best_read[fmt], seconds)
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    n = len(items)
    load = os.getloadavg()[0]
    print(f"{n:,} events of one GPU (DLRM, 44 events a step, a drain every {EVENTS_PER_FLUSH}); "
          f"best of {args.runs} runs; {os.cpu_count()} cores, load average {load:.1f}")
    print(f"{'':26}{'json':>12}{'compact':>12}{'json/compact':>14}")

    def row(label, values, unit_format):
        a, b = values["json"], values["compact"]
        print(f"{label:26}{unit_format(a):>12}{unit_format(b):>12}{a / b:>13.2f}x")

    row("bytes/event", {f: size[f] / n for f in formats}, lambda v: f"{v:.1f}")
    row("writer CPU us/event", {f: best_cpu[f] / n * 1e6 for f in formats}, lambda v: f"{v:.3f}")
    row("zlib -1 bytes/event", {f: packed[f] / n for f in formats}, lambda v: f"{v:.1f}")
    gb = {f: size[f] / n * 1000 * 3600 * 8 / 1e9 for f in formats}
    row("GB per 8-GPU hour", gb, lambda v: f"{v:.2f}")
    if connection is not None:
        rate = {f: n / best_read[f] / 1e6 for f in formats}
        print(f"{'layer_events M events/s':26}{rate['json']:>12.2f}{rate['compact']:>12.2f}"
              f"{rate['compact'] / rate['json']:>13.2f}x (compact/json)")
    else:
        print(f"(no extension at {args.extension}: read rate not measured)")


if __name__ == "__main__":
    main()
