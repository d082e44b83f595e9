"""Two processes refreshing one results database: the CLI's refresh waits while another connection
writes it, instead of failing at once with "database is locked" (pp_refresh writes from inside a
SELECT, for which SQLite's busy timeout does not apply), and says so; a wait past its bound is one
clear error that changed nothing."""
import io
import sqlite3
import threading
from pathlib import Path

import pytest

from conftest import extension_path
from precisionprobe.analysis import write_lock
from precisionprobe.analysis.extension import connect
from precisionprobe.analysis.refresh import RefreshError, refresh

# A job on the CPU: a refresh imports its events and asks Prometheus for nothing.
EVENTS = Path(__file__).resolve().parents[2] / "tests" / "data" / "events" / "cpu.jsonl"


@pytest.fixture
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECISIONPROBE_EXTENSION", extension_path())
    path = tmp_path / "results.db"
    connect(path).close()  # (the tables made, as a first analyze makes them)
    return path


def writer_holding_the_lock(path):
    """Another process's refresh, as SQLite sees it: a connection holding the write lock."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_refresh_waits_for_another_connections_write_and_says_so(database):
    conn = connect(database)
    other = writer_holding_the_lock(database)
    threading.Timer(2.5, other.execute, ("COMMIT",)).start()
    said = io.StringIO()
    counts = refresh(conn, EVENTS, stream=said)
    assert counts["events_added"] == conn.execute("SELECT count(*) FROM pp_events").fetchone()[0] > 0
    assert said.getvalue().startswith(f"precisionprobe: {database} is being written by another connection "
                                      "(another analyze, export or serve of it?): waiting up to 600 s")
    assert not conn.in_transaction  # committed
    conn.close()
    other.close()


def test_a_wait_past_its_bound_is_one_error_and_changes_nothing(database, monkeypatch):
    monkeypatch.setattr(write_lock, "WAIT_S", 1.5)
    conn = connect(database)
    other = writer_holding_the_lock(database)
    try:
        with pytest.raises(RefreshError) as failed:
            refresh(conn, EVENTS, stream=io.StringIO())
        assert str(failed.value).startswith(f"{database} was written by another connection (another analyze, "
                                            "export or serve of it, or a refresh in SQL) for all of ")
        assert str(failed.value).endswith(" s; nothing was changed: run again once it is done")
        assert not conn.in_transaction
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert conn.execute("SELECT count(*) FROM pp_events").fetchone()[0] == 0
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000  # (Python's, as it was)
    conn.close()


def test_saving_the_estimates_waits_too(database):
    from precisionprobe.analysis.saved_estimates import save_estimates

    conn = connect(database)
    other = writer_holding_the_lock(database)
    threading.Timer(6.5, other.execute, ("COMMIT",)).start()  # (past Python's 5 s busy timeout)
    assert save_estimates(conn) == 0
    other.close()
    conn.close()


def test_a_scrape_of_serve_does_not_wait_for_a_refresh_that_writes(database, monkeypatch):
    """serve's scrape saves estimates a refresh made stale; while serve's own next refresh (or
    another process's) holds the write lock, which a refresh waiting for Prometheus may hold for
    minutes, the scrape answers within its one attempt, from estimates kept for this answer."""
    import time
    from precisionprobe.analysis import cli
    from precisionprobe.analysis.saved_estimates import estimates_stale

    monkeypatch.setattr(write_lock, "WAIT_S", 5.0)  # (the bound of analyze's waits, shortened)
    conn = connect(database)
    refresh(conn, EVENTS, stream=io.StringIO())
    assert estimates_stale(conn)
    conn.close()
    other = writer_holding_the_lock(database)
    try:
        started = time.monotonic()
        text = cli._exposition_reader(database, None)()
        assert time.monotonic() - started < 4  # (one attempt of 1 s, where 600 s before)
    finally:
        other.execute("ROLLBACK")
        other.close()
    conn = connect(database)
    assert estimates_stale(conn)  # (nothing written to the file: a later read saves them)
    conn.close()
    assert cli._exposition_reader(database, None)() == text  # (the same answer, saved this time)
