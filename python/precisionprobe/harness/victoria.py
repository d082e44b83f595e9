"""VictoriaMetrics on loopback (Debian's victoria-metrics), fed through its import API."""
import urllib.request
from pathlib import Path

from . import processes
from .ports import free_port, wait_ready


def serve(work, ready_seconds=60):
    """Starts VictoriaMetrics with its storage in WORK/victoria-data and its log in
    WORK/victoria.log, 100 years of retention and no search latency offset (samples are
    queryable as soon as they are flushed); returns (process, url) once /health answers (if it
    never does, ports.wait_ready stops it)."""
    work = Path(work)
    port = free_port()
    with open(work / "victoria.log", "w") as log:
        process = processes.start(
            ["victoria-metrics", f"-storageDataPath={work / 'victoria-data'}",
             f"-httpListenAddr=127.0.0.1:{port}", "-retentionPeriod=100y", "-search.latencyOffset=0s"], log)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/health", process, "victoria-metrics", ready_seconds)
    return process, url


def import_lines(url, lines):
    """Imports Prometheus exposition lines (millisecond timestamps) through
    /api/v1/import/prometheus, then flushes, so that queries see them at once."""
    body = "".join(lines).encode()
    request = urllib.request.Request(url + "/api/v1/import/prometheus", data=body, method="POST")
    urllib.request.urlopen(request, timeout=60).read()
    urllib.request.urlopen(url + "/internal/force_flush", timeout=60).read()


def start(work, lines):
    """serve() and import_lines(); returns (process, url)."""
    process, url = serve(work)
    try:
        import_lines(url, lines)
    except BaseException:
        processes.stop(process)
        raise
    return process, url
