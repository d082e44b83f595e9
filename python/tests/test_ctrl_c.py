"""Ctrl-C or SIGTERM (a scheduler ending the command: Kubernetes sends SIGKILL 30 s later) while
`analyze` refreshes from a Prometheus that accepts the connection and never answers: the
command ends within seconds (not after timeout_ms per attempt, retries included), says so in
one line, exits with 130 or 143, and keeps nothing of the interrupted refresh."""
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import extension_path

EVENTS = Path(__file__).resolve().parents[2] / "tests" / "data" / "attribution"


def silent_server():
    """A loopback port that accepts connections and never answers; an Event set at the first."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    reached, held = threading.Event(), []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return
            reached.set()

    threading.Thread(target=accept, daemon=True).start()
    return server, reached


@pytest.mark.parametrize("signum, status, said", [
    (signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_ends_a_refresh_waiting_for_prometheus_and_keeps_nothing_of_it(tmp_path, signum, status, said):
    run_dir = tmp_path / "run"
    shutil.copytree(EVENTS, run_dir)
    server, reached = silent_server()
    database = tmp_path / "results.db"
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
    command = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "analyze", run_dir, "--db", database, "--final",
         "--prometheus", f"http://127.0.0.1:{server.getsockname()[1]}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reached.wait(60), "the refresh never asked the server"
        time.sleep(0.5)
        pressed = time.monotonic()
        command.send_signal(signum)
        out, err = command.communicate(timeout=30)  # (a request alone may take timeout_ms, 30 s)
        ended_after = time.monotonic() - pressed
    finally:
        command.kill()
        server.close()
    assert (command.returncode, out, err) == (
        status, "", f"python3 -m precisionprobe analyze: {said}; the database keeps what its last complete refresh "
                    "wrote\n")
    assert ended_after < 5
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM pp_event_files").fetchone()[0] == 0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
