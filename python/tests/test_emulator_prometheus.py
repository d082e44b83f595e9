"""Offline emulation through the real pipeline: promtool backfill, Prometheus, pp_refresh."""
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import extension_path
from precisionprobe.emulator import offline
from precisionprobe.emulator.exposition import format_value
from precisionprobe.emulator.profile import METRICS, Profile
from precisionprobe.emulator.timing import Timing
from precisionprobe.harness import prometheus, processes

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")


def connect():
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    return conn


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A 1-minute recording at 100 ms with 0.5% noise, backfilled and served by Prometheus. Its
    timing is the IDEALISED exact one (each window stored once, at its end): the accuracy checks
    below assume exact windows until the engine estimates the alignment itself."""
    work = tmp_path_factory.mktemp("emulator-offline")
    rec = offline.record(60, 100, 0.005, 11, Profile.named("dlrm"), timing=Timing(mode="exact"))
    paths = offline.write(rec, work / "out")
    process, url = prometheus.start_backfilled(Path(paths["openmetrics"]), work)
    try:
        yield rec, paths, url
    finally:
        processes.stop(process)


def test_prometheus_serves_exactly_the_published_samples(served):
    rec, _, url = served
    conn = connect()
    conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
    start, end = rec.tick_ms[0] / 1000, rec.tick_ms[-1] / 1000
    for m, metric in enumerate(METRICS):
        rows = conn.execute(
            "SELECT ts, value, json_extract(labels, '$.UUID'), json_extract(labels, '$.modelName') "
            "FROM prom_samples(?, ?, ?) ORDER BY ts", (metric, start, end)).fetchall()
        assert len(rows) == len(rec.tick_ms) == 600
        assert [round(r[0] * 1000) for r in rows] == rec.tick_ms.tolist()
        assert {r[2] for r in rows} == {rec.gpu.uuid} and rows[0][3].startswith("Emulated ")
        printed = [float(format_value(metric, v)) for v in rec.samples[:, m]]
        np.testing.assert_allclose([r[1] for r in rows], printed, rtol=0, atol=1e-12)


def test_pp_refresh_over_prometheus_equals_the_same_samples_inserted_directly(served):
    rec, paths, url = served
    via_prometheus = connect()
    via_prometheus.execute("SELECT pp_config('prometheus_url', ?)", (url,))
    events, samples, _, _, requests = map(int, via_prometheus.execute(
        "SELECT * FROM pp_refresh(?, 1)", (str(Path(paths["events"]).parent),)).fetchone())
    assert events == len(rec.events) and samples == 6 * 600 and requests >= 1

    direct = connect()  # no Prometheus: the samples go straight into pp_samples
    direct.execute("SELECT pp_install_views()")
    direct.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, ?, ?, ?)",
                       [(rec.gpu.uuid, metric, int(t), float(format_value(metric, v)))
                        for m, metric in enumerate(METRICS) for t, v in zip(rec.tick_ms, rec.samples[:, m])])
    assert direct.execute("SELECT CAST(http_requests AS INTEGER) FROM pp_refresh(?, 1)",
                          (str(Path(paths["events"]).parent),)).fetchone()[0] == 0

    query = ("SELECT layer, forward, data_num, gpu_util, gpu_mem, dram_active, fp32_active, sm_occupancy, "
             "sm_active, calls FROM layer_metrics ORDER BY layer, forward")
    a, b = via_prometheus.execute(query).fetchall(), direct.execute(query).fetchall()
    assert len(a) == 2 * 21 + 1  # 21 leaf layers, both directions, and the untracked row
    assert [r[:3] for r in a] == [r[:3] for r in b]
    as_float = lambda rows: np.array([[np.nan if v is None else v for v in r[3:9]] for r in rows], dtype=float)
    np.testing.assert_allclose(as_float(a), as_float(b), rtol=1e-12)  # NULLs (NaN) in the same places
    assert all(r[2] > 0 and r[3] is not None for r in a)  # every layer has data

    # The overlap-weighted mean of a layer is a blend of its windows, close to the recording's
    # average, not the layer's own value: the reason for the estimator.
    truth = rec.type_truth()
    emb = via_prometheus.execute("SELECT dram_active FROM layer_type_metrics WHERE layer_type = "
                                 "'EmbeddingBag' AND forward = 1").fetchone()[0]
    true_emb = truth[("EmbeddingBag", True)][METRICS.index("DCGM_FI_PROF_DRAM_ACTIVE")]
    overall = rec.samples[:, METRICS.index("DCGM_FI_PROF_DRAM_ACTIVE")].mean()
    assert abs(emb - overall) < abs(emb - true_emb)


def test_pp_deconvolve_recovers_the_long_layers_that_overlap_means_blur(served):
    """On 1 minute at 100 ms with 0.5% noise: the layer types that hold most of the GPU time come
    out within 5% of the truth, where the overlap-weighted means are more than 20% off."""
    rec, paths, url = served
    conn = connect()
    conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
    conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(Path(paths["events"]).parent),)).fetchone()
    conn.executescript("""
        CREATE TEMP TABLE fractions AS
        SELECT s.ts_ms, e.layer_type || CASE e.forward WHEN 1 THEN ' fwd' ELSE ' bwd' END AS layer_key,
               sum(min(e.t_end_ns, s.ts_ms * 1000000) - max(e.t_start_ns, (s.ts_ms - 100) * 1000000)) / 1e8 AS fraction
          FROM pp_events AS e CROSS JOIN pp_samples AS s
            ON s.uuid = e.gpu_uuid AND s.metric = 'DCGM_FI_DEV_GPU_UTIL'
           AND s.ts_ms > e.t_start_ns / 1000000 AND s.ts_ms < e.t_end_ns / 1000000 + 100
         GROUP BY 1, 2;
        CREATE TEMP TABLE rows AS
        SELECT s.metric, s.ts_ms, f.layer_key, f.fraction, s.value FROM pp_samples AS s JOIN fractions AS f USING (ts_ms)
        UNION ALL
        SELECT s.metric, s.ts_ms, '(untracked)', 1 - sum(f.fraction), s.value
          FROM pp_samples AS s JOIN fractions AS f USING (ts_ms) GROUP BY s.metric, s.ts_ms;
    """)
    truth = rec.type_truth()
    for metric in ("DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE"):
        m = METRICS.index(metric)
        result = json.loads(conn.execute("SELECT pp_deconvolve(ts_ms, layer_key, fraction, value, 0, 1) "
                                         "FROM temp.rows WHERE metric = ?", (metric,)).fetchone()[0])
        for kind in ("EmbeddingBag", "Linear"):
            for forward in (True, False):
                entry = result[f"{kind} {'fwd' if forward else 'bwd'}"]
                true_value = truth[(kind, forward)][m]
                assert abs(entry["estimate"] - true_value) < 0.05 * true_value, (metric, kind, forward, entry)
                assert entry["lower90"] <= entry["estimate"] <= entry["upper90"]
                blended = conn.execute(f"SELECT {'dram_active' if 'DRAM' in metric else 'fp32_active'} "
                                       "FROM layer_type_metrics WHERE layer_type = ? AND forward = ?",
                                       (kind, int(forward))).fetchone()[0]
                assert abs(blended - true_value) > 0.2 * true_value
