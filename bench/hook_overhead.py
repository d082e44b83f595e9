#!/usr/bin/env python3
"""Cost of layer hooks on the training step of the CPU DLRM.

Three ways to run the same steps, interleaved round by round (same process, model, batches,
seed and torch threads):
  none            no hooks
  precisionprobe  the probe: tuples on a queue, JSON formatted and written by a background thread
  http-per-event  the paper's design: each layer event sent as one synchronous HTTP POST, here to
                  a loopback server this script starts on 127.0.0.1 (keep-alive connection, so
                  this is a lower bound for a hook that opens a connection per request)
  none-again      no hooks, a second time: its "overhead" is the noise floor of the measurement
It prints the median step time of each and the overhead of the hooked runs over `none`. Then,
as a check that a noisy machine cannot blur, it measures the probe's cost per event directly on a
tiny DLRM whose step is mostly hook work, and what that cost is as a share of the step above.

  PYTHONPATH=python /usr/bin/python3 bench/hook_overhead.py [--rounds 5 --steps 30]
"""
import argparse
import http.client
import http.server
import statistics
import tempfile
import threading
import time

import torch

from precisionprobe._event_format import EventFormatter
from precisionprobe._event_writer import HEADER
from precisionprobe._job_identity import JobIdentity
from precisionprobe._probe import Probe
from precisionprobe.workloads import dlrm

# Steps of a few tens of ms on 2 cores: small enough that hook costs would show.
BENCH_DLRM = ["--batch-size", "64", "--mlp-bot", "512-256-64", "--mlp-top", "256-256-256-1",
              "--rows-per-table", "10000", "--distinct-batches", "8"]


class _Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    received = 0

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received += 1
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class HttpPerEvent:
    """A probe sink that POSTs every event, as JSON, before the training thread may go on."""

    def __init__(self, port, identity):
        self._connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self._formatter = EventFormatter(identity)

    def __call__(self, item):
        if item[0] is HEADER:
            return
        body = self._formatter.line(*item).encode()
        self._connection.request("POST", "/event", body, {"Content-Type": "application/json"})
        self._connection.getresponse().read()

    def close(self):
        self._connection.close()


def timed_steps(step, batches, steps):
    """[(wall seconds, training-thread CPU seconds)] per step. CPU time is less disturbed by other
    processes on a shared machine; it leaves out the writer thread, which wall time includes."""
    times = []
    for i in range(steps):
        wall, cpu = time.perf_counter(), time.thread_time()
        step(batches[i % len(batches)]).item()
        times.append((time.perf_counter() - wall, time.thread_time() - cpu))
    return times


TINY_DLRM = ["--batch-size", "2", "--mlp-bot", "8-8-4", "--mlp-top", "8-8-8-1", "--rows-per-table", "10"]


def cost_per_event(out, rounds=7, steps=200):
    """Training-thread CPU microseconds the probe adds per event, on a tiny DLRM."""
    args = dlrm.parse_args([*TINY_DLRM, "--iterations", "8"])
    model, optimizer = dlrm.build(args, torch.device("cpu"))
    step, batches = dlrm.training_step(model, optimizer), dlrm.make_batches(args)
    timed_steps(step, batches, 50)
    cpu = {"none": [], "precisionprobe": []}
    for _ in range(rounds):
        for mode in cpu:
            probe = Probe(job_id="bench", out=out, summary="never").install() if mode != "none" else None
            timed_steps(step, batches, 5)
            cpu[mode] += [c for _, c in timed_steps(step, batches, steps)]
            if probe is not None:
                probe.close()
    events = 2 * sum(1 for m in model.modules() if not list(m.children()))
    added = statistics.median(cpu["precisionprobe"]) - statistics.median(cpu["none"])
    return added / events, statistics.median(cpu["none"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per mode and round")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 leaves the second core of a 2-core box to the writer")
    options, dlrm_flags = parser.parse_known_args()

    args = dlrm.parse_args([*BENCH_DLRM, *dlrm_flags, "--iterations", "8", "--threads", str(options.threads)])
    device = dlrm.setup(args)  # seed and threads, once for all modes
    model, optimizer = dlrm.build(args, device)
    step = dlrm.training_step(model, optimizer)
    batches = dlrm.make_batches(args)
    leaves = sum(1 for m in model.modules() if not list(m.children()))

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    out = tempfile.mkdtemp(prefix="hook-overhead-")

    times = {"none": [], "precisionprobe": [], "http-per-event": [], "none-again": []}
    events = {"precisionprobe": 0}
    timed_steps(step, batches, 3)  # warm-up: allocator, caches
    for round_index in range(options.rounds):
        shift = round_index % len(times)
        order = list(times)[shift:] + list(times)[:shift]  # rotate: no mode always runs first
        for mode in order:
            probe, sink = None, None
            if mode == "precisionprobe":
                probe = Probe(job_id="bench", out=out, summary="never").install()
            elif mode == "http-per-event":
                sink = HttpPerEvent(server.server_address[1], JobIdentity.from_environment("bench"))
                probe = Probe(job_id="bench", out=out, summary="never", sink=sink).install()
            timed_steps(step, batches, 1)  # the first step after attaching names the layers
            times[mode] += timed_steps(step, batches, options.steps)
            if probe is not None:
                written, _ = probe.close()
                events["precisionprobe"] += written if mode == "precisionprobe" else 0
            if sink is not None:
                sink.close()
    server.shutdown()

    print(f"DLRM {' '.join(BENCH_DLRM + dlrm_flags)}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {leaves} leaf layers = {2 * leaves} events/step")
    print(f"{options.rounds} rounds x {options.steps} steps per mode, interleaved; median per step:")
    print(f"  {'':15s} {'wall':>9s} {'overhead':>9s}   {'thread CPU':>10s} {'overhead':>9s}")
    base = [statistics.median(t[k] for t in times["none"]) for k in (0, 1)]
    for mode, samples in times.items():
        wall, cpu = (statistics.median(t[k] for t in samples) for k in (0, 1))
        over = ["" if mode == "none" else f"{100 * (v / b - 1):+8.1f}%" for v, b in zip((wall, cpu), base)]
        print(f"  {mode:15s} {wall * 1e3:6.2f} ms {over[0]:>9s}   {cpu * 1e3:7.2f} ms {over[1]:>9s}")
    print(f"precisionprobe wrote {events['precisionprobe']} events; "
          f"the HTTP sink received {_Sink.received} requests")
    per_event, tiny_step = cost_per_event(out)
    print(f"probe cost per event (tiny DLRM, {tiny_step * 1e6:.0f} us/step without hooks): "
          f"{per_event * 1e6:.1f} us of training-thread CPU; x {2 * leaves} events = "
          f"{100 * per_event * 2 * leaves / base[1]:.1f}% of the {base[1] * 1e3:.1f} ms step above")


if __name__ == "__main__":
    main()
