"""--seconds bounds a run by time, so the main job takes about a minute on any machine."""
import subprocess
import sys
import time


def test_seconds_stops_a_run_that_would_take_much_longer():
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "precisionprobe.workloads.dlrm", "--iterations", "100000",
         "--batch-size", "8", "--rows-per-table", "100", "--mlp-bot", "16-8", "--mlp-top", "8-1",
         "--threads", "1", "--quiet", "--seconds", "2"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    steps = int(result.stdout.split("dlrm: ")[1].split(" steps")[0])
    assert 0 < steps < 100000
    assert time.monotonic() - started < 60
