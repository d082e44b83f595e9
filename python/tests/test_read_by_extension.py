"""What the client writes, read back by the SQLite extension's layer_events table (src/events/)."""
import json
import os
import sqlite3
import sys

import pytest

from conftest import SMALL_DLRM, read_records, run_launched

EXTENSION = os.environ.get("PP_EXTENSION")


@pytest.fixture
def db():
    if not EXTENSION or not os.path.exists(EXTENSION + ".so"):
        pytest.skip("PP_EXTENSION names no built extension (CTest sets it to build/precisionprobe)")
    connection = sqlite3.connect(":memory:")
    connection.enable_load_extension(True)
    connection.load_extension(EXTENSION)
    try:
        connection.execute("SELECT * FROM layer_events('/') LIMIT 0")
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            pytest.skip(f"this build of the extension has no layer_events table: {error}")
    yield connection
    connection.close()


def test_every_event_line_is_a_row_and_the_header_is_skipped(tmp_path, db):
    result = run_launched(tmp_path, [sys.executable, "-m", "precisionprobe.workloads.dlrm",
                                     *SMALL_DLRM, "--iterations", "2"], job_id="sql-check")
    assert result.returncode == 0, result.stderr
    _, events = read_records(tmp_path)
    rows = db.execute("""
        SELECT layer, forward, batch, t_start_ns, t_end_ns, gpu_uuid, gpu, cpu_num
          FROM layer_events(?) WHERE job_id = 'sql-check' ORDER BY source_file, line""",
                      (str(tmp_path),)).fetchall()
    assert rows == [(e["layer"], int(e["forward"]), e["batch"], e["t_start_ns"], e["t_end_ns"],
                     e["gpu_uuid"], e["gpu"], e["cpu_num"]) for e in events]
    assert json.loads(db.execute("SELECT pp_last_warnings()").fetchone()[0]) == []


def test_a_command_line_argument_that_is_not_utf8_leaves_every_line_readable(tmp_path, db):
    # A data path in Latin-1 on the command line: Python gives its byte as a lone surrogate, which
    # the header wrote as JSON's "\udce9". No reader takes that for text: the header was skipped,
    # and with it every event of the (compact) file. The byte is written as the text \xe9.
    script = "import torch; torch.nn.Linear(2, 1)(torch.randn(1, 2)).sum().backward()"
    result = run_launched(tmp_path, [sys.executable, "-c", script, b"data/caf\xe9.csv"], job_id="latin-1")
    assert result.returncode == 0, result.stderr
    jobs = db.execute("SELECT job_id, command FROM layer_jobs(?)", (str(tmp_path),)).fetchall()
    assert [(job, json.loads(command)[-1]) for job, command in jobs] == [("latin-1", "data/caf\\xe9.csv")]
    assert db.execute("SELECT layer, forward FROM layer_events(?) ORDER BY line",
                      (str(tmp_path),)).fetchall() == [("Linear", 1), ("Linear", 0)]
    assert json.loads(db.execute("SELECT pp_last_warnings()").fetchone()[0]) == []
