"""Helpers shared by the tests: running commands under the launcher and reading what it wrote."""
import json
import os
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
