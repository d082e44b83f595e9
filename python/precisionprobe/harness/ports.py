"""Loopback ports: a free one to listen on, and waiting until a server answers on one."""
import socket
import time
import urllib.request

from . import processes


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now, chosen by the kernel."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, process, what, seconds=60, accept=None):
    """Returns once GET url answers 200 and accept(response), if given, is true. If process (the
    server's Popen, or None) exits first or `seconds` pass, stops what is left of it and raises
    SystemExit naming `what`: the callers are command-line tools and test fixtures, for which a
    server that never starts ends the run."""
    try:
        deadline = time.time() + seconds
        while time.time() < deadline:
            if process is not None and process.poll() is not None:
                raise SystemExit(f"{what} exited with {process.returncode} before it was ready")
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200 and (accept is None or accept(r)):
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"{what} not ready at {url} after {seconds}s")
    except BaseException:
        if process is not None:
            processes.stop(process)
        raise
