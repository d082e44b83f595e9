"""`precisionprobe analyze` and its sibling commands on results databases that cannot be used as
given: a path that is a device, pipe or folder, a folder the user may not write, a Python that
cannot load extensions, a database of another application or of an earlier version. Each is one
clear line before anything is opened or written. And the reading commands on a results database
of conftest's `runs`: they change no byte of it, read one of an earlier version through an
upgraded copy, and refuse tables this version does not know."""
import json
import os
import shutil
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest

from conftest import ROOT, run_cli as precisionprobe
from precisionprobe.emulator import offline


def test_a_database_path_that_is_not_a_file_is_refused_before_sqlite_opens_it(tmp_path):
    """SQLite opened on a device fails with "disk I/O error" after making DEVICE-journal beside
    it (in /dev for /dev/null), and on a named pipe waits for a writer for ever: --db (and the
    others naming a database) must be a regular file or a new path, and nothing is made beside
    what is refused. The device is a private null device made here, never /dev/null."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "events-node-1.jsonl").write_text("{}\n")
    places = tmp_path / "places"
    places.mkdir()
    kinds = {"folder": "a directory", "pipe": "a named pipe", "device": "a character device"}
    (places / "folder").mkdir()
    os.mkfifo(places / "pipe")
    try:
        os.mknod(places / "device", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        del kinds["device"]  # (not root: the folder and the pipe are refused all the same)
    (places / "link").symlink_to("pipe")
    kinds["link"] = "a named pipe"
    before = sorted(os.listdir(places))
    fix = "give --db a results database file, or the path of a new one; nothing was written"
    for name, kind in kinds.items():
        db = places / name
        for command in (["analyze", run, "--prometheus", "http://127.0.0.1:1"], ["analyze", run, "--no-refresh"],
                        ["export", run, "--openmetrics", "-"], ["serve", run, "--port", "0"]):
            refused = precisionprobe(*command, "--db", db, check=False, timeout=30)
            assert refused.returncode == 1 and refused.stdout == "", refused.stderr
            assert refused.stderr.strip() == (f"python3 -m precisionprobe {command[0]}: --db: '{db}' is {kind}, not a "
                                              f"file: {fix}"), refused.stderr
        compared = precisionprobe("compare", db, run, check=False, timeout=30)
        assert name == "folder" or compared.stderr.strip() == (f"python3 -m precisionprobe compare: RUN_A: '{db}' is {kind}, not a file: "
                                           "give RUN_A a run directory or a results database file; nothing was "
                                           "written"), compared.stderr
        emulated = precisionprobe("analyze", run, "--emulate", "dlrm", "--emulate-out", db, check=False, timeout=30)
        assert name == "folder" or emulated.stderr.strip() == (
            f"python3 -m precisionprobe analyze: --emulate-out: '{db}' is {kind}, not a directory: give a folder (the "
            "emulated copy of the run is written there)"), emulated.stderr
        compared = precisionprobe("compare", run, run, "--db-a", db, check=False, timeout=30)
        assert f"compare: --db-a: '{db}' is {kind}, not a file: give --db-a a results database file" in compared.stderr
    (run / "precisionprobe.db").symlink_to(places / "pipe")
    default = precisionprobe("analyze", run, "--prometheus", "http://127.0.0.1:1", check=False, timeout=30)
    assert f"analyze: the default --db: '{run / 'precisionprobe.db'}' is a named pipe, not a file" in default.stderr
    assert sorted(os.listdir(places)) == before  # no DEVICE-journal, nothing made beside them


def test_a_results_database_this_user_may_not_create_says_so(tmp_path, monkeypatch):
    """SQLite says only "unable to open database file"; the reason is added where the file
    system tells it (here a folder the user may not write in, as os.access reports it: the
    tests run as root, whom permissions do not stop)."""
    from precisionprobe.analysis import extension
    monkeypatch.setattr(extension.os, "access", lambda path, mode: False)
    assert extension._why_not_opened(tmp_path / "run" / "precisionprobe.db") == " (its folder does not exist)"
    assert extension._why_not_opened(tmp_path / "precisionprobe.db") == (
        f" (this user may not create files in {tmp_path}: give --db a file you can write)")


def test_a_python_that_cannot_load_extensions_is_named_with_the_fix(tmp_path, monkeypatch):
    """pyenv's default build has no enable_load_extension: the CLI says which Python to run it
    with (here every connection is made to look like such a build's)."""
    from precisionprobe.analysis import extension
    monkeypatch.setattr(extension, "hasattr", lambda obj, name: name != "enable_load_extension", raising=False)
    with pytest.raises(extension.ExtensionError, match=r"built without loadable extension support: run the command "
                                                       r"with one whose sqlite3 can load extensions, such as Debian's"):
        extension.connect(tmp_path / "results.db")


def test_a_database_whose_first_refresh_failed_is_not_taken_for_a_run_without_events(tmp_path):
    """analyze against a Prometheus that does not answer leaves the results database it made,
    with the tables but no events (a refresh is written whole or not at all). Read as it is
    (--no-refresh, compare, export --no-refresh), it is said to hold no events because no
    refresh imported any, not that the run directory, which holds event files, has none."""
    run = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "data" / "events" / "job1", run)
    down = precisionprobe("analyze", run, "--prometheus", "http://127.0.0.1:1", check=False, timeout=60)
    assert down.returncode == 1 and "cannot reach http://127.0.0.1:1/" in down.stderr, down.stderr
    database = run / "precisionprobe.db"
    said = (f"no layer events in the results database '{database}': no refresh has imported any (the first one "
            "failed, or none ran): `precisionprobe analyze RUN_DIR` refreshes it from the run's event files")
    for command in (["analyze", run, "--no-refresh"], ["export", run, "--no-refresh", "--openmetrics", "-"],
                    ["compare", run, run]):
        read = precisionprobe(*command, check=False, timeout=60)
        assert read.returncode == 1 and read.stdout == "", read.stderr
        assert read.stderr.strip() == f"python3 -m precisionprobe {command[0]}: {said}", read.stderr


