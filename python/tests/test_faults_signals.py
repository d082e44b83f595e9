"""Signals while the job trains and the writer writes.

SIGKILL cannot be caught: the events still queued (at most the last 0.2 s) are lost, and a kill
that lands inside the writer's write() can leave a torn last line. What must hold: every
complete line is an intact event, the events on disk are exactly the first N events of the
fault-free run, and layer_events returns every complete line, skipping and counting (in
pp_last_warnings()) a torn last line. The kills come at random moments (seeded, so a failure
can be replayed) after the first flush. A kill inside write() itself is rare (the write takes
well under 1 ms of each 0.2 s), so each killed file is also cut inside its last line, as such a
kill leaves it, to check the reader's side of the promise every time.

SIGTERM and SIGINT (what Kubernetes, Slurm and Ctrl-C send), sent to the launcher and passed on
to the training process: the process still ends by that signal (exit 128+N), but first the
writer writes everything queued and the summary line is printed, so no event of any step the
model finished is lost.
"""
import os
import random
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import wait_for
from precisionprobe import _terminating_signals as terminating_signals
from test_faults_support import (DLRM_COMMAND, EVENTS_PER_STEP, JOB_ID, PRODUCED, STEPS,
                                 EventFile, assert_read_back_whole, event_key,
                                 fault_environment, megabytes,
                                 reference, report, step_losses, summary)

KILL_SEEDS = (1, 2, 3)
LATEST_SIGNAL_S = 0.6  # after the first flush; the run trains for about 1.5 s after it


def start_training(tmp_path):
    """The small DLRM under the launcher; its stdout and stderr go to files (never block)."""
    out = tmp_path / "events"
    stdout = open(tmp_path / "stdout.txt", "w")
    stderr = open(tmp_path / "stderr.txt", "w")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "run", "--out", str(out), "--job-id", JOB_ID,
         "--", *DLRM_COMMAND], env=fault_environment(), stdout=stdout, stderr=stderr)
    stdout.close()
    stderr.close()
    return launcher, out


def first_events_file(out):
    """Waits for the training process's first flush; returns its file and pid."""
    path = wait_for(lambda: sorted(out.glob("*.jsonl")), what="the first flush")[0]
    return path, int(re.fullmatch(r"events-.*-(\d+)\.jsonl", path.name).group(1))


def finished(launcher, tmp_path):
    launcher.wait(timeout=300)
    return (tmp_path / "stdout.txt").read_text(), (tmp_path / "stderr.txt").read_text()


def check_finished_steps(stdout, ref):
    """The steps the model finished before the signal, with the losses of the fault-free run."""
    losses = step_losses(stdout)
    assert 0 < len(losses) < STEPS, "the signal came before training or after it ended"
    assert losses == ref.losses[:len(losses)]
    return len(losses)


