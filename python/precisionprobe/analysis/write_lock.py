"""Waiting for the results database's write lock. Another process may be writing the database:
an `analyze`, `export` or `serve` of the same run, a scheduler's refresh. pp_refresh writes from
inside the SELECT that calls it, which already reads, and SQLite does not wait for a lock that a
reader asks to write (busy_timeout does not apply): such a refresh fails at once with "database
is locked". BEGIN IMMEDIATE takes the write lock before anything is read, and waits for it."""
import sqlite3
import sys
import time

WAIT_S = 600.0  # the longest wait for another connection's write to end
ATTEMPT_MS = 1000  # one attempt's busy timeout: SQLite's wait cannot be interrupted, so Ctrl-C
# is seen between attempts


class WriteLockTimeout(RuntimeError):
    """Another connection held the database's write lock for longer than the wait."""


def begin_writing(conn, stream=sys.stderr, wait_s=None):
    """Begins a write transaction on conn (BEGIN IMMEDIATE), waiting up to wait_s seconds (WAIT_S
    where None) while another connection writes the database, and saying so on stream once it
    waits. Raises WriteLockTimeout when the wait ends without the lock (wait_s 0: after one
    attempt, said nowhere). A transaction conn has open already is used as it is."""
    if conn.in_transaction:
        return
    previous_ms = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute(f"PRAGMA busy_timeout = {ATTEMPT_MS}")
    started, wait_s = time.monotonic(), WAIT_S if wait_s is None else wait_s
    said = False
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if not _busy(e):
                    raise
            waited = time.monotonic() - started
            if waited >= wait_s:
                raise WriteLockTimeout(
                    f"{_file(conn)} was written by another connection (another analyze, export or serve of it, "
                    f"or a refresh in SQL) for all of {waited:.0f} s; nothing was changed: run again once it is done")
            if not said:
                print(f"precisionprobe: {_file(conn)} is being written by another connection (another analyze, "
                      f"export or serve of it?): waiting up to {wait_s:.0f} s for it to finish",
                      file=stream, flush=True)
                said = True
    finally:
        conn.execute(f"PRAGMA busy_timeout = {previous_ms}")


def _busy(error):
    """Whether error is SQLITE_BUSY (Pythons before 3.11 give no error code: its message then)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code == sqlite3.SQLITE_BUSY if code is not None else "database is locked" in str(error)


def _file(conn):
    """The main database's file name, as SQLite opened it."""
    return next((path for _, name, path in conn.execute("PRAGMA database_list") if name == "main"), "the database")