def test_a_mistyped_option_is_told_with_its_commands_usage(tmp_path):
    result = precisionprobe("analyze", tmp_path, "--formt", "csv", check=False)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: python3 -m precisionprobe analyze ")
    assert result.stderr.strip().endswith("python3 -m precisionprobe analyze: error: unrecognized arguments: --formt csv")


def test_a_database_of_a_version_before_pp_meta_is_not_taken_for_another_applications(tmp_path):
    """analyze refuses to write beside another application's tables, not into a database an
    early version of precisionprobe made (its tables, without pp_meta)."""
    from precisionprobe.analysis import extension
    database = tmp_path / "early.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE layer_state(job_id, layer, forward, metric, state)")
        extension._refuse_another_applications(conn, database)
        conn.execute("CREATE TABLE notes(x)")
        extension._refuse_another_applications(conn, database)
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE notes(x)")
        with pytest.raises(extension.ExtensionError, match="holds tables of another application"):
            extension._refuse_another_applications(conn, tmp_path / "other.db")


def test_a_wal_database_in_a_folder_it_cannot_write_says_why_it_cannot_be_opened(tmp_path, monkeypatch):
    """SQLite reports a database in WAL mode whose -shm file it cannot make (a read-only file
    system) only as "unable to open database file"; the commands add why, and what to do."""
    from precisionprobe.analysis import extension

    database = tmp_path / "runs.db"
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    assert not Path(f"{database}-shm").exists()
    assert extension.wal_without_shm(database) == ""  # its folder is writable: SQLite makes the file
    writable = os.access
    monkeypatch.setattr(extension.os, "access",
                        lambda path, mode: False if Path(path) == tmp_path else writable(path, mode))
    assert "a database in WAL mode needs its -shm file" in extension.wal_without_shm(database)
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    assert extension.wal_without_shm(database) == ""  # not in WAL mode: nothing to make


def test_reading_commands_leave_the_database_as_it_is(runs, report_a, tmp_path):
    """compare, analyze --no-refresh and export --no-refresh read a results database without
    changing a byte of it, also one whose saved estimates are missing (a database only pp_refresh
    wrote): they are then computed for the command alone."""
    work, _, _ = runs
    database = tmp_path / "archived.db"
    shutil.copy(work / "a.db", database)
    with closing(sqlite3.connect(database)) as conn, conn:  # (closed: WAL checkpointed)
        conn.execute("DELETE FROM report_estimates")
    before = database.read_bytes()
    rows = json.loads(precisionprobe("compare", database, database, "--format", "json").stdout)["rows"]
    assert {"estimate", "interval"} & {r["a_kind"] for r in rows}
    (job,) = json.loads(precisionprobe("analyze", work / "a" / "events", "--db", database, "--no-refresh",
                                       "--format", "json").stdout)["jobs"]
    assert any(m["kind"] == "estimate" for r in job["layer_types"] for m in r["metrics"].values())
    exposition = precisionprobe("export", work / "a" / "events", "--db", database, "--no-refresh",
                                "--openmetrics", "-").stdout
    assert "precisionprobe_job_gpus" in exposition
    assert database.read_bytes() == before


