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
    for option, setting, value in (("--prometheus", "prometheus_url", prometheus_url or None),
                                   ("--retention-minutes", "event_retention_minutes", retention_minutes)):
        if value is not None:
            try:
                conn.execute("SELECT pp_config(?, ?)", (setting, value))
            except sqlite3.Error as e:
                raise RefreshError(f"{option}: {e}") from None
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
        unreachable = "cannot reach" in str(e) or "could not connect" in str(e).lower()
        raise RefreshError(str(e) + (
            " (--prometheus names the Prometheus that holds the run's DCGM samples; without one, --emulate PROFILE "
            "replays the run on emulated GPUs, and --no-refresh reports what the database holds)"
            if unreachable else "")) from None
    finally:
        conn.set_progress_handler(None, 0)
    progress.done()
    for (warning,) in warnings:
        print(f"precisionprobe: warning: {warning}", file=stream)
    return counts
