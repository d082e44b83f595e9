"""Faults of real servers, and the PromQL pp_refresh builds, against real servers.

Each test is an example of what the extension does when something goes wrong, written so that
it fails if the engine misbehaves:
  * a real Prometheus paused, killed or restarted in the middle of a chunked fetch;
  * PromQL that pp_refresh builds from event UUIDs and host names full of metacharacters, against
    a real Prometheus and a real VictoriaMetrics.
Answers no real server gives (slow, 429 and 503, not JSON, partial) are in
test_hostile_servers.py; concurrent and incremental refreshes in test_concurrent_refresh.py, and
those with retention in test_retention.py.

CTest runs this file as the test `faults.servers` (fixture `servers`), and the ASan stage again
with the sanitized extension loaded: PP_EXTENSION names the built
extension, PP_TEST_ENV_DIR the directory of the servers' env.json, and PYTHONPATH holds the
repository's root (tests.fixtures) and python/ (precisionprobe.harness). Tests that break a server
start their own Prometheus (precisionprobe.harness.prometheus) on a free loopback port.
"""
import json
import os
import re
import signal
import sqlite3
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from precisionprobe.harness import prometheus as prometheus_server
from precisionprobe.harness import victoria
from tests.fixtures import dcgm_data
from tests.fixtures.extension import connect, http_stats, timed

LONG_QUERY = (f"FROM prom_samples('pp_test_long', {dcgm_data.LONG_START}, "
              f"{dcgm_data.LONG_START + dcgm_data.LONG_SECONDS})")
LONG_POINTS = dcgm_data.LONG_SECONDS // 10


# ---- Helpers ------------------------------------------------------------------------------

