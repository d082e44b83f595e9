"""Samples as a real cluster's exporters leave them: a label spelling that changes mid-job (an
exporter upgraded or run with --use-old-namespace), an exporter deployed after the job began, a
host label in lower case, the profiling metrics missing (blank while another tool holds DCGM's
profiling), a GPU no series names. Each refresh fetches what there is and says what is missing.

The store is a real Prometheus serving promtool-filled storage on loopback; every sample is the
average of its 1 s window stamped at the window's end (sample_offset_ms = 0)."""
import json

import pytest

from conftest import stamped_windows_connection
from precisionprobe.harness import processes
from precisionprobe.harness import prometheus as prometheus_server

UUID = "GPU-c4a90000-0000-4000-8000-000000000000"
T0 = 1_700_000_000
JOB_SECONDS = 60  # events from T0 + 10 to T0 + 70
# The (call, window) pairs of the whole job: its 120 calls of 400 ms every 500 ms overlap one or
# two 1 s windows each.
WHOLE_JOB_PAIRS = 180
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_DRAM_ACTIVE",
           "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY"]


def series_labels(spelling, uuid=UUID, host="node-a", gpu="0"):
    """The labels dcgm-exporter gives a GPU's series: its UUID under `spelling` ("UUID", "uuid",
    or None for none), the host under "Hostname" (or "hostname" when spelling is "hostname")."""
    host_label = "hostname" if spelling == "hostname" else "Hostname"
    uuid_part = f'{spelling}="{uuid}",' if spelling in ("UUID", "uuid") else ""
    return f'{uuid_part}{host_label}="{host}",gpu="{gpu}"'


def serve(tmp_path, samples):
    """A Prometheus holding `samples`: (metric, labels, unix seconds, value) each."""
    lines = []
    for metric in sorted({m for m, _, _, _ in samples}):
        lines.append(f"# TYPE {metric} gauge")
        lines += [f"{m}{{{labels}}} {value} {t}.000" for m, labels, t, value in samples if m == metric]
    (tmp_path / "samples.om").write_text("\n".join(lines + ["# EOF"]) + "\n")
    return prometheus_server.start_backfilled(tmp_path / "samples.om", tmp_path)


def samples_by_second(labels_at, metrics=METRICS, first=T0, last=T0 + 80):
    """One sample a second from first to last of each metric, with the labels labels_at(t)
    gives (None: no sample); GPU_UTIL 50, FB_USED 2000, the profiling ratios 0.5."""
    value = {"DCGM_FI_DEV_GPU_UTIL": 50, "DCGM_FI_DEV_FB_USED": 2000}
    return [(m, labels_at(t), t, value.get(m, 0.5))
            for m in metrics for t in range(first, last + 1) if labels_at(t) is not None]


def write_events(path, uuid=UUID, job="j1"):
    """Two 400 ms calls a second from T0 + 10 for JOB_SECONDS."""
    lines = [json.dumps({"record": "job", "job_id": job, "params": 1000})]
    for k in range(JOB_SECONDS * 2):
        start = (T0 + 10) * 10**9 + k * 500_000_000 + 1234  # (ns, as the hook client writes)
        lines.append(json.dumps({"job_id": job, "host_name": "node-a", "ip": None, "pod": None, "namespace": None,
                                 "gpu_uuid": uuid, "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1,
                                 "pid": 1, "epoch": 0, "batch": k // 2, "layer": f"fc{k % 2}",
                                 "layer_type": "Linear", "forward": True, "t_start_ns": start,
                                 "t_end_ns": start + 400_000_000, "cpu_num": 1.0}))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def refresh(tmp_path):
    """refresh(samples, uuid=UUID) -> (connection, pp_refresh's row, its warnings): a final
    refresh of the job's events against a Prometheus holding samples."""
    started = []

    def run(samples, uuid=UUID):
        process, url = serve(tmp_path, samples)
        started.append(process)
        events = tmp_path / "events"
        events.mkdir()
        write_events(events / "j1.jsonl", uuid)
        conn = stamped_windows_connection(url)
        row = conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchone()
        warnings = json.loads(conn.execute("SELECT pp_last_warnings()").fetchone()[0])
        return conn, row, warnings

    yield run
    for process in started:
        processes.stop(process)


def stored_seconds(conn, metric="DCGM_FI_DEV_GPU_UTIL"):
    return conn.execute("SELECT count(*), min(ts_ms) / 1000, max(ts_ms) / 1000 FROM pp_samples WHERE uuid = ? "
                        "AND metric = ?", (UUID, metric)).fetchone()


