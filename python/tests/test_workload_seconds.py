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


def test_a_billion_iterations_cost_no_memory_up_front():
    # Run for a time, not a step count: the batches repeat; no list of a billion is built.
    for workload in ("dlrm", "resnext", "gpt2"):
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-c",
             "import resource, runpy, sys; sys.argv = sys.argv[1:]\n"
             "try:\n    runpy.run_module(sys.argv[0], run_name='__main__')\n"
             "finally:\n    print('maxrss_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
             f"precisionprobe.workloads.{workload}", "--iterations", "1000000000", "--threads", "1",
             "--quiet", "--seconds", "1"],
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert time.monotonic() - started < 30, workload
        maxrss_mib = int(result.stdout.split("maxrss_kib ")[1]) / 1024
        assert maxrss_mib < 1024, (workload, maxrss_mib)
