"""`analyze --final` right after a job ended, against a real Prometheus whose samples of the job's
last seconds arrive late, as on a cluster (dcgm-exporter serves a window after it ends, and
Prometheus stores it at its next scrape): the final refresh waits for them, up to --wait-seconds
after the job's last event, and never for a run that ended longer ago than that.

The exporter here stamps each sample with the end of its window (explicit timestamps) and serves
a window only LATENCY_S after it ended, so that the samples of a job's last seconds are certain
to come after the command started, and then certain to come."""
import json
import re
import shutil
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import extension_path, run_cli as precisionprobe, wait_for
from precisionprobe.emulator.profile import METRICS
from precisionprobe.harness import processes, prometheus

pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus")

WINDOW_MS = 500
LATENCY_S = 3.0  # after its window's end; below the bounds the tests wait
LATE = "GPU-1a7e0000-0000-4000-8000-000000000000"     # served LATENCY_S late: the samples come
STOPPED = "GPU-5709be00-0000-4000-8000-000000000000"  # served LATENCY_S late until frozen, then never
OLD = "GPU-01d00000-0000-4000-8000-000000000000"      # served 45 s late: its recent events wait for good
PAST_LAST_SAMPLE = "lie past the last DCGM sample of their GPU"


class Exporter:
    """Serves one sample per metric and GPU: that of the newest window its GPU's lag lets out
    (or the window a GPU was frozen at), stamped with the window's end."""

    def __init__(self):
        self.lag_s = {LATE: LATENCY_S, STOPPED: LATENCY_S, OLD: 45.0}
        self.frozen_ms = {}
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = exporter.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def freeze(self, uuid):
        """From now on, serves the GPU's newest window only (its exporter stopped); its end, ms."""
        self.frozen_ms[uuid] = int((time.time() - self.lag_s[uuid]) * 1000) // WINDOW_MS * WINDOW_MS
        return self.frozen_ms[uuid]

    def exposition(self):
        now = time.time()
        lines = []
        for index, (uuid, lag) in enumerate(self.lag_s.items()):
            end_ms = self.frozen_ms.get(uuid, int((now - lag) * 1000) // WINDOW_MS * WINDOW_MS)
            for metric in METRICS:
                value = (end_ms // WINDOW_MS * 7) % 101 if metric.endswith("GPU_UTIL") else 0.5
                lines.append(f'{metric}{{gpu="{index}",UUID="{uuid}",Hostname="node-a"}} {value} {end_ms}')
        return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    work = tmp_path_factory.mktemp("final-wait")
    exporter = Exporter()
    process, url = prometheus.scrape([exporter.server.server_address[1]], work, interval_ms=250)
    try:
        for uuid in (LATE, STOPPED, OLD):
            wait_for(lambda: prometheus.newest_sample_ms(url, uuid), 30, f"the first sample of {uuid}")
        yield exporter, url, time.time()
    finally:
        processes.stop(process)
        exporter.server.shutdown()


def write_run(run_dir, job, uuid, first_s, last_s):
    """A job's event file: a 50 ms call every 100 ms on GPU uuid, from first_s to last_s (unix)."""
    run_dir.mkdir()
    lines = [json.dumps({"record": "job", "job_id": job, "params": 1000})]
    t = first_s
    while t + 0.05 <= last_s:
        lines.append(json.dumps({"job_id": job, "host_name": "node-a", "ip": "10.0.0.1", "pod": job, "namespace": "ml",
                                 "gpu_uuid": uuid, "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 1,
                                 "epoch": 0, "batch": 0, "layer": "fc", "layer_type": "Linear", "forward": True,
                                 "t_start_ns": int(t * 1e9), "t_end_ns": int((t + 0.05) * 1e9), "cpu_num": 1.0}))
        t += 0.1
    (run_dir / "events-node-a-1.jsonl").write_text("\n".join(lines) + "\n")
    return len(lines) - 1


def unfolded(database):
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    try:
        return conn.execute("SELECT count(*) FROM pp_events WHERE folded = 0").fetchone()[0]
    finally:
        conn.close()


def analyze(run_dir, url, *options):
    started = time.monotonic()
    result = precisionprobe("analyze", run_dir, "--prometheus", url, "--final", "--format", "json",
                            "--db", run_dir.parent / f"{run_dir.name}.db", *options, check=False)
    return result, time.monotonic() - started


def test_a_final_analyze_right_after_the_job_waits_for_its_last_samples(served, tmp_path):
    _, url, _ = served
    end = time.time() - 0.05
    events = write_run(tmp_path / "run", "fresh", LATE, end - 4, end)
    result, seconds = analyze(tmp_path / "run", url, "--wait-seconds", "10")
    assert result.returncode == 0, result.stderr
    assert "waiting up to " in result.stderr and "for Prometheus to store the samples of the job's last" in result.stderr
    assert PAST_LAST_SAMPLE not in result.stderr, result.stderr
    assert unfolded(tmp_path / "run.db") == 0
    (job,) = json.loads(result.stdout)["jobs"]
    calls = sum(layer["calls"] or 0 for layer in job["layers"] if layer["name"] == "fc")
    assert calls == events
    assert seconds < 10, seconds  # the samples came, some LATENCY_S after the job's end: not the whole bound


def test_samples_that_never_come_are_waited_for_up_to_the_bound_then_warned(served, tmp_path):
    exporter, url, scraped = served
    wait_for(lambda: time.time() > scraped + 4, 10, "4 s of the GPU's samples")
    last_ms = exporter.freeze(STOPPED)
    wait_for(lambda: prometheus.newest_sample_ms(url, STOPPED) == last_ms, 10, "the stopped GPU's last sample")
    end = time.time() - 0.05
    write_run(tmp_path / "run", "stopped", STOPPED, last_ms / 1000 - 3, end)
    result, seconds = analyze(tmp_path / "run", url, "--wait-seconds", "3")
    assert result.returncode == 0, result.stderr
    # (up to 3 s after the job's end, which the command's start and first refresh took some of)
    assert re.search(r"waiting up to [1-3] s for Prometheus", result.stderr), result.stderr
    assert result.stderr.count(PAST_LAST_SAMPLE) == 1, result.stderr
    assert unfolded(tmp_path / "run.db") > 0
    assert 2.5 < seconds < 15, seconds


def test_a_run_that_ended_longer_ago_than_the_bound_is_not_waited_for(served, tmp_path):
    _, url, _ = served
    end = time.time() - 40  # past its GPU's last sample (45 s old), for good
    write_run(tmp_path / "run", "old", OLD, end - 15, end)
    result, seconds = analyze(tmp_path / "run", url)  # the default bound, 20 s
    assert result.returncode == 0, result.stderr
    assert "waiting up to" not in result.stderr and PAST_LAST_SAMPLE in result.stderr, result.stderr
    assert seconds < 10, seconds


@pytest.mark.parametrize("options, error", [
    (["--final", "--wait-seconds", "-1"], "--wait-seconds: must be 0 or more and at most 3600 (an hour), got -1"),
    (["--final", "--wait-seconds", "nan"], "--wait-seconds: must be 0 or more and at most 3600 (an hour), got nan"),
    (["--final", "--wait-seconds", "4000"], "--wait-seconds: must be 0 or more and at most 3600 (an hour), got 4000"),
    (["--wait-seconds", "5"], "--wait-seconds: waits for the samples of a --final refresh, so it takes --final"),
    (["--final", "--emulate", "dlrm", "--wait-seconds", "5"],
     "--wait-seconds: waits for the samples of a --final refresh, so it takes --final and not --emulate (the emulated "
     "samples are all there)"),
])
@pytest.mark.parametrize("command", ["analyze", "export"])
def test_bad_wait_seconds_are_refused_naming_the_option(tmp_path, command, options, error):
    (tmp_path / "run").mkdir()
    output = ["--openmetrics", str(tmp_path / "out.prom")] if command == "export" else []
    result = precisionprobe(command, tmp_path / "run", *output, *options, check=False)
    assert result.returncode == 1 and result.stderr.strip() == f"python3 -m precisionprobe {command}: {error}", \
        result.stderr
    assert list((tmp_path / "run").iterdir()) == [] and not (tmp_path / "out.prom").exists()


def test_a_word_for_wait_seconds_is_refused_by_the_parser(tmp_path):
    result = precisionprobe("analyze", tmp_path, "--final", "--wait-seconds", "soon", check=False)
    assert result.returncode == 2 and "argument --wait-seconds: invalid float value: 'soon'" in result.stderr
