"""Bringing a run's results database up to date: pp_refresh over the run's event files, with the
elapsed time on stderr while a long refresh runs; a final refresh right after the job ended
refreshes again while the samples of its last events are still on their way to Prometheus."""
import math
import os
import sqlite3
import sys
import time
from pathlib import Path

from . import ctrl_c
from .extension import extension_path, load_file
from .write_lock import WriteLockTimeout, begin_writing

PROGRESS_AFTER_S = 2.0  # a refresh shorter than this prints nothing
PROGRESS_EVERY_S = 5.0
# dcgm-exporter serves a window some 100-300 ms after it ends and Prometheus stores it at its next
# scrape (15 s is common): a final refresh right after the job ended finds its last events past
# their GPU's last sample. The CLI's --final refreshes again this often until they fold.
WAIT_DEFAULT_S = 20.0
WAIT_EVERY_S = 1.0
# The warning pp_refresh gives for those events (src/attribution/refresh_warnings.cpp): held back
# while the wait may still fold them, printed as it is once the wait ends without their samples.
PAST_LAST_SAMPLE = " lie past the last DCGM sample of their GPU"
NOT_FOLDED_YET = " are not folded yet: while a job may still write events"
# Where the extension takes prometheus_url from when pp_config has not set it.
PROMETHEUS_URL_VARIABLE = "PRECISIONPROBE_PROMETHEUS_URL"


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


def refresh(conn, events, prometheus_url=None, final=False, stream=sys.stderr, retention_minutes=None,
            wait_seconds=0.0, running=False):
    """Runs pp_refresh(events, final) in conn (committed) and returns its counts as a dict; the
    warnings it raised are printed to stream (running: one of a loop over a running job, which
    leaves out that its newest events wait, as they do at every such refresh). retention_minutes,
    if given, is the event_retention_minutes setting of the refresh. With final and wait_seconds > 0, while events
    lie past their GPU's last sample and the last of them ended less than wait_seconds ago (their
    samples may still be on their way: never for a run that ended long ago), refreshes again about
    every second until they fold or that bound is reached; the counts are then the last refresh's."""
    _configure(conn, prometheus_url, retention_minutes)
    counts, warnings = _refresh_once(conn, events, final, stream)
    deadline = _wait_deadline(counts, wait_seconds) if final else None
    said = set()  # each refresh of the wait repeats the warnings about what it cannot change
    if deadline is not None and time.time() < deadline:
        _print_warnings([w for w in warnings if PAST_LAST_SAMPLE not in w], said, stream)
        print(f"precisionprobe: waiting up to {math.ceil(deadline - time.time())} s for Prometheus to store the "
              f"samples of the job's last {int(counts['events_waiting'])} events (they ended "
              f"{max(0.0, time.time() - float(counts['waiting_end_time'])):.1f} s ago; --wait-seconds sets the bound)",
              file=stream, flush=True)
        while True:
            time.sleep(max(0.0, min(WAIT_EVERY_S, deadline - time.time())))
            counts, warnings = _refresh_once(conn, events, final, stream)
            if int(counts["events_waiting"]) == 0 or time.time() >= deadline:
                break
            _print_warnings([w for w in warnings if PAST_LAST_SAMPLE not in w], said, stream)
    _print_warnings([w for w in warnings if not (running and NOT_FOLDED_YET in w)], said, stream)
    return counts


def check_settings(prometheus_url=None, retention_minutes=None):
    """Refuses what refresh() would refuse to set, and an unusable PRECISIONPROBE_PROMETHEUS_URL
    where no URL is given, before a command makes its results database: a mistyped URL leaves no
    empty database behind, and the message names the command's option, not pp_config."""
    conn = sqlite3.connect(":memory:")
    try:
        load_file(conn, extension_path())
        _configure(conn, prometheus_url, retention_minutes)
        from_environment = os.environ.get(PROMETHEUS_URL_VARIABLE)
        if not prometheus_url and from_environment:
            try:
                conn.execute("SELECT pp_config('prometheus_url', ?)", (from_environment,))
            except sqlite3.Error as e:
                reason = str(e).removeprefix("pp_config: ")
                raise RefreshError(f"environment variable {PROMETHEUS_URL_VARIABLE} is not usable ({reason}): "
                                   "correct it, or give --prometheus URL") from None
    finally:
        conn.close()


def _configure(conn, prometheus_url, retention_minutes):
    """Sets the options' values in conn (those given), each refused under its option's name."""
    for option, setting, value in (("--prometheus", "prometheus_url", prometheus_url or None),
                                   ("--retention-minutes", "event_retention_minutes", retention_minutes)):
        if value is not None:
            if isinstance(value, int) and not -2**63 <= value < 2**63:
                value = str(value)  # (past SQLite's integers: pp_config says what range it takes)
            try:
                conn.execute("SELECT pp_config(?, ?)", (setting, value))
            except sqlite3.Error as e:
                raise RefreshError(f"{option}: {e}") from None


def _wait_deadline(counts, wait_seconds):
    """When a wait for the samples of the events a final refresh left waiting ends (unix seconds):
    wait_seconds after the last of them ended; None when none wait."""
    if not wait_seconds or not int(counts.get("events_waiting") or 0) or counts.get("waiting_end_time") is None:
        return None
    return float(counts["waiting_end_time"]) + wait_seconds


def _print_warnings(warnings, said, stream):
    """Prints the warnings not in said, and adds them to it."""
    for warning in warnings:
        if warning not in said:
            print(f"precisionprobe: warning: {warning}", file=stream)
            said.add(warning)


def _refresh_once(conn, events, final, stream):
    """One committed pp_refresh(events, final): its counts as a dict, and its warnings."""
    progress = _Progress(f"refreshing from {events}", stream)
    conn.set_progress_handler(progress, 200_000)
    try:
        begin_writing(conn, stream)  # (waits for another process's refresh: a SELECT cannot)
        with ctrl_c.interrupts(conn):  # (a request waiting for Prometheus ends within a second)
            cursor = conn.execute("SELECT * FROM pp_refresh(?, ?)", (str(Path(events)), 1 if final else 0))
            names = [d[0] for d in cursor.description]
            counts = dict(zip(names, cursor.fetchone()))
            warnings = [w for (w,) in conn.execute("SELECT value FROM json_each(pp_last_warnings())")]
        conn.commit()
    except WriteLockTimeout as e:
        raise RefreshError(str(e)) from None
    except sqlite3.Error as e:
        conn.rollback()
        unreachable = "cannot reach" in str(e) or "could not connect" in str(e).lower()
        raise RefreshError(str(e) + (
            " (--prometheus names the Prometheus that holds the run's DCGM samples; without one, --emulate PROFILE "
            "replays the run on emulated GPUs, and --no-refresh reports what the database holds)"
            if unreachable else "")) from None
    except BaseException:  # Ctrl-C, SIGTERM's handler
        conn.rollback()  # (nothing of an interrupted refresh is kept)
        raise
    finally:
        conn.set_progress_handler(None, 0)
    progress.done()
    return counts, warnings
