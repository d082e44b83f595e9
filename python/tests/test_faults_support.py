"""Shared by the test_faults_*.py files: the fault-free reference run and the checks.

Every fault test trains the same small DLRM (same seed, same number of steps) and compares what
the faulty run left on disk with a run that had no fault:

  * training: exit status and the loss of every step (printed by the workload) must equal those
    of a run without hooks: a fault in the probe must not change or stop training;
  * events: the faulty run's event lines must be exactly the first `written` events of the
    reference, in the same order (layer, direction, batch), every one a whole line that both
    json.loads and the extension's layer_events read; a torn last line is the only tolerated
    damage, and only where a process was killed;
  * accounting: the summary line's written count equals the lines in the file, and written +
    dropped + lost = the events the model produced, where lost (events neither written nor
    counted) must be 0 wherever the client had a chance to count them.

The checks count JSON Lines bytes and lines, so these runs write JSON Lines (the documented
PRECISIONPROBE_EVENT_FORMAT=json, fault_environment()); test_compact_events.py checks the
compact format through a removed file, and tests/unit/compact_events_test.cpp its torn tails.

This file holds no tests itself (pytest collects it and finds none).
"""
import functools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from conftest import SMALL_DLRM, child_environment, run_launched

JOB_ID = "faults"
STEPS = 1000            # about 1.5 s of training on a 2-core VM: long enough to hit mid-run
EVENTS_PER_STEP = 42    # 21 leaf layers (4 bottom, 8 embedding, 8 top, loss_fn), forward + backward
PRODUCED = STEPS * EVENTS_PER_STEP
# The small DLRM of the other tests, printing the loss of every step (no --quiet).
DLRM_ARGS = [a for a in SMALL_DLRM if a != "--quiet"] + ["--iterations", str(STEPS)]
DLRM_COMMAND = [sys.executable, "-m", "precisionprobe.workloads.dlrm", *DLRM_ARGS]
EXTENSION = os.environ.get("PP_EXTENSION")

def fault_environment():
    """The children's environment: the hook client writes JSON Lines (see the module doc)."""
    return {**child_environment(), "PRECISIONPROBE_EVENT_FORMAT": "json"}


_STEP_LINE = re.compile(r"^dlrm: epoch \d+ step \d+ loss (\S+) time")
_SUMMARY = re.compile(r"precisionprobe: wrote (\d+) events, dropped (\d+) \((.*)\)")


def step_losses(stdout):
    """The loss of every step the workload finished, as printed (6 decimals)."""
    return [m.group(1) for m in map(_STEP_LINE.match, stdout.splitlines()) if m]


def summary(stderr):
    """(written, dropped, where) from the client's summary line; None if it printed none."""
    found = _SUMMARY.findall(stderr)
    assert len(found) <= 1, stderr
    return (int(found[0][0]), int(found[0][1]), found[0][2]) if found else None


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if line.startswith("precisionprobe: warning")]


def event_key(event):
    return event["batch"], event["layer"], event["forward"]


@dataclass
class EventFile:
    """One events file, read strictly: every complete line must be JSON."""
    path: Path
    headers: list = field(default_factory=list)
    events: list = field(default_factory=list)      # parsed event records, in file order
    event_bytes: list = field(default_factory=list)  # length of each event line, '\n' included
    torn: bytes = b""                                # a last line without '\n', if any

    @classmethod
    def read(cls, path):
        result = cls(Path(path))
        data = result.path.read_bytes()
        complete, newline, result.torn = data.rpartition(b"\n")  # no '\n': all of it is torn
        for raw in complete.split(b"\n") if newline else []:
            record = json.loads(raw)  # raises on any damaged complete line
            if record.get("record") == "job":
                result.headers.append(record)
            else:
                result.events.append(record)
                result.event_bytes.append(len(raw) + 1)
        return result

    @property
    def size(self):
        return self.path.stat().st_size

    @property
    def pid(self):
        return self.headers[0]["pid"]


def only_events_file(out_dir):
    files = sorted(Path(out_dir).glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


@dataclass
class Reference:
    losses: list        # per step, from a run without hooks
    keys: list          # (batch, layer, forward) of every event, in file order, from a hooked run
    line_bytes: list    # each event line's length in the hooked run
    pid: int            # the hooked run's pid (its digits are part of every line)
    size: int           # the hooked run's file size, header included

    def bytes_of(self, first, last, pid):
        """Bytes that events [first, last) take in a file written by process `pid`.

        Lines of two runs differ only in their values; of those only the pid can change the
        length (timestamps have 19 digits until 2286), so the lengths carry over exactly.
        """
        shift = len(str(pid)) - len(str(self.pid))
        return sum(self.line_bytes[first:last]) + shift * (last - first)


@functools.lru_cache(maxsize=None)
def reference():
    """The fault-free runs: one without hooks (losses), one under the launcher (events).

    They run side by side (computed once per pytest session): they share no files."""
    plain = subprocess.Popen(DLRM_COMMAND, env=child_environment(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    out = Path(tempfile.mkdtemp(prefix="pp-faults-reference-"))
    try:
        hooked = run_launched(out, DLRM_COMMAND, job_id=JOB_ID, env=fault_environment())
        plain_stdout, plain_stderr = plain.communicate(timeout=300)
        assert plain.returncode == 0, plain_stderr
        assert "precisionprobe" not in plain_stderr  # really without hooks
        assert hooked.returncode == 0, hooked.stderr
        assert step_losses(hooked.stdout) == step_losses(plain_stdout)
        events = EventFile.read(only_events_file(out))
        assert summary(hooked.stderr)[:2] == (len(events.events), 0)
        assert events.torn == b""
        assert len(events.events) == PRODUCED
        return Reference(step_losses(plain_stdout), [event_key(e) for e in events.events],
                         events.event_bytes, events.pid, events.size)
    finally:
        if plain.poll() is None:
            plain.kill()
            plain.communicate()
        shutil.rmtree(out, ignore_errors=True)


def read_back(path):
    """What the extension's layer_events reads: ((batch, layer, forward) rows, warnings).

    None when PP_EXTENSION names no built extension (CTest sets it); the JSON checks still run.
    """
    if not EXTENSION or not os.path.exists(EXTENSION + ".so"):
        print("layer_events not checked: PP_EXTENSION names no built extension")
        return None
    db = sqlite3.connect(":memory:")
    try:
        db.enable_load_extension(True)
        db.load_extension(EXTENSION)
        rows = db.execute("SELECT batch, layer, forward FROM layer_events(?) "
                          "ORDER BY source_file, line", (str(path),)).fetchall()
        warnings = json.loads(db.execute("SELECT pp_last_warnings()").fetchone()[0])
    finally:
        db.close()
    return [(b, layer, bool(f)) for b, layer, f in rows], warnings


def assert_read_back_whole(path, events, torn=False):
    """layer_events returns exactly `events` from path; a torn last line is skipped and counted."""
    result = read_back(path)
    if result is None:
        return
    rows, warnings = result
    assert rows == [event_key(e) for e in events]
    if torn:
        assert len(warnings) == 1, warnings
        assert re.fullmatch(r"layer_events: skipped 1 malformed line in .* \(first at line \d+: "
                            r"incomplete last line \(.*\)\)", warnings[0]), warnings[0]
    else:
        assert warnings == []


def megabytes(n):
    return f"{n / 1e6:.2f} MB"


def report(case, **figures):
    """Prints one line per fault case (pytest -s shows it; a failing test shows it anyway)."""
    print(f"\nfault {case}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in figures.items()))