def tear_last_line(path, copy):
    """A copy of path cut in the middle of its last line, as a kill inside write() leaves it."""
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    copy.write_bytes(data[:last_start + (len(data) - last_start) // 2])
    return copy


@pytest.mark.parametrize("seed", KILL_SEEDS)
def test_sigkill_at_a_random_moment_leaves_only_whole_events(seed, tmp_path):
    ref = reference()
    delay = random.Random(seed).uniform(0, LATEST_SIGNAL_S)
    launcher, out = start_training(tmp_path)
    try:
        path, pid = first_events_file(out)
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        stdout, stderr = finished(launcher, tmp_path)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 128 + signal.SIGKILL, stderr
    assert summary(stderr) is None  # nobody could print it
    steps = check_finished_steps(stdout, ref)

    events = EventFile.read(path)
    written = len(events.events)
    torn_lines = int(events.torn != b"")
    assert len(events.headers) == 1
    assert [event_key(e) for e in events.events] == ref.keys[:written]
    assert sum(events.event_bytes) == ref.bytes_of(0, written, events.pid)
    assert written <= (steps + 1) * EVENTS_PER_STEP  # at most the step the kill interrupted
    assert_read_back_whole(path, events.events, torn=bool(torn_lines))
    # A torn last line (made here when the kill did not make one) is skipped and counted.
    (tmp_path / "torn").mkdir()
    torn = EventFile.read(tear_last_line(path, tmp_path / "torn" / path.name))
    assert torn.torn
    assert torn.events == (events.events if torn_lines else events.events[:-1])
    assert_read_back_whole(torn.path, torn.events, torn=True)

    # Lost: produced before the kill (all of `steps` finished steps, part of the next) - written.
    lost_min = max(0, steps * EVENTS_PER_STEP - written)
    lost_max = max(0, (steps + 1) * EVENTS_PER_STEP - written)
    report(f"SIGKILL (seed {seed}, {delay:.3f} s after the first flush)", faults_injected=1,
           survived="n/a (killed)", steps_finished=steps, events_written=written, dropped=0,
           lost=f"{lost_min}..{lost_max} (the unflushed tail)", torn_lines_from_kill=torn_lines,
           bytes_kept=megabytes(events.size),
           bytes_lost=f"{ref.bytes_of(written, written + lost_min, events.pid)}"
                      f"..{ref.bytes_of(written, written + lost_max, events.pid)} B")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_flush_every_event_and_print_the_summary(signum, tmp_path):
    ref = reference()
    delay = random.Random(int(signum)).uniform(0, LATEST_SIGNAL_S)
    launcher, out = start_training(tmp_path)
    try:
        path, _ = first_events_file(out)
        time.sleep(delay)
        launcher.send_signal(signum)  # the launcher passes it on to the training process
        stdout, stderr = finished(launcher, tmp_path)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode == 128 + signum, stderr  # still ends by the signal
    steps = check_finished_steps(stdout, ref)

    counts = summary(stderr)
    assert counts is not None, f"no summary line after {signum.name}:\n{stderr}"
    written, dropped, where = counts
    assert where == str(path) and dropped == 0
    events = EventFile.read(path)
    assert events.torn == b""
    assert len(events.events) == written
    assert [event_key(e) for e in events.events] == ref.keys[:written]
    # Every event of every finished step is on disk, and at most the next one (whose loss may
    # not have been printed yet).
    assert steps * EVENTS_PER_STEP <= written <= (steps + 1) * EVENTS_PER_STEP
    assert_read_back_whole(path, events.events)

    report(f"{signum.name} ({delay:.3f} s after the first flush)", faults_injected=1,
           survived="flushed, summary printed, exit 128+N", steps_finished=steps,
           events_written=written, dropped=dropped, lost=0,
           events_not_produced=PRODUCED - written, bytes_kept=megabytes(events.size),
           bytes_lost="0 B")


def test_the_sigterm_flush_handler_is_only_installed_over_the_default_action(tmp_path, fresh_probe):
    def programs_own(signum, frame):  # e.g. a trainer that saves a checkpoint on SIGTERM
        pass

    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        probe = fresh_probe.attach(job_id="handlers", out=tmp_path)
        assert terminating_signals._getsignal(signal.SIGTERM) == probe._on_terminating_signal
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # as the program sees it
        fresh_probe.detach()
        assert terminating_signals._getsignal(signal.SIGTERM) == signal.SIG_DFL  # detach gives it back
        assert signal.getsignal is terminating_signals._getsignal

        signal.signal(signal.SIGTERM, programs_own)
        fresh_probe.attach(job_id="handlers", out=tmp_path)
        assert signal.getsignal(signal.SIGTERM) is programs_own  # left alone
        fresh_probe.detach()
        assert signal.getsignal(signal.SIGTERM) is programs_own
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_under_the_launcher(program, out):
    """`precisionprobe run --out OUT -- python PROGRAM`, its output captured."""
    return subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(out), "--job-id", "signals",
                           "--", sys.executable, str(program)],
                          env=fault_environment(), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("otherwise, status", [("pass", 0), ("sys.exit(143)", 143)])
def test_a_program_handler_that_chains_to_the_one_it_replaced_works_as_without_the_probe(tmp_path, otherwise,
                                                                                          status):
    """A graceful-shutdown handler set after the probe attached that calls the handler it
    replaced where callable, and otherwise does its own thing (stops at the next step, or exits
    143), got the probe's handler, which ended the process by the signal at once (no checkpoint).
    The program sees SIG_DFL there, as without the probe: it stops as it chooses, its events
    written at exit."""
    program = tmp_path / "train.py"
    program.write_text(
        "import os, signal, sys, torch\n"
        "from torch import nn\n"
        "model, stop, steps = nn.Sequential(nn.Linear(4, 4), nn.ReLU()), False, 0\n"
        "replaced = signal.getsignal(signal.SIGTERM)\n"
        "def on_term(signum, frame):\n"
        "    global stop\n"
        "    stop = True\n"
        "    if callable(replaced):\n"
        "        replaced(signum, frame)\n"
        f"    else:\n        {otherwise}\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        "while not stop:\n"
        "    model(torch.randn(2, 4)).sum().backward()\n"
        "    steps += 1\n"
        "    if steps == 50:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "print('checkpoint saved after', steps, 'steps')\n"
        "sys.exit(0)\n")
    result = run_under_the_launcher(program, tmp_path / "events")
    assert result.returncode == status, result.stderr
    if status == 0:
        assert "checkpoint saved after 50 steps" in result.stdout
    assert "wrote 200 events, dropped 0" in result.stderr, result.stderr  # 50 steps x 2 layers x 2 directions


def test_a_framework_installs_its_handler_where_it_would_without_the_probe(tmp_path):
    """Lightning installs its graceful SIGTERM handler only where the action is the default: the
    probe's handler there made it install none. A program that sets the default back and
    re-raises gets the probe's handler for that: its events are written before it ends."""
    program = tmp_path / "train.py"
    program.write_text(
        "import os, signal, torch\n"
        "from torch import nn\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, signal.getsignal(signal.SIGTERM)\n"
        "def graceful(signum, frame):\n"
        "    print('saving', flush=True)\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "assert signal.signal(signal.SIGTERM, graceful) is signal.SIG_DFL\n"
        "model = nn.Linear(4, 4)\n"
        "for step in range(30):\n"
        "    model(torch.randn(2, 4)).sum().backward()\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "while True:\n"
        "    pass\n")
    result = run_under_the_launcher(program, tmp_path / "events")
    assert result.returncode == 128 + signal.SIGTERM and "saving" in result.stdout, result.stderr
    assert "wrote 60 events, dropped 0" in result.stderr, result.stderr
