"""Helpers shared by the tests: running commands under the launcher and reading what it wrote."""
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Children get this precisionprobe on PYTHONPATH, and no PRECISIONPROBE_ATTACH: tests decide
# themselves when the probe attaches.
from precisionprobe.harness.processes import child_environment
from precisionprobe._event_reader import read_event_file

ROOT = Path(__file__).resolve().parents[2]
SMALL_DLRM = ["--batch-size", "16", "--mlp-bot", "32-16-8", "--mlp-top", "64-32-16-1",
              "--rows-per-table", "100", "--quiet"]


def extension_path():
    """$PP_EXTENSION (CTest sets it), else build/precisionprobe; skips the test if not built."""
    path = os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe"))
    if not Path(path + ".so").exists() and not Path(path).exists():
        pytest.skip(f"extension not built at {path} (set PP_EXTENSION)")
    return path


def stamped_windows_connection(url):
    """An in-memory database with the extension and its views, reading Prometheus at url, for
    samples that are each the average of the window ending at its stored time (sample_offset_ms
    0, every metric a window's average): what the tests' own recordings store."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('prometheus_url', ?), pp_config('sample_offset_ms', 0)", (url,))
    conn.execute("UPDATE pp_metrics SET kind = 'window'")
    return conn


def run_cli(*args, check=True, timeout=300):
    """`python3 -m precisionprobe ARGS...` with this extension, output captured; asserts that it
    succeeded unless check is False."""
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
    result = subprocess.run([sys.executable, "-m", "precisionprobe", *map(str, args)], env=env, text=True,
                            capture_output=True, timeout=timeout)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def wait_for(condition, timeout=60.0, what="condition"):
    """condition()'s first true value, polled every 10 ms; AssertionError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def run_launched(out_dir, command, job_id="test-job", timeout=300, env=None, **kwargs):
    """`python3 -m precisionprobe run --out OUT --job-id ID -- COMMAND`, output captured."""
    return subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(out_dir),
                           "--job-id", job_id, "--", *command],
                          env=env or child_environment(), capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def read_records(out_dir):
    """(headers, events) from every event file in out_dir (either format: the hook client's
    default is compact), each in file order, as the dicts that JSON Lines would give."""
    headers, events = [], []
    for path in sorted(Path(out_dir).glob("*.jsonl")):
        file_headers, file_events = read_event_file(path)
        headers += file_headers
        events += file_events
    return headers, events


@pytest.fixture
def fresh_probe():
    """Makes sure no probe is left attached by a failing test."""
    import precisionprobe
    yield precisionprobe
    precisionprobe.detach()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Two 2-minute recordings an hour apart in one Prometheus: A with the dlrm profile, B with
    every layer's activity above idle halved. The analyze tests (test_analyze*.py, one pytest
    session) share them; skips where Debian's prometheus package is not installed."""
    import shutil
    from precisionprobe.emulator import offline
    from precisionprobe.emulator.colocation import scaled_profile
    from precisionprobe.emulator.profile import Profile
    from precisionprobe.harness import prometheus, processes
    if shutil.which("promtool") is None or shutil.which("prometheus") is None:
        pytest.skip("needs Debian's prometheus package (promtool, prometheus)")
    work = tmp_path_factory.mktemp("analyze")
    profile = Profile.named("dlrm")
    paths = {}
    for name, start, prof in (("a", offline.DEFAULT_START_S, profile),
                              ("b", offline.DEFAULT_START_S + 3600, scaled_profile(profile, 0.5))):
        rec = offline.record(120, 100, 0.005, 7, prof, start_s=start)
        paths[name] = offline.write(rec, work / name)
        prometheus.backfill(paths[name]["openmetrics"], work / prometheus.TSDB_DIR)
    process, url = prometheus.serve(work)
    try:
        yield work, paths, url
    finally:
        processes.stop(process)


@pytest.fixture(scope="session")
def report_a(runs):
    """(analyze's JSON report of run A, refreshed into a.db with --final; A's true values)."""
    work, paths, url = runs
    result = run_cli("analyze", work / "a" / "events", "--prometheus", url, "--final", "--format", "json",
                     "--db", work / "a.db")
    return json.loads(result.stdout), json.loads(Path(paths["a"]["truth"]).read_text())
