"""An HTTP /metrics endpoint for Prometheus: `precisionprobe serve`.

serve() answers GET /metrics with what read() returns (the exposition of the database as it is
then), and, given refresh and an interval, calls refresh() every so many seconds on a thread of
its own. Only the HTTP, the timing and the cache are here: what to read and how to refresh is
the caller's (cli.py).

Reading the estimator's views takes about a second for a few minutes of recording, more for a
long job, while the database changes only when something refreshes it: when_changed() calls
read() again only when one of the files (the database and its -wal) changed size, time or inode
since the last read, and otherwise answers with the text it read then.

A scrape that fails (a database another process holds locked past the timeout, a damaged file)
is answered 500 with the one-line reason, which is printed on stderr too, so that Prometheus
marks the target down (`up == 0`) instead of storing nothing silently. A refresh that fails is a
warning on stderr; the next one tries again, and scrapes go on serving the database as the last
good refresh left it. Requests are not logged: a scrape every 15 s would fill the log.

A connection that sends no request, or half of one, or stops reading the answer, is closed after
REQUEST_TIMEOUT_S of silence: otherwise each would hold a thread and a file descriptor for ever,
and enough of them (a scanner, a slow-loris client on --listen 0.0.0.0) would leave none for
Prometheus.
"""
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .._version import __version__
from .openmetrics import content_type

REQUEST_TIMEOUT_S = 30  # per read or write of a connection: a scrape's request comes at once
INDEX = b"precisionprobe: the per-layer-type profile is at /metrics\n"


def _signature(paths):
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def when_changed(read, paths):
    """read, called again only when a file of paths changed since its last call (one call at a
    time: concurrent scrapes wait for the one reading)."""
    lock = threading.Lock()
    last = {}

    def cached():
        with lock:
            signature = _signature(paths)
            if last.get("signature") != signature:
                last["text"] = read()
                last["signature"] = signature
            return last["text"]
    return cached


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, family, prog, stream):
        self.address_family = family
        self.prog, self.stream = prog, stream or sys.stderr
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        """One line instead of socketserver's traceback; none for a client that hung up."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            print(f"{self.prog}: request from {client_address[0]} failed: {error!r}", file=self.stream, flush=True)


def _handler(read, prog, stream, timeout):
    stream = stream or sys.stderr

    class Handler(BaseHTTPRequestHandler):
        head_only = False

        def setup(self):
            self.timeout = timeout  # (StreamRequestHandler.setup sets it on the socket)
            super().setup()

        def version_string(self):  # the Server header
            return f"precisionprobe/{__version__}"

        def do_HEAD(self):  # what GET answers, without the body
            self.head_only = True
            self.do_GET()

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/":
                self._answer(200, "text/plain; charset=utf-8", INDEX)
            elif path == "/metrics":
                try:
                    body = read().encode()
                except Exception as e:  # anything: the scraper gets a 500, the log one line
                    line = f"{prog}: scrape of /metrics failed: {e}"
                    print(line, file=stream, flush=True)
                    self._answer(500, "text/plain; charset=utf-8", (line + "\n").encode())
                    return
                self._answer(200, content_type(self.headers.get("Accept")), body)
            else:
                self._answer(404, "text/plain; charset=utf-8", b"not found: the metrics are at /metrics\n")

        def _answer(self, status, ctype, body):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.head_only:
                return
            try:
                self.wfile.write(body)
            except (ConnectionError, TimeoutError):
                pass  # the scraper gave up (its scrape timeout): nothing to tell anyone

        def log_message(self, *args):
            pass

    return Handler


def _refresh_loop(refresh, seconds, stop, prog, stream):
    stream = stream or sys.stderr
    while not stop.wait(seconds):
        try:
            refresh()
        except Exception as e:  # the endpoint stays up; the next refresh tries again
            print(f"{prog}: warning: refresh failed: {e}", file=stream, flush=True)


def listen(address, port, read, prog="precisionprobe serve", stream=None, timeout=REQUEST_TIMEOUT_S):
    """The server bound to address:port (port 0: one the kernel chooses), not yet serving; a
    connection silent for timeout seconds is closed. OSError if it cannot bind."""
    if address.startswith("[") and address.endswith("]"):  # an IPv6 address as a URL writes it: [::1]
        address = address[1:-1]
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return _Server((address, port), _handler(read, prog, stream, timeout), family, prog, stream)


def serve(server, refresh=None, refresh_seconds=None, prog="precisionprobe serve", stream=None):
    """Serves until interrupted (Ctrl-C, SIGTERM turned into SystemExit by the caller); with
    refresh and refresh_seconds, refreshes on a thread every refresh_seconds meanwhile."""
    stop = threading.Event()
    if refresh is not None and refresh_seconds:
        threading.Thread(target=_refresh_loop, args=(refresh, refresh_seconds, stop, prog, stream),
                         name="precisionprobe-refresh", daemon=True).start()
    try:
        server.serve_forever()
    finally:
        stop.set()
        server.server_close()