def test_an_archived_database_in_a_folder_no_one_may_write_is_read(runs, report_a, tmp_path):
    """The commands make results databases in WAL mode, which SQLite cannot open read-only where
    it cannot make the -shm file beside it: compare and analyze --no-refresh of an archived run
    (a folder made immutable, which root cannot write either) failed. The file alone, without a
    -wal file, is read as it is; with a -wal file (commits not in the file yet) it is refused with
    what to do, since reading the file alone would leave those commits out."""
    import subprocess
    work, _, _ = runs
    archive = tmp_path / "archive"
    archive.mkdir()
    database = archive / "precisionprobe.db"
    shutil.copy(work / "a.db", database)
    with closing(sqlite3.connect(database)) as conn:  # (in WAL mode, as analyze made it)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    before = database.read_bytes()
    locked = subprocess.run(["chattr", "+i", archive], capture_output=True, text=True)
    if locked.returncode != 0:
        pytest.skip(f"chattr +i cannot make a folder no one may write on this file system: {locked.stderr.strip()}")
    try:
        rows = json.loads(precisionprobe("compare", database, work / "a.db", "--format", "json").stdout)["rows"]
        assert rows == json.loads(precisionprobe("compare", work / "a.db", work / "a.db", "--format",
                                                 "json").stdout)["rows"]
        (job,) = json.loads(precisionprobe("analyze", work / "a" / "events", "--db", database, "--no-refresh",
                                           "--format", "json").stdout)["jobs"]
        assert any(m["kind"] == "estimate" for r in job["layer_types"] for m in r["metrics"].values())
        assert sorted(p.name for p in archive.iterdir()) == ["precisionprobe.db"]
        assert database.read_bytes() == before
    finally:
        subprocess.run(["chattr", "-i", archive], check=True)
    # With a -shm file left beside it (and no -wal file), the same.
    Path(f"{database}-shm").write_bytes(b"\0" * 32768)
    subprocess.run(["chattr", "+i", archive], check=True)
    try:
        assert json.loads(precisionprobe("compare", database, work / "a.db", "--format", "json").stdout)["rows"] == rows
    finally:
        subprocess.run(["chattr", "-i", archive], check=True)
    # Archived with a -wal file that holds a commit: refused, not read without it.
    with closing(sqlite3.connect(database)) as keeping:  # (open: the commit stays in the -wal file)
        keeping.execute("SELECT count(*) FROM sqlite_master").fetchone()
        with closing(sqlite3.connect(database)) as conn, conn:
            conn.execute("UPDATE report_jobs SET gpu_seconds = gpu_seconds + 1")
        shutil.copytree(archive, tmp_path / "with-wal", ignore=shutil.ignore_patterns("*-shm"))
    with_wal = tmp_path / "with-wal"
    assert Path(with_wal / "precisionprobe.db-wal").stat().st_size > 0
    subprocess.run(["chattr", "+i", with_wal], check=True)
    try:
        refused = precisionprobe("compare", with_wal / "precisionprobe.db", work / "a.db", check=False)
        assert refused.returncode == 1 and "a database in WAL mode needs its -shm file, which SQLite cannot make " \
            "in this folder or file system" in refused.stderr, refused.stderr
    finally:
        subprocess.run(["chattr", "-i", with_wal], check=True)


def test_a_database_of_an_earlier_version_is_read_through_an_upgraded_copy(runs, report_a, tmp_path):
    """A read-only command on a database an earlier version wrote (here: views as an earlier
    version stored them) reads an upgraded copy in memory, says so, and answers as this version
    does; the file keeps every byte."""
    work, _, _ = runs
    database = tmp_path / "earlier.db"
    shutil.copy(work / "a.db", database)
    with closing(sqlite3.connect(database)) as conn, conn:  # (closed: WAL checkpointed)
        (view,) = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'job_overview'").fetchone()
        conn.execute("DROP VIEW job_overview")
        conn.execute(view.replace(" AS SELECT ", " AS SELECT 'earlier' AS version, ", 1))
        conn.execute("UPDATE pp_meta SET value = 'earlier' WHERE key = 'views'")
    before = database.read_bytes()
    result = precisionprobe("compare", database, work / "a.db", "--format", "json")
    assert (f"precisionprobe: {database} was written by another version of precisionprobe: reading a copy in "
            "memory with this version's tables and views (the file is not changed") in result.stderr, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert rows == json.loads(precisionprobe("compare", work / "a.db", work / "a.db", "--format", "json").stdout)["rows"]
    assert database.read_bytes() == before


