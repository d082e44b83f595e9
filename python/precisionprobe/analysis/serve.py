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

Each connection holds a thread and a file descriptor, so that clients cannot use them all up
and leave none for Prometheus (a scanner, a slow-loris client on --listen 0.0.0.0): a request
(its line and headers) must arrive within REQUEST_DEADLINE_S however slowly its bytes come, a
connection silent for REQUEST_TIMEOUT_S while the answer is written is closed, one client
address has at most MAX_CONNECTIONS_PER_CLIENT connections open and all of them together
MAX_CONNECTIONS (more are closed at once), and when the process has no descriptor left it waits
for one instead of polling the listening socket.

Listening on a loopback address, only requests for a loopback name (Host: localhost, 127.0.0.1,
[::1], this machine's name) are answered: a web page in a browser on the machine could otherwise
read the profile by rebinding its own domain name to 127.0.0.1.
"""
import errno
import ipaddress
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .._version import __version__
from .openmetrics import content_type
from .render import shown

REQUEST_TIMEOUT_S = 30  # per read or write of a connection: a scrape's request comes at once
REQUEST_DEADLINE_S = 10  # for the whole request line and headers, however slowly they come
MAX_CONNECTIONS = 256  # open at once (a thread and a file descriptor each), well under the usual 1024 descriptors
MAX_CONNECTIONS_PER_CLIENT = 16  # from one address: Prometheus needs one or two
NO_DESCRIPTOR_WAIT_S = 0.1  # accept() failed for want of a file descriptor: wait before the next
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


def _loopback(address):
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def host_is_loopback(host):
    """Whether a Host header names this machine by a loopback name: localhost (and names below
    it), a loopback address (IPv6 in brackets), or the machine's own name, with or without a port."""
    host = host.strip().lower()
    if host.startswith("["):
        name = host[1:host.find("]")] if "]" in host else host[1:]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    name = name.rstrip(".")
    return (name == "localhost" or name.endswith(".localhost") or _loopback(name)
            or name == socket.gethostname().lower())


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, family, prog, stream, max_connections, max_per_client):
        self.address_family = family
        self.prog, self.stream = prog, stream or sys.stderr
        self.max_connections, self.max_per_client = max_connections, max_per_client
        self._open = {}  # accepted connection -> its client address, until it is shut down
        self._open_lock = threading.Lock()
        self._said_no_descriptor = None  # when the last line about it was written
        super().__init__(address, handler)
        self.loopback_only = _loopback(self.server_address[0])

    def get_request(self):
        try:
            return super().get_request()
        except OSError as e:
            # The listening socket stays readable: without a wait, serve_forever would spin.
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                now = time.monotonic()
                if self._said_no_descriptor is None or now - self._said_no_descriptor > 60:
                    print(f"{self.prog}: cannot accept connections for now: {e.strerror} (waiting for open "
                          "ones to close)", file=self.stream, flush=True)
                    self._said_no_descriptor = now
                time.sleep(NO_DESCRIPTOR_WAIT_S)
            raise

    def verify_request(self, request, client_address):
        """Past the caps, a connection is closed at once (silently: a client making that many is
        not one whose log to fill)."""
        with self._open_lock:
            client = client_address[0]
            if (len(self._open) >= self.max_connections
                    or sum(1 for c in self._open.values() if c == client) >= self.max_per_client):
                return False
            self._open[request] = client
        return True

    def shutdown_request(self, request):
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        """One line instead of socketserver's traceback; none for a client that hung up."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            print(f"{self.prog}: request from {client_address[0]} failed: {error!r}", file=self.stream, flush=True)


def _handler(read, prog, stream, timeout, deadline):
    stream = stream or sys.stderr

    class Handler(BaseHTTPRequestHandler):
        head_only = False

        def setup(self):
            self.timeout = timeout  # (StreamRequestHandler.setup sets it on the socket)
            super().setup()
            # Each read of the request waits at most `timeout`; this bounds them all together.
            self._deadline = threading.Timer(deadline, self._hang_up)
            self._deadline.daemon = True
            self._deadline.start()

        def _hang_up(self):
            try:
                self.connection.shutdown(socket.SHUT_RDWR)  # (the blocked read returns; handle() ends)
            except OSError:
                pass

        def parse_request(self):  # (the request line and headers are read in here)
            parsed = super().parse_request()
            self._deadline.cancel()
            return parsed

        def finish(self):
            self._deadline.cancel()
            super().finish()

        def version_string(self):  # the Server header
            return f"precisionprobe/{__version__}"

        def do_HEAD(self):  # what GET answers, without the body
            self.head_only = True
            self.do_GET()

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            host = self.headers.get("Host")
            if self.server.loopback_only and host is not None and not host_is_loopback(host):
                self._answer(403, "text/plain; charset=utf-8",
                             f"forbidden: this endpoint listens on loopback and answers requests for a loopback "
                             f"name (localhost, 127.0.0.1), not Host '{shown(host)[:100]}'\n".encode())
                return
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


def listen(address, port, read, prog="precisionprobe serve", stream=None, timeout=REQUEST_TIMEOUT_S,
           deadline=REQUEST_DEADLINE_S, max_connections=MAX_CONNECTIONS,
           max_connections_per_client=MAX_CONNECTIONS_PER_CLIENT):
    """The server bound to address:port (port 0: one the kernel chooses), not yet serving; a
    connection silent for timeout seconds, or whose request has not all come after deadline
    seconds, is closed, and so are connections past the caps. OSError if it cannot bind."""
    if address.startswith("[") and address.endswith("]"):  # an IPv6 address as a URL writes it: [::1]
        address = address[1:-1]
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return _Server((address, port), _handler(read, prog, stream, timeout, deadline), family, prog, stream,
                   max_connections, max_connections_per_client)


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
