"""examples/scheduler.py classifies jobs and pairs them as its docstring says, on a database whose
answer is known, and docs/scheduler.md shows the output of the notebook's run verbatim.

The database: three jobs on three GPUs, each one layer call covering ten 1 s sample windows of
constant counters, folded by pp_refresh from events and samples inserted directly (no server),
each stamped with the end of its window, as the refresh is told (sample_offset_ms 0, and every
metric a window average in pp_metrics):
  mem   DRAM 0.70, FP32 0.10, util 50%, SM 0.40, 8000 MiB   -> memory-bound
  cmp   DRAM 0.20, FP32 0.70, util 40%, SM 0.50, 10000 MiB  -> compute-bound; fits with mem
  busy  DRAM 0.30, FP32 0.60, util 90%, SM 0.90, 20000 MiB  -> compute-bound; too busy for mem

  PP_EXTENSION=build/precisionprobe python3 -m pytest -q tests/docs/test_scheduler.py
"""
import hashlib
import os
import sqlite3
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe"))
SCHEDULER = ROOT / "examples" / "scheduler.py"
T0 = 1600000000
JOBS = {  # job: (util, fb MiB, dram, fp32, sm active, sm occupancy)
    "mem": (50, 8000, 0.70, 0.10, 0.40, 0.30),
    "cmp": (40, 10000, 0.20, 0.70, 0.50, 0.40),
    "busy": (90, 20000, 0.30, 0.60, 0.90, 0.60),
}
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY"]


def new_database(work):
    """An empty results database in `work` with the extension loaded, samples taken as stored at
    their windows' ends (every metric a window average): the tests insert events and samples
    directly, and pp_refresh(NULL, 1) folds them without reading files or fetching."""
    path = work / "jobs.db"
    conn = sqlite3.connect(path)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    # Nothing here needs a server; a request would fail loudly instead of reaching one.
    conn.execute("SELECT pp_config('prometheus_url', 'http://no-such-host.invalid')")
    conn.execute("SELECT pp_config('retries', 0)")
    conn.execute("SELECT pp_install_views()")
    conn.execute("SELECT pp_config('sample_offset_ms', 0)")
    conn.execute("UPDATE pp_metrics SET kind = 'window'")
    return path, conn


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    path, conn = new_database(tmp_path_factory.mktemp("scheduler"))
    for g, (job, values) in enumerate(JOBS.items()):
        uuid = f"GPU-{g:08d}-0000-4000-8000-000000000000"
        start_ns, end_ns = T0 * 10**9, (T0 + 10) * 10**9
        conn.execute(
            "INSERT INTO pp_events(job_id, host_name, gpu_uuid, gpu, layer, layer_type, forward, t_start_ns, "
            "t_end_ns, t_start, t_end, cpu_num, source_file, line) VALUES (?, 'node', ?, ?, 'fc', 'Linear', 1, "
            "?, ?, ?, ?, 4.0, 'test', ?)", (job, uuid, g, start_ns, end_ns, start_ns / 1e9, end_ns / 1e9, g + 1))
        conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                         [(uuid, metric, (T0 + i) * 1000, value)
                          for i in range(1, 12) for metric, value in zip(METRICS, values)])
    conn.execute("SELECT * FROM pp_refresh(NULL, 1)").fetchone()
    conn.commit()
    conn.close()
    return path


