"""Event files that never end, never open, or hold one enormous line, read in a real process.

What the engine does (docs/testing.md, "Hostile files"):
  * a FIFO is refused at once by layer_events, layer_jobs and pp_refresh, writer or not: they
    read regular files only (open with O_NONBLOCK, then fstat);
  * a long read (here a sparse 1 TiB file of zero bytes: one line that never ends) stops when
    another thread calls Connection.interrupt(), with SQLite's "interrupted", within seconds;
    an interrupted pp_refresh commits nothing, and the next one undoes its changes first;
  * a 200 MB line is passed over with a warning, and the process's peak memory grows by far
    less than the line.

CTest runs this directory as the test `faults` (PP_EXTENSION names the built extension).
"""
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

EXTENSION = os.environ.get("PP_EXTENSION", str(Path(__file__).resolve().parents[2] / "build" / "precisionprobe"))
T0 = 1714000000000000000


def connect():
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    return conn


def cpu_events(count, first=0):
    return "".join(json.dumps({
        "job_id": "job1", "host_name": "node-1", "ip": "10.0.0.7", "pod": None, "namespace": None,
        "gpu_uuid": "cpu", "gpu": None, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 42, "epoch": 0,
        "batch": i, "layer": "fc", "layer_type": "Linear", "forward": True,
        "t_start_ns": T0 + i * 1000000, "t_end_ns": T0 + i * 1000000 + 250000, "cpu_num": 8.0}) + "\n"
        for i in range(first, first + count))


QUERIES = {
    "layer_events": "SELECT count(*) FROM layer_events(?)",
    "layer_jobs": "SELECT count(*) FROM layer_jobs(?)",
    "pp_refresh": "SELECT events_added FROM pp_refresh(?)",
}


@pytest.mark.parametrize("function", sorted(QUERIES))
def test_fifo_is_refused_at_once(tmp_path, function):
    """No writer would block open(2) for good, a writer that never writes would block read(2):
    both are refused before either, with the function, argument and path in the error."""
    fifo = tmp_path / "rank0.jsonl"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # holds the FIFO open, as a writer that never writes
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError) as error:
            connect().execute(QUERIES[function], (str(fifo),)).fetchone()
        assert str(error.value) == f"{function}: argument 'path' names a FIFO, not a regular file: '{fifo}'"
        assert time.monotonic() - started < 5
    finally:
        os.close(writer)


def interrupt_after(conn, seconds):
    timer = threading.Timer(seconds, conn.interrupt)
    timer.start()
    return timer


@pytest.mark.parametrize("function", sorted(QUERIES))
def test_interrupt_stops_a_read_that_would_not_end(tmp_path, function):
    """A sparse 1 TiB file of zero bytes: one line that would take minutes to pass over."""
    endless = tmp_path / "job1" / "rank0.jsonl"
    endless.parent.mkdir()
    with open(endless, "wb") as f:
        f.truncate(1 << 40)
    conn = connect()
    started = time.monotonic()
    timer = interrupt_after(conn, 0.5)
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute(QUERIES[function], (str(tmp_path / "job1"),)).fetchone()
    timer.join()
    elapsed = time.monotonic() - started
    assert "interrupted" in str(error.value)
    assert elapsed < 10, f"{function} took {elapsed:.1f} s to notice the interrupt"


def test_interrupted_refresh_commits_nothing_and_the_next_one_undoes_it(tmp_path):
    """pp_refresh imports a good file, then meets an endless one: the interrupt leaves nothing
    committed, and the next pp_refresh rolls the interrupted one's changes back before its own."""
    job = tmp_path / "job1"
    job.mkdir()
    (job / "a.jsonl").write_text(cpu_events(5))
    with open(job / "b.jsonl", "wb") as f:
        f.truncate(1 << 40)
    database = tmp_path / "attribution.db"
    conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    timer = interrupt_after(conn, 0.5)
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT events_added FROM pp_refresh(?)", (str(job),)).fetchone()
    timer.join()
    assert "pp_refresh: interrupted; nothing was committed" in str(error.value)
    assert conn.in_transaction  # the refresh's tables, pending: SQLite refused to roll them back
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'pp_events'").fetchone()[0] == 1
    other = sqlite3.connect(database)  # what another reader sees: nothing of the refresh
    assert other.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'pp_events'").fetchone()[0] == 0
    other.close()
    (job / "b.jsonl").unlink()
    assert conn.execute("SELECT events_added FROM pp_refresh(?)", (str(job),)).fetchone() == (5,)
    warnings = json.loads(conn.execute("SELECT pp_last_warnings()").fetchone()[0])
    assert "pp_refresh: the changes of the refresh interrupted before were rolled back" in warnings
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM pp_events").fetchone() == (5,)


LONG_LINE_SCRIPT = r"""
import json, sqlite3, sys
def kib(field):
    status = open("/proc/self/status").read()
    return int(status.split(field + ":")[1].split()[0])
conn = sqlite3.connect(":memory:")
conn.enable_load_extension(True)
conn.load_extension(sys.argv[1])
before = kib("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
rows = conn.execute("SELECT count(*) FROM layer_events(?)", (sys.argv[2],)).fetchone()[0]
warnings = json.loads(conn.execute("SELECT pp_last_warnings()").fetchone()[0])
print(json.dumps({"rows": rows, "warnings": warnings, "kib": kib("VmHWM") - before}))
"""


def test_a_200_mb_line_is_passed_over_in_bounded_memory(tmp_path):
    path = tmp_path / "rank0.jsonl"
    with open(path, "w") as f:
        f.write(cpu_events(2))
        f.write("x" * (200 << 20) + "\n")
        f.write(cpu_events(1, first=2))
    out = subprocess.run([sys.executable, "-c", LONG_LINE_SCRIPT, EXTENSION, str(path)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    result = json.loads(out)
    assert result["rows"] == 3
    assert result["warnings"] == [
        f"layer_events: skipped line 3 of {path}: {200 << 20} bytes, longer than the 1048576 a line may have"]
    grown = result["kib"] * 1024
    print(f"a 200 MB line: peak memory grew {grown / 1e6:.1f} MB")
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # test.sh's asan stage: ASan's shadow memory and quarantine say nothing of ours
    assert grown < 16 << 20, f"peak memory grew {grown / 1e6:.0f} MB for a 200 MB line"