@pytest.mark.parametrize("before, after", [("uuid", "UUID"), ("UUID", "uuid")])
def test_a_uuid_label_whose_spelling_changes_mid_job_gives_every_sample(refresh, before, after):
    """The series of the job's first 30 s carry one spelling, the rest the other: both passes
    fetch, and the samples cover the job as one spelling's would, with nothing said missing."""
    conn, _, warnings = refresh(samples_by_second(lambda t: series_labels(before if t < T0 + 40 else after)))
    assert stored_seconds(conn) == (71, T0 + 10, T0 + 80)
    assert warnings == []
    assert conn.execute("SELECT count(*) FROM pp_events WHERE folded = 0").fetchone() == (0,)
    assert conn.execute("SELECT sum(data_num) FROM layer_metrics WHERE job_id = 'j1'").fetchone() == (WHOLE_JOB_PAIRS,)


def test_samples_that_begin_after_the_job_did_are_said_to(refresh):
    """An exporter deployed 30 s into the job: the events before its first sample's window are
    named with their job and GPU, not folded into values that describe the rest only unsaid."""
    conn, _, warnings = refresh(samples_by_second(lambda t: series_labels("UUID"), first=T0 + 40))
    before = [w for w in warnings if "end before the first DCGM sample" in w]
    # The first sample, at T0 + 40, covers (T0 + 39, T0 + 40]; with its 1 s window and the
    # exporter's largest lag (max_sample_lag_ms, 1 s) before it, the calls that end by T0 + 38.
    assert before == [
        f"pp_refresh: 56 events of job 'j1' on GPU {UUID} (from 2023-11-14 22:13:30 to 2023-11-14 22:13:57 UTC) "
        f"end before the first DCGM sample of that GPU at {conn.execute('SELECT pp_config(?)', ('prometheus_url',)).fetchone()[0]} "
        "could begin (2023-11-14 22:13:58 UTC), so they are not attributed and the job's values describe the rest "
        "of it (did dcgm-exporter or the scrape start after the job, or Prometheus' retention drop its first "
        "samples?)"], warnings


def test_samples_from_the_start_say_nothing_missing(refresh):
    conn, _, warnings = refresh(samples_by_second(lambda t: series_labels("UUID")))
    assert warnings == []
    assert stored_seconds(conn) == (71, T0 + 10, T0 + 80)
    assert conn.execute("SELECT sum(data_num) FROM layer_metrics WHERE job_id = 'j1'").fetchone() == (WHOLE_JOB_PAIRS,)


def test_a_host_label_in_lower_case_is_matched(refresh):
    """Series without a UUID label, their host under `hostname`: matched by host and index."""
    conn, row, warnings = refresh(samples_by_second(lambda t: series_labels("hostname")))
    assert stored_seconds(conn) == (71, T0 + 10, T0 + 80)
    assert warnings == []


def test_a_gpu_without_profiling_metrics_is_named(refresh):
    """GPU_UTIL and FB_USED come, the profiling metrics do not (an exporter without them, or
    DCGM's profiling held by a profiler): the refresh names the GPU and the metrics."""
    conn, _, warnings = refresh(samples_by_second(lambda t: series_labels("UUID"), metrics=METRICS[:2]))
    assert warnings == [
        f"pp_refresh: GPU {UUID} has no samples of DCGM_FI_PROF_DRAM_ACTIVE, DCGM_FI_PROF_PIPE_FP32_ACTIVE, "
        "DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY in the time folded, which its other "
        "metrics have (an exporter without those metrics, or DCGM profiling held by another tool, such as a "
        "profiler, leaves them blank): its jobs' values of them come from their other GPUs, or are empty"]


def test_a_gpu_no_series_names_is_named_with_its_events(refresh):
    conn, row, warnings = refresh(samples_by_second(lambda t: series_labels("UUID", uuid="GPU-other", gpu="1")),
                                  uuid="GPU-unscraped")
    url = conn.execute("SELECT pp_config('prometheus_url')").fetchone()[0]
    assert warnings == [
        f"pp_refresh: 1 GPU(s) of the events have no DCGM samples at {url}: GPU-unscraped (120 events of job 'j1') "
        "(check prometheus_url, and that dcgm-exporter's series carry the events' GPU UUID in a UUID or uuid label, "
        "or their host in Hostname and the GPU's index in gpu); their events are not attributed"]