def run(database, *flags):
    result = subprocess.run([sys.executable, str(SCHEDULER), str(database), "--extension", EXTENSION, *flags],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_data_are_what_the_scheduler_will_read(database):
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    rows = {job: (round(util, 6), round(dram, 6), round(fp32, 6))
            for job, util, dram, fp32 in conn.execute("SELECT job_id, gpu_util, dram_active, fp32_active FROM job_overview")}
    assert rows == {job: (v[0], v[2], v[3]) for job, v in JOBS.items()}


def test_classifies_and_pairs(database):
    out = run(database)
    lines = {line.split()[0]: line.split()[1] for line in out.splitlines()
             if line.split() and line.split()[0] in JOBS and line.split()[1].endswith("-bound")}
    assert lines == {"mem": "memory-bound", "cmp": "compute-bound", "busy": "compute-bound"}, out
    # mem + cmp: util 0.90, dram 0.90, fp32 0.80, sm 0.90, 17.6 GiB; mem + busy: util 1.40, sm 1.30.
    assert "mem + cmp: util 0.90, dram 0.90, fp32 0.80, sm 0.90, memory 17.6 GiB -> fits" in out, out
    assert "mem + busy: util 1.40, dram 1.00, fp32 0.70, sm 1.30, memory 27.3 GiB -> over: util, sm" in out, out
    assert "share one GPU: mem (memory-bound) with cmp (compute-bound)" in out, out
    assert "own GPU: busy" in out, out
    # Every layer's own DRAM and FP32 are identified, so the evidence columns are whole.
    assert [line.split()[-2:] for line in out.splitlines() if line.startswith("mem ")] == [["100%", "0%"]], out


def test_limits_change_the_proposal(database):
    out = run(database, "--gpu-memory-gib", "16")
    assert "mem + cmp: util 0.90, dram 0.90, fp32 0.80, sm 0.90, memory 17.6 GiB -> over: memory 17.6 GiB" in out, out
    assert "share one GPU" not in out and "own GPU: mem" in out, out
    out = run(database, "--max-load", "1.5")
    assert "mem + busy: util 1.40, dram 1.00, fp32 0.70, sm 1.30, memory 27.3 GiB -> fits" in out, out
    # Greedy, lowest peak load first: mem goes with cmp (0.90), busy stays alone.
    assert "share one GPU: mem (memory-bound) with cmp (compute-bound)" in out and "own GPU: busy" in out, out


def test_reads_without_writing(database):
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    run(database)
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_a_path_with_uri_characters_is_the_file_it_names(database, tmp_path):
    """'#', '?' and '%' in a file name are part of the name, not of a URI: the file is read, and
    nothing is created beside it."""
    odd = tmp_path / "runs #1 ?50%.db"
    shutil.copy(database, odd)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert "share one GPU: mem (memory-bound) with cmp (compute-bound)" in run(odd)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_the_doc_shows_the_sql_the_script_runs():
    import importlib.util
    import re
    spec = importlib.util.spec_from_file_location("scheduler", SCHEDULER)  # a script, not a package
    scheduler = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scheduler)
    shown = [" ".join(block.split()) for block in re.findall(r"```sql\n(.*?)```", (ROOT / "docs" / "scheduler.md").read_text(), re.S)]
    for query in (scheduler.CLASSIFY, scheduler.MEASURED, scheduler.PAIRS):
        assert " ".join(query.split()) + ";" in shown, "docs/scheduler.md shows other SQL than examples/scheduler.py runs"


def test_the_doc_shows_the_notebook_run_verbatim():
    shown = (ROOT / "docs" / "scheduler.md").read_text()
    recorded = (ROOT / "docs" / "notebook" / "scheduler.txt").read_text()
    assert recorded.strip() and recorded.strip() in shown, \
        "docs/scheduler.md must show docs/notebook/scheduler.txt (the notebook's run) verbatim"


# Two jobs that first ran alone (GPUs 0 and 1, 10 s each, as `mem` and `cmp` above) and then
# took turns on GPU 2 for 10 s (0.5 s each, alternating, mem first), where the GPU measured
# util 100%, DRAM 0.50, FP32 0.45, SM 0.80 and 20000 MiB: a pair already measured together.
TOGETHER = (100, 20000, 0.50, 0.45, 0.80, 0.60)


@pytest.fixture(scope="module")
def shared_database(tmp_path_factory):
    path, conn = new_database(tmp_path_factory.mktemp("scheduler-shared"))
    line = 0

    def event(job, uuid, gpu, start_s, end_s):
        nonlocal line
        line += 1
        conn.execute(
            "INSERT INTO pp_events(job_id, host_name, gpu_uuid, gpu, layer, layer_type, forward, t_start_ns, "
            "t_end_ns, t_start, t_end, cpu_num, source_file, line) VALUES (?, 'node', ?, ?, 'fc', 'Linear', 1, "
            "?, ?, ?, ?, 4.0, 'test', ?)",
            (job, uuid, gpu, int(start_s * 1e9), int(end_s * 1e9), start_s, end_s, line))

    def samples(uuid, first_s, values):
        conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                         [(uuid, metric, (first_s + i) * 1000, value)
                          for i in range(1, 12) for metric, value in zip(METRICS, values)])

    for g, job in enumerate(("mem", "cmp")):
        uuid = f"GPU-{g:08d}-0000-4000-8000-000000000000"
        event(job, uuid, g, T0, T0 + 10)
        samples(uuid, T0, JOBS[job])
    uuid = "GPU-00000002-0000-4000-8000-000000000000"
    for k in range(10):
        event("mem", uuid, 2, T0 + 20 + k, T0 + 20 + k + 0.5)
        event("cmp", uuid, 2, T0 + 20 + k + 0.5, T0 + 21 + k)
    samples(uuid, T0 + 20, TOGETHER)
    conn.execute("SELECT * FROM pp_refresh(NULL, 1)").fetchone()
    conn.commit()
    conn.close()
    return path