class Prometheus:
    """A Prometheus of this test alone, serving dcgm_data (plus extra OpenMetrics lines)."""

    def __init__(self, work, extra_openmetrics=""):
        self.work = work
        om = work / "data.om"
        dcgm_data.write_openmetrics(om)
        if extra_openmetrics:
            om.write_text(om.read_text().replace("# EOF\n", extra_openmetrics + "# EOF\n"))
        self.process, self.url = prometheus_server.start_backfilled(om, work)
        self.port = int(self.url.rsplit(":", 1)[1])

    def query_requests(self):
        """Requests Prometheus has answered on /api/v1/query (raw-sample fetches)."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            text = r.read().decode()
        return sum(float(m) for m in re.findall(
            r'^prometheus_http_requests_total\{[^}]*handler="/api/v1/query"[^}]*\} (\S+)$', text, re.M))

    def wait_for_requests(self, count, seconds=30):
        deadline = time.monotonic() + seconds
        while self.query_requests() < count:
            assert time.monotonic() < deadline, f"Prometheus never saw {count} queries"
            time.sleep(0.005)

    def signal(self, sig):
        os.kill(self.process.pid, sig)

    def kill(self):
        self.signal(signal.SIGKILL)
        self.process.wait()

    def restart(self):
        """Starts it again on the same port and storage, as after a crash or a rollout."""
        self.process, _ = prometheus_server.serve(self.work, self.port)

    def stop(self):
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.kill()


@pytest.fixture(scope="module")
def env():
    env_dir = os.environ.get("PP_TEST_ENV_DIR")
    env_file = Path(env_dir or "/nonexistent") / "env.json"
    if not env_file.exists():
        pytest.skip("no test servers: run through ctest, which starts them")
    return json.loads(env_file.read_text())


@pytest.fixture
def prometheus(tmp_path):
    server = Prometheus(tmp_path)
    yield server
    server.stop()


# ---- A real Prometheus that stops, dies or restarts mid-fetch ----------------------------------

def test_prometheus_paused_mid_fetch_fails_within_timeout(prometheus):
    """SIGSTOP in the middle of a 917-request fetch: the statement fails after two attempts of
    timeout_ms each, naming the setting; nothing hangs. After SIGCONT the same query works."""
    conn = connect(prometheus.url, timeout_ms=500, retries=1, samples_chunk_seconds=60)
    with ThreadPoolExecutor(1) as pool:
        first = prometheus.query_requests()
        future = pool.submit(timed, lambda: conn.execute("SELECT count(*) " + LONG_QUERY).fetchall())
        prometheus.wait_for_requests(first + 5)
        prometheus.signal(signal.SIGSTOP)
        paused_at = time.monotonic()
        try:
            error, _ = future.result(timeout=30)
            waited = time.monotonic() - paused_at
        finally:
            prometheus.signal(signal.SIGCONT)
    assert isinstance(error, sqlite3.OperationalError), error
    assert re.fullmatch(r"prom_samples: cannot reach http://127\.0\.0\.1:\d+/api/v1/query: timed out after "
                        r"500 ms \(setting timeout_ms\) \(after 2 attempts\)", str(error)), str(error)
    assert waited < 2 * 0.5 + 0.1 + 1.0, f"took {waited:.2f} s to fail"  # 2 attempts + 1 backoff + slack
    assert conn.execute("SELECT count(*) " + LONG_QUERY).fetchone()[0] == LONG_POINTS


def test_prometheus_killed_mid_fetch_fails_fast(prometheus):
    """SIGKILL mid-fetch: the open request breaks, the retries find nothing listening; a clear
    error after three attempts, long before timeout_ms."""
    conn = connect(prometheus.url, timeout_ms=10000, retries=2, samples_chunk_seconds=60)
    with ThreadPoolExecutor(1) as pool:
        first = prometheus.query_requests()
        future = pool.submit(timed, lambda: conn.execute("SELECT count(*) " + LONG_QUERY).fetchall())
        prometheus.wait_for_requests(first + 5)
        prometheus.kill()
        error, _ = future.result(timeout=30)
    assert isinstance(error, sqlite3.OperationalError), error
    message = str(error)
    assert message.startswith(f"prom_samples: cannot reach {prometheus.url}/api/v1/query: "), message
    assert message.endswith("(after 3 attempts)"), message


def test_prometheus_restarted_mid_fetch_loses_and_doubles_nothing(prometheus):
    """Prometheus frozen, killed and started again on the same port and storage while a
    917-chunk fetch runs: retries carry the fetch over the outage, and the rows are exactly
    those of a clean fetch: no point missing, none twice."""
    rows_query = "SELECT metric, labels, ts, value " + LONG_QUERY
    clean_conn = connect(prometheus.url, samples_chunk_seconds=60)
    clean = clean_conn.execute(rows_query).fetchall()
    chunks = http_stats(clean_conn)["requests"]
    assert len(clean) == LONG_POINTS and chunks > 900

    conn = connect(prometheus.url, samples_chunk_seconds=60, retries=8, timeout_ms=3000)
    with ThreadPoolExecutor(1) as pool:
        first = prometheus.query_requests()
        future = pool.submit(timed, lambda: conn.execute(rows_query).fetchall())
        prometheus.wait_for_requests(first + 20)
        prometheus.signal(signal.SIGSTOP)  # freeze mid-request, then die there
        prometheus.kill()
        down_at = time.monotonic()
        prometheus.restart()
        outage = time.monotonic() - down_at
        rows, elapsed = future.result(timeout=120)
    assert isinstance(rows, list), rows
    requests = http_stats(conn)["requests"]
    assert requests > chunks, "no request failed: the restart did not happen mid-fetch"
    assert len(rows) == len(clean) and sorted(rows) == sorted(clean)
    assert len(set(rows)) == len(rows)
    print(f"restart: outage {outage:.2f} s, fetch {elapsed:.2f} s, {requests - chunks} requests retried, "
          f"{len(rows)} of {len(clean)} points")


# ---- PromQL that pp_refresh builds from event labels -------------------------------------------

# Series for the selector test: (label name, label value, Hostname, gpu). Index = value // 1000.
SELECTOR_SERIES = [
    ("UUID", "GPU-plain", "node-a", "0"),                       # 0 control
    ("UUID", "GPU-a.b", "node-a", "1"),                         # 1 regex dot
    ("UUID", "GPU-aXb", "node-a", "1"),                         # 2 decoy for 1
    ("UUID", "GPU-(x|y)", "node-a", "2"),                       # 3 alternation
    ("UUID", "GPU-x", "node-a", "2"),                           # 4 decoy for 3
    ("UUID", 'GPU-"q"\\b{1}}', "node-a", "3"),                  # 5 quote, backslash, braces
    ("UUID", 'GPU-"q"b', "node-a", "3"),                        # 6 decoy for 5
    ("UUID", "GPU-[0-9]+*?^$\\d", "node-a", "4"),               # 7 every metacharacter
    ("UUID", "GPU-5", "node-a", "4"),                           # 8 decoy for 7
    ("UUID", "GPU-[0-9]+*?^$\\d-and-more", "node-a", "4"),      # 9 decoy: the match is anchored
    ("UUID", "GPU-ü\n€", "node-a", "5"),                         # 10 newline, non-ASCII
    ("uuid", "GPU-lower.(case)", "node-b", "0"),                # 11 older exporters' label
    ("uuid", "GPU-lowerX(case)", "node-b", "0"),                # 12 decoy for 11
    ("serial", "1", 'node{"x"}.*\\', "0"),                      # 13 no UUID: found by Hostname + gpu
    ("serial", "2", 'node{"x"}abc\\', "0"),                     # 14 decoy for 13
    ("UUID", "GPU-named-other", "node-c", "0"),                 # 15 another GPU: found by Hostname + gpu
                                                                #    for 'cuda:0' only
]
# Event GPU -> the series index its samples must come from.
SELECTOR_EVENTS = {"GPU-plain": 0, "GPU-a.b": 1, "GPU-(x|y)": 3, 'GPU-"q"\\b{1}}': 5,
                   "GPU-[0-9]+*?^$\\d": 7, "GPU-ü\n€": 10, "GPU-lower.(case)": 11, "GPU-host-only": 13,
                   "cuda:0": 15}
# Events whose GPU UUID no series carries, at the host and index of a series that names another
# GPU (the events' index may be CUDA's): they get no samples.
UNMATCHED_GPU, UNMATCHED_INDEX = "GPU-not-scraped", 15
# A GPU that replaced GPU-host-only at its host and index: its events start 35 s later, and the
# samples of series 13 nearer its events than GPU-host-only's are its own.
SWAPPED_GPU, SWAPPED_DELAY_S = "GPU-host-swapped", 35


def openmetrics_value(text):
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector_lines(t0, openmetrics):
    """The series as OpenMetrics (promtool: seconds) or exposition lines (VictoriaMetrics: ms)."""
    lines = []
    for index, (label, value, host, gpu) in enumerate(SELECTOR_SERIES):
        labels = f'{label}="{openmetrics_value(value)}",Hostname="{openmetrics_value(host)}",gpu="{gpu}"'
        lines += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {index * 1000 + i} "
                  f"{f'{t0 + i}.000' if openmetrics else (t0 + i) * 1000}\n" for i in range(60)]
    return (["# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"] + lines + ["# EOF\n"]) if openmetrics else lines


@pytest.mark.parametrize("server", ["prometheus", "victoria"])
def test_selectors_from_event_labels_match_exactly_their_series(tmp_path, server):
    t0 = dcgm_data.T0
    if server == "prometheus":
        (tmp_path / "data.om").write_text("".join(selector_lines(t0, openmetrics=True)))
        process, url = prometheus_server.start_backfilled(tmp_path / "data.om", tmp_path)
    else:
        process, url = victoria.start(tmp_path, selector_lines(t0, openmetrics=False))
    try:
        events = tmp_path / "events.jsonl"
        with open(events, "w") as f:
            f.write(json.dumps({"record": "job", "job_id": "sel", "parameters": 7}) + "\n")
            for uuid, index in list(SELECTOR_EVENTS.items()) + [(SWAPPED_GPU, 13), (UNMATCHED_GPU, UNMATCHED_INDEX)]:
                host = SELECTOR_SERIES[index][2]
                gpu = int(SELECTOR_SERIES[index][3])
                for k in range(4):
                    start = (t0 + 5 + 3 * k + (SWAPPED_DELAY_S if uuid == SWAPPED_GPU else 0)) * 10**9
                    f.write(json.dumps({
                        "job_id": "sel", "host_name": host, "ip": None, "pod": None, "namespace": None,
                        "gpu_uuid": uuid, "gpu": gpu, "rank": 0, "local_rank": 0, "world_size": 1,
                        "pid": 1, "epoch": 0, "batch": k, "layer": "l", "layer_type": "Linear",
                        "forward": True, "t_start_ns": start, "t_end_ns": start + 10**9, "cpu_num": 1.0}) + "\n")
        conn = connect(url)
        summary = conn.execute("SELECT events_added, http_requests FROM pp_refresh(?)", (str(events),)).fetchone()
        # One request per pass: UUID, then uuid, then Hostname + gpu, then hostname + gpu (for the
        # GPU no series names); each a valid selector.
        assert [int(x) for x in summary] == [4 * (len(SELECTOR_EVENTS) + 2), 4]
        got = {uuid: (count, low, high) for uuid, count, low, high in conn.execute(
            "SELECT uuid, count(*), min(CAST(value AS INTEGER) / 1000), max(CAST(value AS INTEGER) / 1000) "
            "FROM pp_samples GROUP BY uuid")}
        assert set(got) == set(SELECTOR_EVENTS) | {SWAPPED_GPU}, got
        control = got["GPU-plain"][0]
        assert control > 20
        for uuid, index in SELECTOR_EVENTS.items():
            if uuid != "GPU-host-only":
                assert got[uuid] == (control, index, index), f"{uuid!r}: {got[uuid]}"
        # Series 13 split between the two GPUs at its index, halfway between their events: the
        # first's last ends at T0 + 15 s, the second's first starts at T0 + 40 s.
        first_gpu = conn.execute("SELECT min(ts_ms), max(ts_ms) FROM pp_samples WHERE uuid = 'GPU-host-only'").fetchone()
        second_gpu = conn.execute("SELECT min(ts_ms), max(ts_ms) FROM pp_samples WHERE uuid = ?", (SWAPPED_GPU,)).fetchone()
        assert first_gpu[1] <= (t0 + 27.5) * 1000 < second_gpu[0], (first_gpu, second_gpu)
        assert got["GPU-host-only"][1:] == got[SWAPPED_GPU][1:] == (13, 13)
        assert got["GPU-host-only"][0] + got[SWAPPED_GPU][0] >= control
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
