"""`precisionprobe run`: runs an unmodified command with the probe attached to its Python processes.

The command inherits an environment that makes every Python process of the job attach at startup
(see _autoattach.py). The launcher waits for the command, forwards the signals that were meant for
it, and returns the command's exit status (128+N when a signal N killed it, as shells do).
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

from . import _autoattach as autoattach
from ._event_files import event_files_below
from ._job_identity import default_job_id, job_id_from_environment
from ._path_kind import kind_of
from ._probe import default_out_dir

BOOTSTRAP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bootstrap")
# SIGUSR1 and SIGUSR2 too: schedulers send them before a time limit (Slurm's --signal) for the job
# to checkpoint or requeue itself; not passed on, they would kill the launcher (their default
# action) and leave the job running without it, its step ended as if it had failed.
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
SI_KERNEL = 0x80  # siginfo.si_code of signals the terminal sends (Ctrl-C), as opposed to kill()


def job_environment(job_id, out_dir, environ=None):
    env = dict(os.environ if environ is None else environ)
    env[autoattach.ENV_ATTACH] = "1"
    env[autoattach.ENV_JOB_ID] = job_id
    env[autoattach.ENV_OUT] = out_dir
    env[autoattach.ENV_LAUNCHER_PID] = str(os.getpid())
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + existing if existing else "")
    return env


def run(command, out=None, job_id=None):
    """Runs command (a list) with the probe attached; returns its exit status."""
    job_id = job_id or job_id_from_environment() or default_job_id()
    out_dir = os.path.abspath(out or default_out_dir(job_id))
    shown = job_id if job_id.isprintable() else repr(job_id)  # (a newline in it would start a line of its own)
    print(f"precisionprobe: job {shown}, events in {out_dir}", file=sys.stderr, flush=True)
    # Said before the job runs, which goes on unrecorded all the same (training is never held up
    # by the probe): otherwise only each process's own warning tells, after the fact.
    problem = _unusable_out_dir(out_dir)
    if problem:
        print(f"precisionprobe: warning: layer events cannot be written to {out_dir}: {problem}; the command runs "
              "unrecorded (--out names the directory for the event files)", file=sys.stderr, flush=True)
    earlier = _files_of_job(out_dir, job_id)
    if earlier:
        print(f"precisionprobe: warning: {out_dir} already holds {earlier} event file(s) of job {job_id} from an "
              "earlier run: this run's events join them as one job (analyze reads them together); give another "
              "--job-id or --out to keep the runs apart", file=sys.stderr, flush=True)
    started = time.time()
    # Signals are blocked from before the child exists (none can slip past the forwarding loop)
    # and unblocked again in the child before it runs the command.
    waited = set(FORWARDED_SIGNALS) | {signal.SIGCHLD}
    # An ignored SIGCHLD (inherited SIG_IGN) would never be queued, and the wait never woken.
    previous_sigchld = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        try:
            child = subprocess.Popen(command, env=job_environment(job_id, out_dir),
                                     preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK,
                                                                               previous_mask))
        except OSError as error:
            print(f"precisionprobe: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
            return 127
        status = _wait_forwarding_signals(child, waited)
    finally:
        while signal.sigtimedwait(waited, 0) is not None:  # meant for the child, which is gone
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
        signal.signal(signal.SIGCHLD, previous_sigchld)
    wrote = _wrote_events_since(out_dir, started)
    if not wrote and problem:
        print(f"precisionprobe: warning: {command[0]} wrote no layer events to {out_dir} (see the first warning)",
              file=sys.stderr)
    elif not wrote and status != 0:  # (its failure, not the hooks, is what to look at)
        ended = (f"exited with status {status}" if status > 0 else
                 f"was killed by {signal.Signals(-status).name}" if -status in signal.valid_signals() else
                 f"ended with status {status}")
        print(f"precisionprobe: warning: {command[0]} {ended} and wrote no layer events to {out_dir} (its own "
              "output above says why it failed)", file=sys.stderr)
    elif not wrote:
        print(f"precisionprobe: warning: {command[0]} wrote no layer events to {out_dir}: the hooks record "
              "the PyTorch modules that Python processes of the command call (is it a Python program, "
              "with torch importable, that ran a model?), or the events could not be written (each process "
              "that tried warned why)", file=sys.stderr)
    return status if status >= 0 else 128 - status


def _files_of_job(out_dir, job_id):
    """How many event files below out_dir (subdirectories included, and a link to a directory
    not followed, as layer_events reads a directory: links that loop would make the walk
    endless) have a job header of job_id (read from their first lines)."""
    count = 0
    for path in event_files_below(out_dir):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                head = [f.readline() for _ in range(2)]
        except OSError:
            continue
        for line in head:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("record") == "job" and record.get("job_id") == job_id:
                count += 1
                break
    return count


def _unusable_out_dir(out_dir):
    """Why event files cannot be written in out_dir (the writers make it if missing), or None;
    nothing is created here."""
    existing = out_dir
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{existing} is {kind_of(existing)}, not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"this user may not write in {existing}"
    return None


def _wrote_events_since(out_dir, started):
    """Whether an event file in out_dir was written to since the command started (one second of
    slack for file systems that keep coarse modification times)."""
    for path in glob.glob(os.path.join(glob.escape(out_dir), "events-*.jsonl")):
        try:
            if os.path.getmtime(path) >= started - 1 and os.path.getsize(path) > 0:
                return True
        except OSError:
            pass
    return False


def _wait_forwarding_signals(child, waited):
    """Waits for the child; signals sent to the launcher with kill() are passed on to it.

    A Ctrl-C in the terminal reaches the whole foreground process group, the child included, so
    the launcher does not send it a second time (such signals come with si_code SI_KERNEL).
    The caller has blocked `waited`, so they queue up for sigwaitinfo instead of acting; SIGCHLD
    is among them, so the child's exit (or stop, or continue) wakes the loop too.
    Not sigtimedwait: CPython 3.11 returns an uninitialized siginfo from it when a stop signal
    (Ctrl-Z, a scheduler pausing the job) interrupts the wait past its timeout, and the launcher
    would pass a garbage signal number on. sigwaitinfo restarts after a stop instead.
    """
    while child.poll() is None:
        info = signal.sigwaitinfo(waited)
        if info.si_signo == signal.SIGCHLD or info.si_code == SI_KERNEL:
            continue
        try:
            child.send_signal(info.si_signo)
        except ProcessLookupError:
            pass
    return child.returncode
