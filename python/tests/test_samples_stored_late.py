"""Samples that Prometheus stores late: a Prometheus agent (or any remote write) that was cut off
from the central store sends its buffered samples once it is back, minutes after they were
scraped. A refresh of a job that ended before then finds its last seconds without samples; the
events wait (events_waiting), and a later refresh, once the samples are stored, fetches and folds
them, as one refresh after they arrived does.

The store is a real Prometheus serving promtool-filled storage: first without the job's last
seconds, then restarted on the same storage and port once the rest has been added to it."""
import json

import pytest

from conftest import stamped_windows_connection
from precisionprobe.harness import processes
from precisionprobe.harness import prometheus as prometheus_server

UUID = "GPU-1a7e0000-0000-4000-8000-000000000000"
T0_MS = 1_700_000_000_000
JOB_MS = 20_000
SERIES = f'DCGM_FI_PROF_SM_ACTIVE{{UUID="{UUID}",Hostname="node-a",gpu="0"}}'
# A 50 ms call every 100 ms, from 50 ms into each window: SM_ACTIVE 0.5 while the job runs.
SAMPLES = [(T0_MS + k * 100, 0.5 if k * 100 <= JOB_MS else 0.0) for k in range(1, (JOB_MS + 80_000) // 100)]


class LateStore:
    """A Prometheus on loopback holding the samples stored through `through_ms`; store(ms)
    adds those up to ms (promtool into the same storage) and restarts it on the same port."""

    def __init__(self, work):
        self.work, self.stored_ms, self.process, self.port = work, 0, None, None

    def store(self, through_ms):
        processes.stop(self.process)
        batch = self.work / f"through-{through_ms}.om"
        lines = ["# TYPE DCGM_FI_PROF_SM_ACTIVE gauge"]
        lines += [f"{SERIES} {value} {ts / 1000:.3f}" for ts, value in SAMPLES if self.stored_ms < ts <= through_ms]
        batch.write_text("\n".join(lines + ["# EOF"]) + "\n")
        prometheus_server.backfill(batch, self.work / prometheus_server.TSDB_DIR)
        self.stored_ms = through_ms
        self.process, self.url = prometheus_server.serve(self.work, self.port)
        self.port = int(self.url.rsplit(":", 1)[1])


@pytest.fixture
def prometheus(tmp_path):
    store = LateStore(tmp_path)
    yield store
    processes.stop(store.process)


def write_events(path):
    lines = [json.dumps({"record": "job", "job_id": "late", "params": 1000})]
    for k in range(JOB_MS // 100):
        start = (T0_MS + k * 100 + 50) * 10**6 + 1234  # (ns, as the hook client writes)
        lines.append(json.dumps({"job_id": "late", "host_name": "node-a", "ip": "10.0.0.1", "pod": "late",
                                 "namespace": "ml", "gpu_uuid": UUID, "gpu": 0, "rank": 0, "local_rank": 0,
                                 "world_size": 1, "pid": 1, "epoch": 0, "batch": k, "layer": "fc",
                                 "layer_type": "Linear", "forward": True, "t_start_ns": start,
                                 "t_end_ns": start + 50 * 10**6, "cpu_num": 1.0}))
    path.write_text("\n".join(lines) + "\n")


def layer_state(conn):
    return conn.execute("SELECT layer, metric, pp_mean_count(state), pp_mean_value(state) FROM layer_state "
                        "ORDER BY layer, metric").fetchall()


def test_samples_stored_after_the_job_ended_are_fetched_by_a_later_refresh(prometheus, tmp_path):
    events = tmp_path / "events"
    events.mkdir()
    write_events(events / "late.jsonl")
    # The agent's samples of the job's last 8 s are not in the central store yet.
    prometheus.store(T0_MS + JOB_MS - 8000)
    conn = stamped_windows_connection(prometheus.url)
    waiting = conn.execute("SELECT events_waiting FROM pp_refresh(?, 1)", (str(events),)).fetchone()[0]
    assert 70 < waiting < 90
    # They arrive; the next refresh asks for them and folds every event.
    prometheus.store(T0_MS + JOB_MS + 80_000)
    added, waiting = conn.execute("SELECT samples_added, events_waiting FROM pp_refresh(?, 1)",
                                  (str(events),)).fetchone()
    assert added > 80 and waiting == 0
    assert conn.execute("SELECT count(*) FROM pp_events WHERE folded = 0").fetchone() == (0,)
    # As one refresh after the samples were stored.
    once = stamped_windows_connection(prometheus.url)
    once.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert layer_state(conn) == layer_state(once)
