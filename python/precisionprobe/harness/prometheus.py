"""Prometheus on loopback (Debian's prometheus and promtool), two ways:

  * recorded: backfill() turns an OpenMetrics file into TSDB blocks with promtool, and serve()
    serves that TSDB without scraping anything, with 100 years of retention so that old
    timestamps stay queryable; start_backfilled() does both;
  * live: scrape() starts a Prometheus that scrapes given loopback ports (DCGM emulators) every
    interval_ms, its storage in the caller's work directory; wait_scraped() and
    newest_sample_ms() tell when samples have arrived.

The functions that start a Prometheus return (process, url) once it answers /-/ready; the process
runs in its own session (processes.stop() stops it). One that never gets ready is stopped, and
SystemExit says why (ports.wait_ready).
"""
import json
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

from . import processes
from .ports import free_port, wait_ready

TSDB_DIR = "prometheus-data"  # below work: what start_backfilled() fills and serve() serves
READY_SECONDS = 60


def backfill(openmetrics, tsdb):
    """Writes the samples of an OpenMetrics file (seconds timestamps, `# EOF` last) as TSDB
    blocks into the directory tsdb: `promtool tsdb create-blocks-from openmetrics`."""
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(tsdb)],
                   check=True, stdout=subprocess.DEVNULL)


def serve(work, port=None, tsdb=None, ready_seconds=READY_SECONDS):
    """Serves the TSDB in tsdb (default WORK/prometheus-data) on 127.0.0.1:port (default a free
    port), scraping nothing; its config and log (WORK/prometheus.log, appended) go to work.
    Serving the same storage on the same port after the process stopped is a restart."""
    work = Path(work)
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    return _start(work, config, Path(tsdb) if tsdb else work / TSDB_DIR, port,
                  ["--storage.tsdb.retention.time=100y"], None, ready_seconds)


def start_backfilled(openmetrics, work):
    """backfill() the OpenMetrics file into WORK/prometheus-data and serve() it."""
    backfill(openmetrics, Path(work) / TSDB_DIR)
    return serve(work)


def scrape(targets, work, log=None, interval_ms=100, ready_seconds=READY_SECONDS, job_name="dcgm-emulator"):
    """Starts a Prometheus scraping 127.0.0.1:PORT for each port of targets every interval_ms
    (timeout 90% of it: one slow scrape does not delay the next), job name job_name, its
    storage in WORK/tsdb (the caller removes work). Output to log (an open file), default
    WORK/prometheus.log."""
    work = Path(work)
    config = work / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {interval_ms}ms\n  scrape_timeout: {max(1, interval_ms * 9 // 10)}ms\n"
        f"scrape_configs:\n  - job_name: {job_name}\n    static_configs:\n"
        f"      - targets: [{', '.join(repr(f'127.0.0.1:{port}') for port in targets)}]\n")
    return _start(work, config, work / "tsdb", None, [], log, ready_seconds)


def _start(work, config, tsdb, port, flags, log, ready_seconds):
    port = port or free_port()
    command = ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
               f"--web.listen-address=127.0.0.1:{port}", *flags]
    if log is None:
        with open(work / "prometheus.log", "a") as own_log:
            process = processes.start(command, own_log)
    else:
        process = processes.start(command, log)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url + "/-/ready", process, "prometheus", ready_seconds)
    return process, url


def newest_sample_ms(url, uuid):
    """Timestamp (ms) of the newest DCGM_FI_DEV_GPU_UTIL sample of GPU uuid that Prometheus at
    url stored in the last minute; None if there is none or Prometheus does not answer."""
    query = urllib.parse.quote(f'DCGM_FI_DEV_GPU_UTIL{{UUID="{uuid}"}}[1m]')
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?query={query}", timeout=5) as r:
            result = json.loads(r.read())["data"]["result"]
    except OSError:
        return None
    return max((round(float(t) * 1000) for series in result for t, _ in series["values"]), default=None)


def wait_scraped(url, gpus=1, seconds=30, process=None):
    """Waits until Prometheus at url holds a DCGM_FI_DEV_GPU_UTIL series of `gpus` GPUs (every
    emulator scraped); as wait_ready() does, stops process (its Popen) and raises SystemExit if
    that does not happen within `seconds`."""
    def scraped(response):
        result = json.load(response)["data"]["result"]
        return bool(result) and int(result[0]["value"][1]) >= gpus
    query = urllib.parse.urlencode({"query": "count(DCGM_FI_DEV_GPU_UTIL)"})
    wait_ready(f"{url}/api/v1/query?{query}", process, f"Prometheus scraping {gpus} emulated GPUs",
               seconds, scraped)
