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
