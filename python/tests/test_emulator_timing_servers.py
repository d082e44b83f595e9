"""The emulator's realistic timing through a real Prometheus: an offline recording backfilled with
promtool stores exactly the times and values of samples_truth.csv, and a Prometheus scraping the
live emulator every 100 ms stores its own scrape times (the exposition has no timestamps) with
the values of the windows the emulator says it served (its /served endpoint, test support)."""
import csv
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import child_environment, wait_for
from precisionprobe.emulator import offline, timing
from precisionprobe.emulator.exposition import format_value
from precisionprobe.emulator.noise import measure
from precisionprobe.emulator.profile import FB_USED, GPU_UTIL, METRICS, Profile
from precisionprobe.emulator.timeline import dlrm_timeline
from precisionprobe.emulator.timing import Timing
from precisionprobe.emulator.truth import Timeline
from precisionprobe.harness import processes, prometheus
from precisionprobe.harness.prometheus import newest_sample_ms

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")
UTIL, FB = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)


def raw_samples(url, metric, uuid, end_s, seconds):
    """[(ts_ms, value)] that Prometheus stored for the series in (end_s - seconds, end_s]."""
    query = urllib.parse.urlencode({"query": f'{metric}{{UUID="{uuid}"}}[{int(seconds * 1000)}ms]',
                                    "time": f"{end_s:.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=30) as r:
        result = json.loads(r.read())["data"]["result"]
    assert len(result) == 1, result
    return [(round(float(t) * 1000), float(v)) for t, v in result[0]["values"]]


def test_backfilled_realistic_recording_stores_the_times_and_values_of_samples_truth(tmp_path):
    rec = offline.record(60, 100, 0.005, 11, Profile.named("dlrm"), timing=Timing(scrape_interval_ms=97))
    paths = offline.write(rec, tmp_path / "out")
    with open(paths["samples_truth"]) as f:
        truth = list(csv.DictReader(f))
    assert sum(r["repeat"] == "1" for r in truth) > 0  # scraping faster than DCGM: repeats
    process, url = prometheus.start_backfilled(Path(paths["openmetrics"]), tmp_path)
    try:
        end_s = rec.start_ns / 1e9 + rec.seconds + rec.tail_seconds + 1  # the idle tail after the recording too
        for m, metric in enumerate(METRICS):
            rows = raw_samples(url, metric, rec.gpu.uuid, end_s, rec.seconds + rec.tail_seconds + 2)
            assert [t for t, _ in rows] == [int(r["ts_ms"]) for r in truth], metric
            printed = [float(format_value(metric, v)) for v in rec.samples[:, m]]
            np.testing.assert_allclose([v for _, v in rows], printed, rtol=0, atol=1e-12, err_msg=metric)
            values = np.array([v for _, v in rows])
            repeat = np.array([r["repeat"] == "1" for r in truth])
            assert np.array_equal(values[repeat], values[np.flatnonzero(repeat) - 1])  # a repeat is the same
    finally:
        processes.stop(process)


def write_events(path, start_ns, seconds, seed):
    """A DLRM-like timeline from start_ns (maybe in the future) as hook-client-style lines, written
    under a temporary name and renamed, so the emulator reads them whole; returns the events."""
    events = dlrm_timeline(start_ns, seconds, seed)
    lines = [json.dumps({"job_id": "timing", "gpu_uuid": "cpu", "gpu": None, "layer": events.layers[lid][0],
                         "layer_type": events.layers[lid][1], "forward": bool(fwd),
                         "t_start_ns": int(s), "t_end_ns": int(e)})
             for lid, fwd, s, e in zip(events.layer_id.tolist(), events.forward.tolist(),
                                       events.t_start_ns.tolist(), events.t_end_ns.tolist())]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(path)
    return events


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def test_prometheus_stores_scrape_times_and_the_values_of_the_windows_served(tmp_path):
    profile = Profile.named("dlrm")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # A 3% drift makes the 103 ms DCGM windows fall behind the 100 ms scrapes: repeats in seconds.
    emulator = processes.start(
        [sys.executable, "-m", "precisionprobe.emulator", "live", "--events", str(run_dir), "--profile", "dlrm",
         "--port", "0", "--interval-ms", "100", "--noise", "0.005", "--seed", "2", "--dcgm-drift-ppm", "30000",
         "--duration", "60"],
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prometheus_process = None
    try:
        first_line = emulator.stdout.readline()
        assert "serving http://127.0.0.1:" in first_line, first_line + emulator.stderr.read()
        port = int(first_line.split("http://127.0.0.1:")[1].split("/")[0])
        uuid = re.search(r"\((GPU-[0-9a-f-]+)\)", first_line).group(1)
        assert "timing realistic: no timestamps" in emulator.stdout.readline()
        base = f"http://127.0.0.1:{port}"
        prometheus_process, url = prometheus.scrape([port], tmp_path, interval_ms=100)
        wait_for(lambda: newest_sample_ms(url, uuid), 30, "the first scraped sample")

        start_ns = time.time_ns() + 1500 * 10**6  # ahead, so that the emulator has read them in time
        events = write_events(run_dir / "events-timing-1.jsonl", start_ns, 6, seed=3)
        end_ms = int(events.t_end_ns[-1]) // 10**6
        wait_for(lambda: (newest_sample_ms(url, uuid) or 0) > end_ms + 800, 30, "samples past the events")
        text = get(base + "/metrics")
        served = json.loads(get(base + "/served"))
        stored = {metric: raw_samples(url, metric, uuid, time.time(), 120) for metric in METRICS}
        processes.stop(emulator, timeout=15)
        summary = emulator.stderr.read()
    finally:
        processes.stop(emulator, prometheus_process, timeout=15)
    assert f"followed {len(events)} events, 0 on no emulated GPU, 0 late" in summary, summary

    # No timestamps in the exposition: a sample line is `name{labels} value`.
    lines = [line for line in text.splitlines() if line.startswith("DCGM_")]
    assert len(lines) == 6 and all(len(line.rsplit("} ", 1)[1].split()) == 1 for line in lines)

    t = Timing(**served["timing"])  # resolved: every parameter as the emulator used it
    assert t.dcgm_drift_ppm == 30000 and t.exporter_latency_ms == 300 and t.exporter == "on-scrape"
    scrapes = [s for s in served["served"] if (s["agent"] or "").startswith("Prometheus/")]
    request_ns = np.array([s["t_ns"] for s in scrapes])
    ts = np.array([t for t, _ in stored[GPU_UTIL]])
    assert len(ts) >= 50
    for metric in METRICS:
        assert [t for t, _ in stored[metric]] == ts.tolist()

    # Each stored sample is the scrape that reached the emulator just after its stored time.
    index = np.searchsorted(request_ns, ts * 10**6, side="left")
    assert np.all(index < len(scrapes))
    delay_ms = (request_ns[index] - ts * 10**6) / 1e6
    assert np.all((delay_ms >= 0) & (delay_ms < 90)), delay_ms
    matched = [scrapes[i] for i in index]
    for m, metric in enumerate(METRICS):
        assert [v for _, v in stored[metric]] == [s["values"][0][m] for s in matched], metric

    # Served a window that ended 300 ms (+- jitter) to one period before the request reached the
    # emulator, and stored at Prometheus' own scrape time, which is up to the delay earlier (a
    # loaded machine delays the request, not the time Prometheus stores).
    window_end_ms = np.array([s["window_end_ns"] for s in matched]) / 1e6
    offset = ts - window_end_ms
    served_after_ms = offset + delay_ms
    assert np.all(served_after_ms >= 300 - 10) and np.all(served_after_ms <= 300 + 103 + 10), served_after_ms
    windows = np.array([s["window"] for s in matched])
    repeat = np.concatenate([[False], np.diff(windows) == 0])
    assert repeat.sum() >= 1  # DCGM's windows are longer than the scrape interval
    values = np.array([[v for _, v in stored[metric]] for metric in METRICS]).T
    assert np.array_equal(values[repeat], values[np.flatnonzero(repeat) - 1])

    # The served values are the model's for those windows, from the events.
    timeline = Timeline(events.t_start_ns, events.t_end_ns,
                        [profile.value(events.layers[lid][0], events.layers[lid][1], fwd)
                         for lid, fwd in zip(events.layer_id.tolist(), events.forward.tolist())], profile.idle)
    during = [s for s in matched if s["window_begin_ns"] > events.t_start_ns[0]
              and s["window_end_ns"] < events.t_end_ns[-1]]
    assert len(during) >= 30
    for s in during:
        assert s["window_end_ns"] == timing.dcgm_end_ns(t, served["origin_ns"], s["window"])
        assert s["util_window"] == timing.util_window_at(t, served["origin_ns"], s["window_end_ns"])
        truth = timeline.means([s["window_begin_ns"]], [s["window_end_ns"]])[0]
        truth[UTIL] = timeline.means([s["util_begin_ns"]], [s["util_end_ns"]])[0, UTIL]
        truth[FB] = timeline.value_at([s["instant_ns"]])[0, FB]
        expected = measure(truth, 0, [s["window"]], 0.005, 0.0, 2, util_ticks=[s["util_window"]])[0]
        printed = [float(format_value(metric, v)) for metric, v in zip(METRICS, expected)]
        # %f keeps 6 decimals; an integer field may round the other way at .5
        difference = np.abs(np.array(s["values"][0]) - printed)
        assert np.all(difference <= [1, 1, 1.1e-6, 1.1e-6, 1.1e-6, 1.1e-6]), (s, printed)
    assert any(s["values"][0][UTIL] > 0 for s in during)  # the layers show up