def test_a_database_with_tables_this_version_does_not_know_is_not_read(runs, report_a, tmp_path):
    """A table that is not as precisionprobe creates it (a later version's column, or a view in
    its place that would run when read): the reading commands refuse it, and nothing is written."""
    work, _, _ = runs
    for name, change in [("later.db", "ALTER TABLE pp_metrics ADD COLUMN unit TEXT"),
                         ("altered.db", "PRAGMA legacy_alter_table = ON; ALTER TABLE report_jobs RENAME TO "
                                        "report_jobs_kept; CREATE VIEW report_jobs AS SELECT * FROM report_jobs_kept"),
                         ("indexed.db", 'CREATE INDEX "by\njob" ON report_jobs(job_id)')]:
        database = tmp_path / name
        shutil.copy(work / "a.db", database)
        with closing(sqlite3.connect(database)) as conn, conn:  # (closed: WAL checkpointed)
            conn.executescript(change)
        before = database.read_bytes()
        for command in (["compare", database, work / "a.db"],
                        ["analyze", work / "a" / "events", "--db", database, "--no-refresh"],
                        ["analyze", work / "a" / "events", "--db", database]):
            refused = precisionprobe(*command, check=False)
            assert refused.returncode == 1 and "is not as precisionprobe creates it" in refused.stderr, refused.stderr
            assert ("is made again from its run's event files: precisionprobe analyze RUN_DIR --db NEW_FILE" in
                    refused.stderr or "refresh the run's event files into a fresh database" in refused.stderr), \
                refused.stderr  # the fix, for a file this version cannot read
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr  # a name with a newline too
        assert database.read_bytes() == before


def test_a_value_of_another_type_in_the_report_tables_is_one_line(runs, report_a, tmp_path):
    """SQLite keeps text in a REAL column: the reading commands name the table, column and job
    instead of failing half-way with a traceback."""
    work, _, _ = runs
    database = tmp_path / "typed.db"
    shutil.copy(work / "a.db", database)
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE report_jobs SET refreshed_at = 'x'")
    for command in (["compare", database, database], ["analyze", work / "a" / "events", "--db", database, "--no-refresh"]):
        result = precisionprobe(*command, check=False)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert (f"'{database}': report_jobs.refreshed_at of job '{offline.JOB_ID}' holds 'x', not a number"
                in result.stderr), result.stderr
    # A long value is cut short in the message.
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE report_jobs SET refreshed_at = 1")
        conn.execute("UPDATE report_layers SET gpu_util_percent = zeroblob(3000)")
    result = precisionprobe("compare", database, database, check=False)
    assert result.returncode == 1 and "report_layers.gpu_util_percent of job" in result.stderr, result.stderr
    assert "...'" in result.stderr and len(result.stderr) < 700, result.stderr  # not the 3,000 bytes


def test_a_damaged_results_database_is_named_not_the_extension(runs, report_a, tmp_path):
    """A results database whose pages were overwritten (a disk's fault, a copy cut short): the
    commands name the file and the way out, not the extension that was loading when SQLite met it."""
    work, _, _ = runs
    database = tmp_path / "damaged.db"
    shutil.copy(work / "a.db", database)
    with open(database, "r+b") as f:  # (pages 20-22 of 4096 bytes: past the schema's first page)
        f.seek(4096 * 19)
        f.write(bytes(range(256)) * 48)
    for command in (["analyze", work / "a" / "events", "--db", database, "--no-refresh"],
                    ["analyze", work / "a" / "events", "--db", database],
                    ["export", work / "a" / "events", "--db", database, "--no-refresh", "--openmetrics", "-"]):
        refused = precisionprobe(*command, check=False)
        assert refused.returncode == 1 and f"cannot read the results database {database}: " in refused.stderr, \
            refused.stderr
        assert "database disk image is malformed" in refused.stderr and "--db NEW_FILE" in refused.stderr
