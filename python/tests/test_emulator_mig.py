"""MIG through the real pipeline: the emulator's GPU split into two GPU instances (4g.40gb and
1g.10gb), each running its own DLRM-like job, backfilled with promtool into a real Prometheus, and
pp_refresh on the events: each job gets its own instance's samples and its own truth back."""
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import extension_path
from precisionprobe.emulator import mig
from precisionprobe.emulator.profile import FB_USED, GPU_UTIL, METRICS, Profile
from precisionprobe.harness import prometheus, processes

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")

LAYOUT = ("4g.40gb", "1g.10gb")


def connect():
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    return conn


def copy_events(source, target, job_id, gpu_uuid):
    """The events of `source` as another job on another device, without the mig_device record."""
    with open(source) as lines, open(target, "w") as out:
        for line in lines:
            row = json.loads(line)
            if row.get("record") == "mig_device":
                continue
            if "job_id" in row:
                row["job_id"] = job_id
            if "layer" in row:
                row["gpu_uuid"] = gpu_uuid
            out.write(json.dumps(row) + "\n")


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    """Two minutes at 100 ms with 0.5% noise, realistic timing; beside the two instances' jobs, the
    events of one job copied twice: onto the parent GPU's own UUID (a whole GPU, which has no series
    of its own here), and onto a MIG device without a mapping."""
    work = tmp_path_factory.mktemp("emulator-mig")
    rec = mig.record(120, 100, 0.005, 5, Profile.named("dlrm"), LAYOUT)
    paths = mig.write(rec, work / "out")
    events = Path(paths["events"])
    first = paths["instances"][1]["events"]
    copy_events(first, events / "whole-gpu.jsonl", "whole-gpu-job", rec.parent_uuid)
    unmapped = mig.mig_uuid(rec.parent_uuid, 99)
    copy_events(first, events / "unmapped.jsonl", "unmapped-job", unmapped)
    process, url = prometheus.start_backfilled(Path(paths["openmetrics"]), work)
    try:
        conn = connect()
        conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
        summary = conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchone()
        warnings = conn.execute("SELECT pp_last_warnings()").fetchone()[0] or ""
        yield rec, conn, summary, warnings, unmapped
    finally:
        processes.stop(process)


def test_the_recorded_mapping_is_what_the_events_said(refreshed):
    rec, conn, _, _, _ = refreshed
    rows = conn.execute("SELECT mig_uuid, gpu_uuid, gpu_instance_id, profile FROM pp_mig_devices "
                        "ORDER BY gpu_instance_id").fetchall()
    assert rows == [(i.gpu.mig_uuid, rec.parent_uuid, i.gpu.gpu_instance_id, i.gpu.profile) for i in rec.instances]


def test_each_instance_s_samples_are_stored_under_its_mig_uuid_and_never_mixed(refreshed):
    rec, conn, _, _, _ = refreshed
    fb = METRICS.index(FB_USED)
    for inst in rec.instances:
        r = inst.recording
        stored = conn.execute("SELECT metric, ts_ms, value FROM pp_samples WHERE uuid = ? ORDER BY metric, ts_ms",
                              (inst.gpu.mig_uuid,)).fetchall()
        # Every published sample of its series, five metrics (no GPU_UTIL on an instance).
        assert len(stored) == len(mig.PUBLISHED) * len(r.tick_ms)
        assert {m for m, _, _ in stored} == set(mig.PUBLISHED)
        fb_values = np.array([v for m, _, v in stored if m == FB_USED])
        np.testing.assert_allclose(fb_values, np.round(r.samples[:, fb]), atol=0.5)
    # The instances' memory differs fourfold: a mix would show.
    a, b = (conn.execute("SELECT min(value), max(value) FROM pp_samples WHERE uuid = ? AND metric = ?",
                         (i.gpu.mig_uuid, FB_USED)).fetchone() for i in rec.instances)
    assert a[0] > 2 * b[1]
    # Nothing under the parent GPU's UUID: an instance's series is never its whole GPU's.
    assert conn.execute("SELECT count(*) FROM pp_samples WHERE uuid = ?", (rec.parent_uuid,)).fetchone()[0] == 0
    assert {u for (u,) in conn.execute("SELECT DISTINCT uuid FROM pp_samples")} == \
        {i.gpu.mig_uuid for i in rec.instances}


def test_each_job_s_identified_type_estimates_are_within_5_percent_of_its_own_truth(refreshed):
    rec, conn, _, _, _ = refreshed
    truths = [inst.recording.type_truth() for inst in rec.instances]
    for inst, truth, other in zip(rec.instances, truths, truths[::-1]):
        identified = closer_to_own = 0
        for metric, layer_type, forward, estimate, confidence in conn.execute(
                "SELECT metric, layer_type, forward, estimate, confidence FROM layer_type_estimates "
                "WHERE job_id = ? AND layer_type IN ('EmbeddingBag', 'Linear') AND metric <> ?",
                (inst.job_id, FB_USED)):
            assert metric != GPU_UTIL
            own = truth[(layer_type, bool(forward))][METRICS.index(metric)]
            if confidence == "identified":
                identified += 1
                assert abs(estimate - own) <= 0.05 * own, (inst.job_id, metric, layer_type, forward, estimate, own)
            theirs = other[(layer_type, bool(forward))][METRICS.index(metric)]
            closer_to_own += abs(estimate - own) < abs(estimate - theirs)
        assert identified >= 10, (inst.job_id, identified)  # of 16
        assert closer_to_own >= 14, (inst.job_id, closer_to_own)  # of 16: the instances' truths differ


def test_instances_of_one_gpu_are_not_a_shared_gpu(refreshed):
    _, conn, _, warnings, _ = refreshed
    assert conn.execute("SELECT count(*) FROM colocated_spans").fetchone()[0] == 0
    assert "was shared by" not in warnings


def test_a_whole_gpu_s_events_get_no_instance_series_and_an_unmapped_device_is_named(refreshed):
    rec, conn, _, warnings, unmapped = refreshed
    assert "1 GPU(s) of the events have no DCGM samples" in warnings  # the parent's own UUID
    assert f"MIG device {unmapped} ({len(rec.instances[0].recording.events)} events) has no row in " \
           "pp_mig_devices" in warnings
    assert f"VALUES ('{unmapped}', 'GPU-<parent>', <GPU_I_ID>)" in warnings
    for job in ("whole-gpu-job", "unmapped-job"):
        assert conn.execute("SELECT count(*) FROM pp_events WHERE job_id = ? AND folded = 1",
                            (job,)).fetchone()[0] == 0
