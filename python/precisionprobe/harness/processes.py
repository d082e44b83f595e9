"""Child processes that do not outlive their caller.

Each child starts in a session of its own, so it is the leader of a process group that holds its
children too: stopping it signals the whole group (a training job under the launcher, a DataLoader
worker), and a Ctrl-C meant for the caller's terminal does not reach it first. Stopping is SIGTERM,
a grace period, then SIGKILL for whatever is left of the group.
"""
import os
import signal
import site
import subprocess
import time
from pathlib import Path

STOP_SECONDS = 10  # grace period between SIGTERM and SIGKILL


def start(command, log=None, **popen_kwargs):
    """Starts command (a list) in a new session; its stdout and stderr go to log (an open file;
    None: the caller's stdout). popen_kwargs are passed to Popen and override those."""
    kwargs = {"stdout": log, "stderr": subprocess.STDOUT, "start_new_session": True}
    kwargs.update(popen_kwargs)
    return subprocess.Popen(command, **kwargs)


def _signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def stop(*processes, timeout=STOP_SECONDS):
    """Stops processes started by start() (None entries are skipped) with what is left of their
    groups: SIGCONT (a paused process must run to handle what follows) and SIGTERM to every group,
    a wait of up to `timeout` seconds for all of them together, then SIGKILL to every group."""
    processes = [p for p in processes if p is not None]
    for process in processes:
        for sig in (signal.SIGCONT, signal.SIGTERM):
            _signal_group(process.pid, sig)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for process in processes:
        _signal_group(process.pid, signal.SIGKILL)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass


def stop_groups(pids, grace=0.5):
    """Stops process groups by their leaders' pids, for children that another process started
    (there is no Popen to wait on): SIGTERM, `grace` seconds, SIGKILL."""
    pids = [int(pid) for pid in pids]
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    time.sleep(grace)
    for pid in pids:
        _signal_group(pid, signal.SIGKILL)


class Processes:
    """The processes of one run, stopped together and in reverse order of start, whatever
    happens: `with Processes() as procs: procs.start(...)`, or procs.stop_all() in a finally."""

    def __init__(self):
        self.running = []

    def start(self, command, log=None, **popen_kwargs):
        """start(), and the process is stopped by stop_all()."""
        return self.add(start(command, log, **popen_kwargs))

    def add(self, process):
        """A process started elsewhere (by prometheus.scrape(), say), to be stopped by stop_all()."""
        self.running.append(process)
        return process

    def stop_all(self, timeout=STOP_SECONDS):
        stop(*reversed(self.running), timeout=timeout)
        self.running = []

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop_all()


def child_environment(environ=None):
    """The environment for a child Python that runs precisionprobe (the emulator, a workload,
    `python3 -m precisionprobe run`): the folder holding this precisionprobe first on PYTHONPATH
    (unless it is installed in site-packages, where every Python finds it), so a child started in
    another working directory or by another interpreter finds the same package; and without
    PRECISIONPROBE_ATTACH, so that a caller running under the hook client does not make its
    helpers attach too."""
    env = dict(os.environ if environ is None else environ)
    env.pop("PRECISIONPROBE_ATTACH", None)
    package_parent = Path(__file__).resolve().parents[2]
    installed = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    if package_parent not in installed:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_parent), env.get("PYTHONPATH")) if p)
    return env
