"""`precisionprobe serve`, the endpoint a Prometheus scrapes, as it meets the network: failures
answered with 500 and refreshes on their own thread, connections that never finish or trickle,
caps per client and in all, Host names on loopback, no file descriptors left, IPv6, the cache of
the exposition, and retention under serve. Its answers read by a real Prometheus are in
test_export.py."""
import json
import os
import random
import socket
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import extension_path, run_cli as precisionprobe, wait_for
from precisionprobe._version import __version__
from precisionprobe.analysis import openmetrics, serve as endpoint
from precisionprobe.harness import processes
from precisionprobe.harness.ports import free_port, wait_ready


class _Lines:
    """A stand-in for serve's log stream that keeps each whole line written."""

    def __init__(self):
        self.lines, self._part = [], ""

    def write(self, text):
        self._part += text
        *done, self._part = self._part.split("\n")
        self.lines += done

    def flush(self):
        pass


def _serving(**limits):
    """An endpoint serving an empty exposition on a free loopback port, on its own thread."""
    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log, **limits)
    thread = threading.Thread(target=endpoint.serve, args=(server,), daemon=True)
    thread.start()
    return server, thread, log


def _answer_to_get(connection):
    """The whole answer to GET /metrics over connection, which is closed after it (HTTP/1.0: the
    server closes its side after the answer)."""
    with connection:
        connection.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        connection.settimeout(5)
        answer = b""
        while chunk := connection.recv(1000):
            answer += chunk
        return answer


def test_serve_refuses_an_empty_listen_address(tmp_path):
    # Bound as given, '' would be every interface: `--listen "$ADDR"` with ADDR unset would expose
    # the endpoint to the network instead of keeping the loopback default.
    for address in ("", " "):
        empty = precisionprobe("serve", tmp_path, "--no-refresh", "--port", "0", "--listen", address, check=False)
        assert (empty.returncode, empty.stderr) == (
            1, "python3 -m precisionprobe serve: --listen: must not be empty, which would listen on every interface: "
               "leave it out for 127.0.0.1 (this machine only), or say 0.0.0.0 for every IPv4 interface\n")


