"""Bringing a run's results database up to date: pp_refresh over the run's event files, with the
elapsed time on stderr while a long refresh runs."""
import sqlite3
import sys
import time
from pathlib import Path

PROGRESS_AFTER_S = 2.0  # a refresh shorter than this prints nothing
PROGRESS_EVERY_S = 5.0


class RefreshError(RuntimeError):
    """pp_refresh failed; the message is the extension's (it names the function and the cause)."""


class _Progress:
    """sqlite3's progress handler: every so many VM steps, prints the elapsed time when due."""

    def __init__(self, what, stream):
        self.what, self.stream = what, stream
        self.started = time.monotonic()
        self.next_print = self.started + PROGRESS_AFTER_S
        self.printed = False

    def __call__(self):
        now = time.monotonic()
        if now >= self.next_print:
            print(f"precisionprobe: {self.what} ... {now - self.started:.0f} s", file=self.stream, flush=True)
            self.next_print = now + PROGRESS_EVERY_S
            self.printed = True
        return 0  # go on

    def done(self):
        if self.printed:
            print(f"precisionprobe: {self.what}: done in {time.monotonic() - self.started:.1f} s",
                  file=self.stream, flush=True)


def refresh(conn, events, prometheus_url=None, final=False, stream=sys.stderr, retention_minutes=None):
    """Runs pp_refresh(events, final) in conn (committed) and returns its counts as a dict; the
    warnings it raised are printed to stream. retention_minutes, if given, is the
    event_retention_minutes setting of the refresh."""
    if prometheus_url:
        conn.execute("SELECT pp_config('prometheus_url', ?)", (prometheus_url,))
    if retention_minutes is not None:
        conn.execute("SELECT pp_config('event_retention_minutes', ?)", (retention_minutes,))
    progress = _Progress(f"refreshing from {events}", stream)
    conn.set_progress_handler(progress, 200_000)
    try:
        cursor = conn.execute("SELECT * FROM pp_refresh(?, ?)", (str(Path(events)), 1 if final else 0))
        names = [d[0] for d in cursor.description]
        counts = dict(zip(names, cursor.fetchone()))
        warnings = conn.execute("SELECT value FROM json_each(pp_last_warnings())").fetchall()
        conn.commit()
    except sqlite3.Error as e:
        conn.rollback()
        raise RefreshError(str(e)) from None
    finally:
        conn.set_progress_handler(None, 0)
    progress.done()
    for (warning,) in warnings:
        print(f"precisionprobe: warning: {warning}", file=stream)
    return counts
