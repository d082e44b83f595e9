"""Two jobs on one emulated GPU through the real pipeline: the co-location emulator's recording
(emulator/colocation.py; realistic timing, 100 ms, 0.5% noise, 3 minutes) backfilled with
promtool, served by a real Prometheus, read by pp_refresh, and each job's rows compared with that
job's own truth (the values of its layers running alone).

What the engine promises for jobs that share a GPU: it finds the pair (colocated_spans) and warns;
under time-slicing, where one job's layer runs at a time, it estimates both jobs' layers together,
and every row it calls identified is within 5% of that job's truth, with 90% intervals that hold
the truth in at least 85% of rows; under concurrency (MPS), where both jobs' layers overlap,
whatever it calls identified is still right; FB_USED rows of a shared GPU are never identified
(memory of co-resident processes adds up)."""
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import extension_path
from precisionprobe.emulator import colocation
from precisionprobe.emulator.profile import FB_USED, METRICS, Profile
from precisionprobe.harness import prometheus, processes

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")

WRONG = 0.05      # an identified row further than this from its job's truth is wrong
COVERAGE = 0.85   # 90% intervals hold the truth in at least this share of rows


def recorded(tmp_path_factory, sharing, one_job=False):
    """Two jobs sharing the GPU for 3 minutes; the engine's tables after one pp_refresh over a
    real Prometheus. Yields (recording, connection, what pp_refresh returned, its warnings, the
    estimate rows of both jobs (job_rows: the views solve their systems when read, so once)).
    one_job: the two processes are ranks of one job, of one model (the same activity and call
    durations), under the first job's id."""
    work = tmp_path_factory.mktemp(f"colocation-{sharing}{'-one-job' if one_job else ''}")
    scales = dict(duration_scales=[1, 1], activity_scales=[1, 1]) if one_job else {}
    rec = colocation.record(180, 100, 0.005, 21, Profile.named("dlrm"), jobs=2, sharing=sharing, **scales)
    if one_job:
        rec.jobs[1].job_id = rec.jobs[0].job_id
    paths = colocation.write(rec, work / "out")
    process, url = prometheus.start_backfilled(Path(paths["openmetrics"]), work)
    try:
        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(extension_path())
        conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
        refresh = conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(work / "out" / "events"),)).fetchone()
        warnings = conn.execute("SELECT pp_last_warnings()").fetchone()[0] or ""
        yield rec, conn, refresh, warnings, job_rows(conn, rec)
    finally:
        processes.stop(process)


@pytest.fixture(scope="module")
def time_sliced(tmp_path_factory):
    yield from recorded(tmp_path_factory, "time-sliced")


@pytest.fixture(scope="module")
def concurrent(tmp_path_factory):
    yield from recorded(tmp_path_factory, "concurrent")


@pytest.fixture(scope="module")
def concurrent_ranks(tmp_path_factory):
    yield from recorded(tmp_path_factory, "concurrent", one_job=True)


def job_rows(conn, rec):
    """Per estimate row of both jobs: (job index, view, group, metric, estimate, lower90, upper90,
    identified, truth), from layer_type_estimates (group: layer type, direction) and
    layer_estimates (group: layer, direction); '(untracked)' has no truth and is left out."""
    index = {job.job_id: job.index for job in rec.jobs}
    truths = [(rec.job_recording(j).type_truth(), rec.job_recording(j).layer_truth()) for j in range(len(rec.jobs))]
    out = []
    for view, column, which in (("layer_type_estimates", "layer_type", 0), ("layer_estimates", "layer", 1)):
        for job_id, group, forward, metric, estimate, lower, upper, confidence in conn.execute(
                f"SELECT job_id, {column}, forward, metric, estimate, lower90, upper90, confidence FROM {view} "
                f"WHERE {column} <> '(untracked)'"):
            j = index[job_id]
            truth = truths[j][which][(group, bool(forward))][METRICS.index(metric)]
            out.append((j, view, (group, bool(forward)), metric, estimate, lower, upper,
                        confidence == "identified", truth))
    return out


def wrong_rows(rows):
    return [r for r in rows if r[7] and abs(r[4] - r[8]) > WRONG * abs(r[8])]


def assert_the_pair_is_found(rec, conn, refresh, warnings, _rows):
    events = int(refresh[0])
    assert events == sum(len(job.events) for job in rec.jobs)
    pairs = conn.execute("SELECT uuid, job_a, job_b, seconds FROM colocated_spans").fetchall()
    assert len(pairs) == 1, pairs
    uuid, job_a, job_b, seconds = pairs[0]
    assert uuid == rec.gpu.uuid and {job_a, job_b} == {job.job_id for job in rec.jobs}
    assert seconds > 170  # both ran for the whole 3 minutes
    assert "was shared by jobs" in warnings and all(job.job_id in warnings for job in rec.jobs)
    assert conn.execute("SELECT count(DISTINCT job_id) FROM layer_type_estimates").fetchone()[0] == 2


