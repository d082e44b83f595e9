"""precisionprobe: records which PyTorch layer ran when, to attribute GPU counters to layers.

In a notebook or script:

    import precisionprobe
    precisionprobe.attach(job_id="dlrm-exp1", out="runs/dlrm-exp1")
    ...train...
    precisionprobe.detach()   # writes what is queued, prints "precisionprobe: wrote N events, ..."

Without touching the script: `python3 -m precisionprobe run --out DIR -- python3 train.py ...`.

The SQLite extension, from the wheel (or a checkout's build/precisionprobe.so):

    import sqlite3, precisionprobe
    conn = sqlite3.connect("precisionprobe.db")
    precisionprobe.load(conn)               # ExtensionLoadError says why not, and the fix
    precisionprobe.loadable_path()          # for conn.load_extension() or the shell's .load

Importing this package does not import torch; attach() does.
"""
import os
import sys
import threading

from ._attach_arguments import check_attach_arguments
from ._loadable import ExtensionLoadError, load, loadable_path
from ._version import __version__

__all__ = ["attach", "detach", "active_probe", "load", "loadable_path", "ExtensionLoadError",
           "__version__"]

_lock = threading.Lock()
_active = None


def attach(job_id=None, out=None, *, clock="auto", flush_interval=0.2, summary="always",
           event_format=None):
    """Installs the global hooks in this process and returns the Probe.

    job_id: defaults to $PRECISIONPROBE_JOB_ID (empty counts as unset), else
    "job-<date>-<time>-<pid>"; not empty or only white space.
    out: directory of the events file, defaults to runs/<job_id>/ (created on first write).
    clock: "auto" (CUDA events when CUDA is available), "cpu" or "cuda".
    flush_interval: seconds between the writer thread's writes, above 0 and at most 3600.
    summary: "always" prints the summary line at detach; "auto" only if something was recorded;
    "never" (the counts are still returned by detach()).
    event_format: "compact" (the default: job, device and layer written once per file) or "json"
    (JSON Lines, one self-contained object per event); defaults to $PRECISIONPROBE_EVENT_FORMAT.
    Calling attach() again while attached returns the probe already installed. An argument it
    cannot use raises TypeError or ValueError naming it, before anything is installed.
    """
    global _active
    check_attach_arguments(job_id, clock, flush_interval, summary, out, event_format)
    with _lock:
        if _active is not None:
            print("precisionprobe: already attached; keeping the probe writing to "
                  f"{_active.out_dir}", file=sys.stderr)
            return _active
        from ._probe import Probe
        _active = Probe(job_id=job_id, out=out, clock=clock, flush_interval=flush_interval,
                        summary=summary, event_format=event_format).install()
        return _active


def detach():
    """Removes the hooks and flushes every event; returns (events written, events dropped)."""
    global _active
    with _lock:
        probe, _active = _active, None
    if probe is None:
        return 0, 0
    return probe.close()


def active_probe():
    return _active


def _after_fork_in_child():
    if _active is not None:
        _active.after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