def test_a_pair_measured_together_is_judged_by_what_the_gpu_measured(shared_database):
    out = run(shared_database)
    # Both jobs are marked: their job-level means include the other's turns.
    assert [line.split()[:2] + line.split()[-3:] for line in out.splitlines() if line.startswith(("mem ", "cmp "))] \
        == [["cmp", "compute-bound", "(shared", "a", "GPU)"], ["mem", "memory-bound", "(shared", "a", "GPU)"]], out
    # The GPU's counters over the 9 s both were on it (cmp's first turn to mem's last); memory
    # 20000 MiB = 19.5 GiB.
    assert "  cmp + mem (9.0 s): util 1.00, dram 0.50, fp32 0.45, sm 0.80, memory 19.5 GiB" in out, out
    # Their job means would add up to less; the pair is judged by the measurement, and fits.
    assert ("  mem + cmp: util 1.00, dram 0.50, fp32 0.45, sm 0.80, memory 19.5 GiB (measured together, 9.0 s)"
            " -> fits") in out, out
    assert "share one GPU: mem (memory-bound) with cmp (compute-bound)" in out, out
    out = run(shared_database, "--max-load", "0.9")
    assert "(measured together, 9.0 s) -> over: util" in out and "share one GPU" not in out, out


def test_jobs_that_never_shared_are_not_marked(database):
    out = run(database)
    assert "shared a GPU" not in out and "Measured together" not in out and "measured together" not in out, out


def test_errors_are_one_line_not_tracebacks(tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t(x)")
    cases = [([str(tmp_path / "missing.db")], "no results database at"),
             ([str(plain), "--extension", str(tmp_path / "nowhere")], "cannot load the extension"),
             ([str(plain)], "is not a precisionprobe results database")]
    for arguments, message in cases:
        result = subprocess.run([sys.executable, str(SCHEDULER), *arguments, *([] if "--extension" in arguments
                                                                              else ["--extension", EXTENSION])],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("scheduler.py: ") and message in line


def test_a_python_that_cannot_load_extensions_is_named_with_the_fix(database):
    # pyenv's default build has no enable_load_extension; `examples/scheduler.py DB` runs the
    # first python3 on PATH, which may be one. Before, the error said to build the extension.
    without_loading = f"""
import runpy, sqlite3, sys
connect = sqlite3.connect
class WithoutLoading:
    def __init__(self, conn):
        self.execute = conn.execute
sqlite3.connect = lambda *args, **kwargs: WithoutLoading(connect(*args, **kwargs))
sys.argv = ["scheduler.py", {str(database)!r}, "--extension", {EXTENSION!r}]
runpy.run_path({str(SCHEDULER)!r}, run_name="__main__")
"""
    result = subprocess.run([sys.executable, "-c", without_loading], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"scheduler.py: this Python's sqlite3 module cannot load extensions ({sys.executable}): "
                             "run the scheduler with one whose sqlite3 can, such as Debian's /usr/bin/python3 "
                             "(docs/troubleshooting.md, Loading the extension)\n")


def test_a_reader_that_goes_away_is_no_traceback(database):
    # `scheduler.py DB | head -3`: before, the prints after head exited raised BrokenPipeError.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, str(SCHEDULER), str(database), "--extension", EXTENSION],
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert result.returncode == 1 and result.stderr == ""


def test_a_run_directory_is_read_through_its_results_database(database, tmp_path):
    # `precisionprobe analyze RUN_DIR` writes RUN_DIR/precisionprobe.db, and compare takes RUN_DIR;
    # before, the scheduler said "no results database at 'RUN_DIR'" with the database right there.
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(database, run_dir / "precisionprobe.db")
    assert run(run_dir) == run(database)
    result = subprocess.run([sys.executable, str(SCHEDULER), str(tmp_path), "--extension", EXTENSION],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stderr.strip() == (
        f"scheduler.py: no results database at '{tmp_path}': a directory without precisionprobe.db (make one "
        "with `precisionprobe analyze RUN_DIR` or pp_refresh)")


@pytest.mark.parametrize("flags", [["--max-load", "-1"], ["--max-load", "0"], ["--gpu-memory-gib", "nan"],
                                   ["--gpu-memory-gib", "inf"], ["--max-load", "one"]])
def test_a_limit_that_is_not_a_number_above_0_is_refused(database, flags):
    # Before, these ran and printed "fit: each load <= -1" or "memory <= nan GiB", pairing nothing.
    result = subprocess.run([sys.executable, str(SCHEDULER), str(database), "--extension", EXTENSION, *flags],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr and not result.stdout
    assert f"argument {flags[0]}: needs a" in result.stderr and "above 0" in result.stderr
