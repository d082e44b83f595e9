"""Samples that Prometheus stores late: a Prometheus agent (or any remote write) that was cut off
from the central store sends its buffered samples once it is back, minutes after they were
scraped. A refresh of a job that ended before then finds its last seconds without samples; the
events wait (events_waiting), and a later refresh, once the samples are stored, fetches and folds
them, as one refresh after they arrived does.

The Prometheus here is a loopback server that answers raw-sample queries (`selector[range]` at a
time, as pp_refresh asks) from a list, showing only the samples stored so far."""
import json
import re
import sqlite3
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import extension_path

UUID = "GPU-1a7e0000-0000-4000-8000-000000000000"
T0_MS = 1_700_000_000_000
JOB_MS = 20_000


class StoredSamples:
    """Raw samples of DCGM_FI_PROF_SM_ACTIVE for UUID every 100 ms; a query sees those stored at
    or before stored_through_ms."""

    def __init__(self, samples):
        self.samples, self.stored_through_ms, self.requests = samples, 0, 0
        store = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                store.requests += 1
                body = json.dumps(store.answer(form["query"][0], float(form["time"][0]) * 1000)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, query, time_ms):
        selector, amount, unit = re.fullmatch(r"(\{.*\})\[(\d+)(ms|s)\]", query).groups()
        range_ms = int(amount) * (1 if unit == "ms" else 1000)
        values = [[ts / 1000, str(value)] for ts, value in self.samples
                  if time_ms - range_ms < ts <= min(time_ms, self.stored_through_ms)]
        by_uuid = 'UUID=~"' in selector and "1a7e0000" in selector
        result = [{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "UUID": UUID, "Hostname": "node-a", "gpu": "0"},
                   "values": values}] if by_uuid and values else []
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}


@pytest.fixture
def prometheus():
    # A 50 ms call every 100 ms, from 50 ms into each window: SM_ACTIVE 0.5 while the job runs.
    samples = [(T0_MS + k * 100, 0.5 if k * 100 <= JOB_MS else 0.0) for k in range(1, (JOB_MS + 80_000) // 100)]
    store = StoredSamples(samples)
    yield store
    store.server.shutdown()


def write_events(path):
    lines = [json.dumps({"record": "job", "job_id": "late", "params": 1000})]
    for k in range(JOB_MS // 100):
        start = (T0_MS + k * 100 + 50) * 10**6 + 1234  # (ns, as the hook client writes)
        lines.append(json.dumps({"job_id": "late", "host_name": "node-a", "ip": "10.0.0.1", "pod": "late",
                                 "namespace": "ml", "gpu_uuid": UUID, "gpu": 0, "rank": 0, "local_rank": 0,
                                 "world_size": 1, "pid": 1, "epoch": 0, "batch": k, "layer": "fc",
                                 "layer_type": "Linear", "forward": True, "t_start_ns": start,
                                 "t_end_ns": start + 50 * 10**6, "cpu_num": 1.0}))
    path.write_text("\n".join(lines) + "\n")


def connect(url):
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('prometheus_url', ?), pp_config('sample_offset_ms', 0)", (url,))
    conn.execute("UPDATE pp_metrics SET kind = 'window'")
    return conn


def layer_state(conn):
    return conn.execute("SELECT layer, metric, pp_mean_count(state), pp_mean_value(state) FROM layer_state "
                        "ORDER BY layer, metric").fetchall()


def test_samples_stored_after_the_job_ended_are_fetched_by_a_later_refresh(prometheus, tmp_path):
    events = tmp_path / "events"
    events.mkdir()
    write_events(events / "late.jsonl")
    conn = connect(prometheus.url)
    # The agent's samples of the job's last 8 s are not in the central store yet.
    prometheus.stored_through_ms = T0_MS + JOB_MS - 8000
    waiting = conn.execute("SELECT events_waiting FROM pp_refresh(?, 1)", (str(events),)).fetchone()[0]
    assert 70 < waiting < 90
    # They arrive; the next refresh asks for them and folds every event.
    prometheus.stored_through_ms = T0_MS + JOB_MS + 80_000
    requests = prometheus.requests
    added, waiting = conn.execute("SELECT samples_added, events_waiting FROM pp_refresh(?, 1)",
                                  (str(events),)).fetchone()
    assert prometheus.requests > requests and added > 80 and waiting == 0
    assert conn.execute("SELECT count(*) FROM pp_events WHERE folded = 0").fetchone() == (0,)
    # As one refresh after the samples were stored.
    once = connect(prometheus.url)
    once.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert layer_state(conn) == layer_state(once)