def test_time_sliced_jobs_are_found_to_share_the_gpu(time_sliced):
    assert_the_pair_is_found(*time_sliced)


def test_time_sliced_estimates_hold_each_jobs_own_truth(time_sliced):
    """Each job's identified rows within 5% of that job's values; 90% intervals holding them in
    at least 85% of its rows (per view)."""
    rec, _, _, _, rows = time_sliced
    activity = [r for r in rows if r[3] != FB_USED]
    assert not wrong_rows(activity), wrong_rows(activity)[:5]
    for j in range(len(rec.jobs)):
        for view in ("layer_type_estimates", "layer_estimates"):
            mine = [r for r in activity if r[0] == j and r[1] == view and r[5] is not None]
            assert len(mine) >= 50  # 10 (type, direction) groups or 42 (layer, direction) x 5 metrics
            held = sum(r[5] <= r[8] <= r[6] for r in mine) / len(mine)
            assert held >= COVERAGE, (rec.jobs[j].job_id, view, f"{100 * held:.1f}% of {len(mine)} rows")


def test_time_sliced_rows_of_each_job_are_identified(time_sliced):
    """Taking turns, the jobs' layers mix differently in every window, so a joint system
    separates them: in 3 minutes each job has activity rows identified (least squares over these
    windows identifies about a third of the 100 (job, type, direction, metric) rows)."""
    rec, _, _, _, rows = time_sliced
    rows = [r for r in rows if r[1] == "layer_type_estimates" and r[3] != FB_USED]
    identified = [sum(r[7] for r in rows if r[0] == j) for j in range(len(rec.jobs))]
    assert min(identified) >= 5, identified


def test_memory_of_a_shared_gpu_is_never_identified(time_sliced, concurrent):
    """FB_USED reads the sum of both processes' memory: no job's own."""
    for rec, _, _, _, rows in (time_sliced, concurrent):
        fb = [r for r in rows if r[3] == FB_USED]
        assert fb and not any(r[7] for r in fb)


def test_concurrent_jobs_are_found_and_nothing_identified_is_wrong(concurrent):
    """Under MPS both jobs' layers run at once in most windows: the engine leaves those out, so
    few rows if any are identified, and those that are hold their job's truth."""
    rec, _, _, _, rows = concurrent
    assert_the_pair_is_found(*concurrent)
    assert colocation.busy_share(rec, 2) > 0.3  # the recording really overlaps
    assert rows and not wrong_rows(rows), wrong_rows(rows)[:5]


def test_ranks_of_one_job_running_at_once_are_estimated_from_their_turns(concurrent_ranks):
    """Two ranks of one job on one GPU under MPS: no pair of jobs, but the windows in which the
    ranks ran at once are left out of the job's system as they are for two jobs (before, one such
    window stopped every estimate of the job), and the windows in which one rank ran identify
    rows that hold the job's truth. FB_USED is left out: it reads both ranks' memory, and the
    job's layers are of both."""
    rec, conn, _, warnings, rows = concurrent_ranks
    assert conn.execute("SELECT count(*) FROM colocated_spans").fetchone()[0] == 0
    assert "was shared by" not in warnings
    left_out = conn.execute("SELECT min(concurrent_windows) FROM pp_estimates('layer_type') "
                            "WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'").fetchone()[0]
    assert left_out > 100
    activity = [r for r in rows if r[3] != FB_USED and r[1] == "layer_type_estimates"]
    assert not wrong_rows(activity), wrong_rows(activity)[:5]
    assert sum(r[7] for r in activity) >= 5


def test_the_report_of_a_job_on_a_shared_gpu_counts_as_untracked_only_the_time_no_job_ran(time_sliced):
    """analyze's report took the job's span less its own calls as its untracked time, so the other
    job's calls read as this one's functional operations and optimizer (57% where 4% of the
    time had no layer of either job running); it takes the engine's measure on a shared GPU."""
    from precisionprobe.analysis.report import read_report

    rec, conn, _, _, _ = time_sliced
    idle = 1 - colocation.busy_share(rec)  # no job's layer ran
    for job in rec.jobs:
        report = read_report(conn, job.job_id)
        assert report.shared_with is not None
        assert report.untracked_share == pytest.approx(idle, abs=0.02), (job.job_id, report.untracked_share, idle)