def test_serve_answers_failures_with_500_and_refreshes_on_its_own_thread():
    """The endpoint itself, with stand-ins for reading and refreshing: a failed scrape is a 500
    with its reason, a failed refresh a warning, and neither stops the next."""
    state = {"reads": 0, "refreshes": 0}

    def read():
        state["reads"] += 1
        if state["reads"] == 1:
            raise RuntimeError("database is locked")
        return "# EOF\n"

    def refresh():
        state["refreshes"] += 1
        if state["refreshes"] == 1:
            raise RuntimeError("pp_refresh: Prometheus at http://127.0.0.1:9 does not answer")

    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, read, "precisionprobe serve", log)
    thread = threading.Thread(target=endpoint.serve, args=(server, refresh, 0.05, "precisionprobe serve", log),
                              daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(base + "/metrics", timeout=5)
        assert failed.value.code == 500
        assert failed.value.read() == b"precisionprobe serve: scrape of /metrics failed: database is locked\n"
        request = urllib.request.Request(base + "/metrics", headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.read() == b"# EOF\n" and r.headers["Content-Type"] == openmetrics.CONTENT_TYPE
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            assert r.headers["Content-Type"] == openmetrics.TEXT_CONTENT_TYPE
            assert r.headers["Server"] == f"precisionprobe/{__version__}"
        # HEAD (a load balancer's health check) answers as GET does, without the body.
        with urllib.request.urlopen(urllib.request.Request(base + "/metrics", method="HEAD"), timeout=5) as r:
            assert r.status == 200 and r.headers["Content-Length"] == "6" and r.read() == b""
        wait_for(lambda: state["refreshes"] >= 3, 10, "three refreshes")
    finally:
        server.shutdown()
        thread.join(5)
    assert "precisionprobe serve: scrape of /metrics failed: database is locked" in log.lines
    assert ("precisionprobe serve: warning: refresh failed: pp_refresh: Prometheus at http://127.0.0.1:9 does "
            "not answer") in log.lines
    assert len(log.lines) == 2  # the later refreshes and scrapes succeeded silently


def test_serve_closes_a_connection_that_never_finishes_its_request():
    """A client that connects and sends half a request (or nothing) is hung up on after the
    timeout, silently, instead of holding a thread and a file descriptor for ever; scrapes are
    answered meanwhile."""
    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log, timeout=0.5)
    thread = threading.Thread(target=endpoint.serve, args=(server,), daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as silent, \
                socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                assert r.read() == b"# EOF\n"
            for client in (silent, slow):
                client.settimeout(10)
                assert client.recv(100) == b""  # closed by the server, with nothing said
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def test_serve_closes_a_slow_loris_that_sends_a_byte_now_and_then():
    """Each read waiting less than the timeout does not keep a request open: the request line
    and headers must all arrive within the deadline, and scrapes are answered meanwhile."""
    server, thread, log = _serving(timeout=1, deadline=1.5)
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as loris:
            started, closed = time.monotonic(), False
            for byte in b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"x" * 100:
                try:
                    loris.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                loris.settimeout(0.3)
                try:
                    if loris.recv(100) == b"":
                        closed = True
                        break
                except socket.timeout:
                    pass
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    assert r.read() == b"# EOF\n"
            assert closed and time.monotonic() - started < 6, time.monotonic() - started
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def test_serve_caps_the_connections_of_one_client_and_of_all():
    """Past the caps, connections are closed at once, so that one client's many cannot take every
    thread and file descriptor: another address (here 127.0.0.1 beside the hog's 127.0.0.2) is
    still answered, and the hog's own connections are answered again once its others close."""
    server, thread, log = _serving(max_connections=6, max_connections_per_client=3)
    port = server.server_address[1]

    def from_hog():
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        return s

    try:
        held = [from_hog() for _ in range(3)]
        time.sleep(0.2)  # (the server has taken them)
        refused = from_hog()
        refused.settimeout(5)
        assert refused.recv(100) == b""  # closed at once, nothing said
        refused.close()
        # Read to the end: the server closes a connection after it stopped counting it.
        assert _answer_to_get(socket.create_connection(("127.0.0.1", port))).endswith(b"# EOF\n")
        others = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        time.sleep(0.2)
        over_all = socket.create_connection(("127.0.0.1", port))  # the seventh: past the cap of six
        over_all.settimeout(5)
        assert over_all.recv(100) == b""
        over_all.close()
        for s in held + others:
            s.close()
        time.sleep(0.2)
        answer = _answer_to_get(from_hog())
        assert answer.startswith(b"HTTP/1.0 200 OK") and answer.endswith(b"# EOF\n"), answer
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def test_serve_on_loopback_answers_requests_for_loopback_names_only():
    """A page in a browser on the machine can make its own domain name resolve to 127.0.0.1 (DNS
    rebinding) and read what a loopback endpoint serves: only a loopback Host is answered."""
    server, thread, log = _serving()
    port = server.server_address[1]
    try:
        for host, status in ((f"127.0.0.1:{port}", 200), (f"localhost:{port}", 200), ("LOCALHOST", 200),
                             (f"[::1]:{port}", 200), (f"{socket.gethostname()}:{port}", 200),
                             (f"rebind.attacker.example:{port}", 403), ("10.0.0.7", 403), ("127.0.0.1.evil", 403)):
            request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Host": host})
            try:
                with urllib.request.urlopen(request, timeout=5) as r:
                    got, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                got, body = e.code, e.read()
            assert got == status, (host, got, body)
            if status == 403:
                assert body.startswith(b"forbidden: this endpoint listens on loopback"), body
    finally:
        server.shutdown()
        thread.join(5)
    assert endpoint.host_is_loopback("127.0.0.53") and endpoint.host_is_loopback("db.localhost:9")
    assert not endpoint.host_is_loopback("localhost.attacker.example")


def test_serve_waits_for_a_file_descriptor_instead_of_spinning():
    """accept() failing with EMFILE leaves the listening socket readable: serve_forever would call
    it again at once, using a whole core. The server waits a moment, and says so once."""
    import errno

    class NoDescriptors:
        def accept(self):
            raise OSError(errno.EMFILE, "Too many open files")

    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log)
    try:
        real, server.socket = server.socket, NoDescriptors()
        started = time.monotonic()
        for _ in range(3):
            with pytest.raises(OSError):
                server.get_request()
        assert time.monotonic() - started >= 3 * endpoint.NO_DESCRIPTOR_WAIT_S
        assert log.lines == ["precisionprobe serve: cannot accept connections for now: Too many open files "
                             "(waiting for open ones to close)"]
    finally:
        server.socket = real
        server.server_close()


def test_serve_takes_an_ipv6_address_in_brackets_as_urls_write_it():
    # Before, '[::1]' went to getaddrinfo as it was: "Name or service not known".
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    with endpoint.listen("[::1]", 0, lambda: "# EOF\n") as server:
        assert server.address_family == socket.AF_INET6 and server.server_address[0] == "::1"


def test_the_cache_reads_again_only_when_the_database_changed(tmp_path):
    database = tmp_path / "x.db"
    database.write_bytes(b"one")
    reads = []
    cached = endpoint.when_changed(lambda: reads.append(1) or str(len(reads)), [database, tmp_path / "x.db-wal"])
    assert (cached(), cached()) == ("1", "1")
    time.sleep(0.01)
    (tmp_path / "x.db-wal").write_bytes(b"wal")
    assert cached() == "2"
    database.write_bytes(b"three")
    assert (cached(), cached()) == ("3", "3")


def test_serve_with_retention_keeps_the_last_minutes(tmp_path):
    """`serve --retention-minutes 2` on a five-minute job: its refresh keeps the last 2 minutes
    of events and samples in the database, while the per-layer means count every call and the
    estimator every window."""
    t0, second, uuid = 1_700_000_000, 10**9, "GPU-5e7e0000-0000-4000-8000-000000000000"
    rng = random.Random(5)
    calls = [(t, t * second + rng.randrange(200, 800) * 10**6) for t in range(t0, t0 + 300)]  # 0.2-0.8 s each
    events = tmp_path / "events"
    events.mkdir()
    (events / "events-node-1.jsonl").write_text("".join(
        json.dumps({"job_id": "long", "host_name": "node", "ip": "10.0.0.1", "pod": "long-0", "namespace": "ml",
                    "gpu_uuid": uuid, "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 100, "epoch": 0,
                    "batch": t - t0, "layer": "fc", "layer_type": "Linear", "forward": True,
                    "t_start_ns": t * second, "t_end_ns": end, "cpu_num": 4.0}) + "\n"
        for t, end in calls))
    database = tmp_path / "long.db"
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")
    # The GPU's samples, stored at the ends of their 1 s windows: the share of each the call ran
    # (stored samples that cover the events are taken as they are: no Prometheus is asked).
    busy = {t + 1: (end - t * second) / second for t, end in calls}
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, 'DCGM_FI_PROF_SM_ACTIVE', ?, ?)",
                     [(uuid, t * 1000, busy.get(t, 0.0)) for t in range(t0 + 1, t0 + 400)])
    conn.commit()
    conn.close()

    log = open(tmp_path / "serve.log", "w")
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
    port = free_port()
    server = processes.start([sys.executable, "-m", "precisionprobe", "serve", str(events), "--db", str(database),
                              "--final", "--retention-minutes", "2", "--port", str(port)], log, env=env)
    try:
        wait_ready(f"http://127.0.0.1:{port}/metrics", server, "precisionprobe serve", 60)
    finally:
        processes.stop(server)
        log.close()
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    left, dropped = conn.execute("SELECT (SELECT count(*) FROM pp_events), (SELECT sum(events) FROM pp_dropped_events)"
                                 ).fetchone()
    assert 0 < left < 150 and left + dropped == 300
    kept = conn.execute("SELECT f.folded_through_ms - min(s.ts_ms) FROM pp_fold_state AS f, pp_samples AS s").fetchone()
    assert kept[0] < 120_000
    calls_counted, mean = conn.execute("SELECT pp_mean_count(state), pp_mean_value(state) FROM layer_state "
                                       "WHERE layer = 'fc' AND metric = '_duration'").fetchone()
    assert calls_counted == 300 and mean == pytest.approx(sum(end - t * second for t, end in calls) / 300 / second)
    # The estimates still saw the whole job: the windows removed are in the estimator's state, so
    # the report has no finding about the minutes kept.
    report = json.loads(precisionprobe("analyze", events, "--db", database, "--no-refresh", "--format", "json").stdout)
    (job,) = report["jobs"]
    assert job["estimate_minutes"] is None and job["minutes"] == pytest.approx(5, abs=0.05)
    assert not any("kept their events (event_retention_minutes)" in f for f in job["findings"]), job["findings"]
    seen = conn.execute("SELECT max(windows) FROM layer_type_estimates WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'"
                        ).fetchone()[0]
    state = conn.execute("SELECT sum(windows) FROM pp_estimator_state WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
                         "AND grouping = 'layer_type' AND shift = 0").fetchone()[0]
    assert state > 0 and seen / 60 == pytest.approx(5, abs=0.1)  # 1 s windows
    errors = precisionprobe("serve", events, "--port", "0", "--retention-minutes", "-1", check=False)
    assert errors.stderr == "python3 -m precisionprobe serve: --retention-minutes: must be 0 or more, got -1\n"
    # Past SQLite's integers too: the setting's range, not a traceback.
    huge = precisionprobe("serve", events, "--port", "0", "--retention-minutes", "99999999999999999999", check=False)
    assert huge.returncode == 1 and huge.stderr == (
        "python3 -m precisionprobe serve: --retention-minutes: pp_config: setting 'event_retention_minutes' needs "
        "an integer from 0 to 52560000, got '99999999999999999999'\n"), huge.stderr


def test_a_refresh_loop_over_a_running_job_leaves_out_that_its_newest_events_wait(monkeypatch):
    """serve --refresh-seconds over a running job printed, at every refresh, that its newest
    events are not folded yet (what every refresh of a running job says): some 17,000 lines a day
    at 5 s. A loop's refreshes (running=True) leave that warning out, and print the others."""
    import io

    from precisionprobe.analysis import refresh as refresh_module

    waiting = ("pp_refresh: 120 events (the last 7 s) are not folded yet: while a job may still write events, the "
               "fold waits 60 s (attribution_margin_seconds)")
    other = "pp_refresh: GPU GPU-1 has no samples of DCGM_FI_PROF_SM_ACTIVE in the time folded"
    monkeypatch.setattr(refresh_module, "_refresh_once", lambda *_: ({"events_waiting": 120}, [waiting, other]))
    for running, printed in ((False, [waiting, other]), (True, [other])):
        stream = io.StringIO()
        refresh_module.refresh(None, "events", stream=stream, running=running)
        assert stream.getvalue().splitlines() == [f"precisionprobe: warning: {w}" for w in printed]
