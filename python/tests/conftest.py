"""Helpers shared by the tests: running commands under the launcher and reading what it wrote."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]  # holds the precisionprobe package
SMALL_DLRM = ["--batch-size", "16", "--mlp-bot", "32-16-8", "--mlp-top", "64-32-16-1",
              "--rows-per-table", "100", "--quiet"]


def child_environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYTHON_DIR), env.get("PYTHONPATH")) if p)
    env.pop("PRECISIONPROBE_ATTACH", None)  # tests decide themselves when the probe attaches
    return env


def run_launched(out_dir, command, job_id="test-job", timeout=300, **kwargs):
    """`python3 -m precisionprobe run --out OUT --job-id ID -- COMMAND`, output captured."""
    return subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(out_dir),
                           "--job-id", job_id, "--", *command],
                          env=child_environment(), capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def read_records(out_dir):
    """(headers, events) from every .jsonl file in out_dir, each in file order."""
    headers, events = [], []
    for path in sorted(Path(out_dir).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            (headers if record.get("record") == "job" else events).append(record)
    return headers, events


@pytest.fixture
def fresh_probe():
    """Makes sure no probe is left attached by a failing test."""
    import precisionprobe
    yield precisionprobe
    precisionprobe.detach()
