"""Several jobs on one emulated GPU (emulator/colocation.py): the sharing modes, the counters they
give, each job's truth, the files, the command line. Fast: no Prometheus (see
test_emulator_colocation_prometheus.py for the pipeline)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import child_environment
from precisionprobe._event_format import EVENT_FIELDS
from precisionprobe.emulator import colocation, offline
from precisionprobe.emulator.profile import FB_USED, GPU_UTIL, METRICS, PROF_METRICS, UPPER_BOUNDS, Profile
from precisionprobe.emulator.timeline import dlrm_timeline
from precisionprobe.emulator.timing import Timing

MS = 10**6
T0 = offline.DEFAULT_START_S * 10**9
UTIL, FB = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)
ACTIVITY = [m for m in range(len(METRICS)) if m != FB]


@pytest.fixture(scope="module")
def dlrm():
    return Profile.named("dlrm")


def all_calls(rec):
    """(starts, ends, job index) of every call of every job, by start."""
    starts = np.concatenate([job.events.t_start_ns for job in rec.jobs])
    ends = np.concatenate([job.events.t_end_ns for job in rec.jobs])
    who = np.concatenate([np.full(len(job.events), job.index) for job in rec.jobs])
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order], who[order]


def alone(seconds, seed, j, scale):
    """Job j's timeline as it runs with the GPU to itself."""
    return colocation.stretched(dlrm_timeline(T0, seconds / scale, seed + j), T0, scale)


def test_time_sliced_jobs_take_turns_and_keep_their_own_calls(dlrm):
    rec = colocation.record(20, 100, 0.0, 4, dlrm, jobs=2, sharing="time-sliced")
    starts, ends, who = all_calls(rec)
    assert np.all(starts[1:] >= ends[:-1])       # one layer on the GPU at any instant
    switches = who[1:] != who[:-1]               # and a context switch between two jobs' calls
    assert np.all(starts[1:][switches] - ends[:-1][switches] >= 25_000) and rec.context_switch_us == 25
    assert set(who.tolist()) == {0, 1} and np.any(who[1:] != who[:-1])  # and they interleave
    assert colocation.busy_share(rec, 2) == 0
    for job, scale in zip(rec.jobs, (1.0, 1.25)):
        own = alone(20, 4, job.index, scale)
        n = len(job.events)
        assert 0 < n < len(own)                  # waiting: fewer calls fit in the recording
        ev = job.events
        # Same calls in the same order with the same durations; a call only ever starts later.
        assert np.array_equal(ev.layer_id, own.layer_id[:n]) and np.array_equal(ev.batch, own.batch[:n])
        assert np.array_equal(ev.t_end_ns - ev.t_start_ns, (own.t_end_ns - own.t_start_ns)[:n])
        gap = ev.t_start_ns - np.concatenate([[T0], ev.t_end_ns[:-1]])
        own_gap = own.t_start_ns[:n] - np.concatenate([[T0], own.t_end_ns[:n - 1]])
        assert np.all(gap >= own_gap) and job.waited_ns == (gap - own_gap).sum() > 0
        assert ev.t_end_ns[-1] <= T0 + 20 * 10**9


def test_concurrent_jobs_run_as_they_would_alone_and_overlap(dlrm):
    rec = colocation.record(20, 100, 0.0, 4, dlrm, jobs=2, sharing="concurrent",
                            duration_scales=[1, 0.8])
    for job, scale in zip(rec.jobs, (1, 0.8)):
        own = alone(20, 4, job.index, scale)
        assert np.array_equal(job.events.t_start_ns, own.t_start_ns) and job.waited_ns == 0
    assert colocation.busy_share(rec, 2) > 0.3  # two DLRMs each about 75% busy


def test_the_signal_by_hand():
    """Job 0 runs [0, 50) ms with values a, job 1 [25, 75) ms with b: 25 ms of a alone, 25 ms of
    both, 25 ms of b alone, then nothing, in a 100 ms window."""
    idle = np.array([0, 1000, 0, 0, 0, 0], float)
    a = np.array([80, 3000, 0.7, 0.2, 0.6, 0.5])
    b = np.array([50, 2000, 0.5, 0.1, 0.6, 0.2])
    signal = colocation.combined_signal([([T0], [T0 + 50 * MS], [a]), ([T0 + 25 * MS], [T0 + 75 * MS], [b])], idle)
    both = np.minimum(a + b, [np.inf, np.inf, 1, 1, 1, 1])  # PROF_* summed, clipped at 1
    both[UTIL] = 100 * (1 - (1 - 0.8) * (1 - 0.5))           # busy if either is: 90
    both[FB] = 3000 + 2000                                    # memory adds up
    alone_a, alone_b = a.copy(), b.copy()
    alone_a[FB], alone_b[FB] = 3000 + 1000, 1000 + 2000       # the other job's baseline stays
    gpu_idle = idle * [1, 2, 1, 1, 1, 1]
    np.testing.assert_allclose(signal.value_at([T0 + 10 * MS, T0 + 30 * MS, T0 + 60 * MS, T0 + 90 * MS]),
                               [alone_a, both, alone_b, gpu_idle])
    assert both[METRICS.index("DCGM_FI_PROF_SM_ACTIVE")] == 1.0  # 0.6 + 0.6, clipped
    np.testing.assert_allclose(signal.window_means([T0 + 100 * MS], 100 * MS)[0],
                               0.25 * (alone_a + both + alone_b + gpu_idle))


def brute_signal(jobs, idle, t):
    """The module doc's formula at instant t, job by job in plain Python."""
    running = []
    for starts, ends, values in jobs:
        i = np.searchsorted(starts, t, side="right") - 1
        running.append(values[i] if i >= 0 and t < ends[i] else None)
    out = idle.copy()
    busy_none = 1.0
    for v in running:
        if v is not None:
            out[ACTIVITY] += (v - idle)[ACTIVITY]
            busy_none *= 1 - (v[UTIL] - idle[UTIL]) / (100 - idle[UTIL])
        out[FB] += (v[FB] - idle[FB]) if v is not None else 0.0
    out[UTIL] = idle[UTIL] + (100 - idle[UTIL]) * (1 - busy_none)
    for metric in PROF_METRICS:
        m = METRICS.index(metric)
        out[m] = min(out[m], UPPER_BOUNDS[metric])
    out[FB] += (len(jobs) - 1) * idle[FB]
    return out


def brute_mean(jobs, idle, begin, end):
    """Average of brute_signal over (begin, end], piece by piece between the calls' bounds."""
    bounds = sorted({begin, end} | {int(x) for s, e, _ in jobs for x in np.concatenate([s, e]) if begin < x < end})
    total = np.zeros(len(METRICS))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        total += brute_signal(jobs, idle, lo) * (hi - lo)
    return total / (end - begin)


@pytest.mark.parametrize("sharing", colocation.SHARING)
def test_every_sample_is_the_formula_over_what_it_describes(dlrm, sharing):
    """Realistic timing (the default): PROF_* over the DCGM window, GPU_UTIL over the driver's,
    FB_USED at the poll, each from the jobs' calls by the module doc's formula."""
    rec = colocation.record(6, 100, 0.0, 9, dlrm, jobs=3, sharing=sharing)
    jobs = [(job.events.t_start_ns, job.events.t_end_ns, job.call_values) for job in rec.jobs]
    s = rec.schedule
    for k in range(0, len(rec.tick_ms), 7):
        expected = brute_mean(jobs, dlrm.idle, int(s.window_begin_ns[k]), int(s.window_end_ns[k]))
        expected[UTIL] = brute_mean(jobs, dlrm.idle, int(s.util_begin_ns[k]), int(s.util_end_ns[k]))[UTIL]
        expected[FB] = brute_signal(jobs, dlrm.idle, int(s.instant_ns[k]))[FB]
        np.testing.assert_allclose(rec.truth_means[k], expected, rtol=1e-9, atol=1e-9)
    # Noise 0: published = truth, integers rounded as dcgm-exporter prints them.
    np.testing.assert_allclose(rec.samples[:, 2:], rec.truth_means[:, 2:])
    np.testing.assert_allclose(rec.samples[:, :2], np.rint(rec.truth_means[:, :2]))
    # Three DLRMs' memory on one GPU: about three baselines, whoever runs.
    assert np.all(rec.samples[:, FB] >= 3 * dlrm.idle[FB])


def test_one_job_is_exactly_the_single_job_recording(dlrm):
    """The shared GPU is sampled as one job's: the same timing model, phases and noise."""
    for timing in (Timing(), Timing(mode="exact")):
        shared = colocation.record(20, 100, 0.005, 3, dlrm, jobs=1, timing=timing)
        single = offline.record(20, 100, 0.005, 3, dlrm, timing=timing)
        assert np.array_equal(shared.tick_ms, single.tick_ms)
        assert np.array_equal(shared.samples, single.samples)
        assert np.array_equal(shared.jobs[0].events.t_start_ns, single.events.t_start_ns)


def test_time_sliced_activity_is_whichever_job_runs(dlrm):
    """Under time-slicing a window that one job's layer fills reads that job's own value."""
    rec = colocation.record(10, 100, 0.0, 2, dlrm, jobs=2, sharing="time-sliced")
    for job in rec.jobs:
        long_calls = np.flatnonzero(job.events.t_end_ns - job.events.t_start_ns > 2 * MS)[:20]
        mid = (job.events.t_start_ns[long_calls] + job.events.t_end_ns[long_calls]) // 2
        np.testing.assert_allclose(rec.signal.value_at(mid)[:, ACTIVITY], job.call_values[long_calls][:, ACTIVITY])


def test_truth_and_events_per_job(dlrm, tmp_path):
    rec = colocation.record(3, 100, 0.0, 5, dlrm, jobs=2, sharing="concurrent", timing=Timing(mode="exact"))
    paths = colocation.write(rec, tmp_path)
    truth = json.loads(open(paths["truth"]).read())
    assert truth["colocation"]["sharing"] == "concurrent" and truth["colocation"]["jobs"] == 2
    assert truth["colocation"]["context_switch_us"] is None  # no switching: both run at once
    assert 0 < truth["colocation"]["overlap_share"] < truth["colocation"]["gpu_busy_share"] <= 1
    assert truth["idle"][FB_USED] == 2 * dlrm.idle[FB]
    first, second = truth["jobs"]
    assert (first["job_id"], first["pid"]) != (second["job_id"], second["pid"])
    assert (first["activity_scale"], second["activity_scale"]) == (1.0, 0.85)
    assert (first["duration_scale"], second["duration_scale"]) == (1.0, 1.25)
    # Each job's truth: its layers running alone; the second job's activity is 0.85 times the profile's.
    emb = dlrm.value("emb_l.0", "EmbeddingBag", True)
    for j, (entry, scale) in enumerate(((first, 1.0), (second, 0.85))):
        got = entry["layer_types"]["EmbeddingBag"]["forward"]
        for m, metric in enumerate(METRICS):
            assert got[metric] == pytest.approx(emb[m] if metric == FB_USED else scale * emb[m])
        assert entry["layers"]["emb_l.3"]["forward"] == got
        # The same numbers as the job's view of the recording gives (what tests and the bench use).
        for (kind, forward), values in rec.job_recording(j).type_truth().items():
            assert entry["layer_types"][kind]["forward" if forward else "backward"] == dict(zip(METRICS, values))
    # One event file per job, in the hook client's format, all on the one GPU.
    assert [p.rsplit("/", 2)[-2:] for p in paths["events"]] == [["events", "events-emulated-node-1.jsonl"],
                                                               ["events", "events-emulated-node-2.jsonl"]]
    for path, entry, job in zip(paths["events"], truth["jobs"], rec.jobs):
        lines = open(path).read().splitlines()
        header, events = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
        assert header["record"] == "job" and header["job_id"] == entry["job_id"] and header["pid"] == entry["pid"]
        assert len(events) == len(job.events) == entry["events"]
        assert all(list(e) == list(EVENT_FIELDS) for e in events[:50])
        assert {(e["job_id"], e["pid"], e["gpu_uuid"]) for e in events} == {(entry["job_id"], entry["pid"],
                                                                           rec.gpu.uuid)}
        assert [e["t_start_ns"] for e in events] == job.events.t_start_ns.tolist()


def test_reproducible_by_seed(dlrm):
    a = colocation.record(5, 100, 0.005, 6, dlrm, jobs=2)
    b = colocation.record(5, 100, 0.005, 6, dlrm, jobs=2)
    c = colocation.record(5, 100, 0.005, 7, dlrm, jobs=2)
    assert np.array_equal(a.samples, b.samples) and np.array_equal(a.tick_ms, b.tick_ms)
    assert all(np.array_equal(x.events.t_start_ns, y.events.t_start_ns) for x, y in zip(a.jobs, b.jobs))
    assert not np.array_equal(a.jobs[0].events.t_start_ns[:100], c.jobs[0].events.t_start_ns[:100])
    # The two jobs of one recording differ: their own seeds and scales.
    assert not np.array_equal(a.jobs[0].events.t_start_ns[:100], a.jobs[1].events.t_start_ns[:100])


@pytest.mark.parametrize("kwargs, message", [
    (dict(sharing="mps"), "--sharing 'mps'"),
    (dict(jobs=0), "--jobs"),
    (dict(duration_scales=[1]), "--duration-scales: 1 values for 2 jobs"),
    (dict(activity_scales=[1, -0.5]), "--activity-scales: scales must be positive"),
    (dict(context_switch_us=-1), "--context-switch-us must be a number from 0 to 1000000 "),
    (dict(context_switch_us=1e300), "--context-switch-us must be a number from 0 to 1000000 "),
])
def test_record_errors_name_the_parameter(dlrm, kwargs, message):
    with pytest.raises(ValueError, match=message):
        colocation.record(1, 100, 0.0, 1, dlrm, **{"jobs": 2, **kwargs})


def run_cli(*argv):
    return subprocess.run([sys.executable, "-m", "precisionprobe.emulator", "offline", *argv],
                          env=child_environment(), capture_output=True, text=True, timeout=120)


def test_cli_writes_a_shared_gpu_recording(tmp_path):
    done = run_cli("--out", str(tmp_path / "o"), "--minutes", "0.05", "-c", "100", "--jobs", "2",
                   "--sharing", "concurrent", "--duration-scales", "1,0.9", "--activity-scales", "1,0.7")
    assert done.returncode == 0, done.stderr
    assert "2 jobs sharing emulated GPU" in done.stdout and "concurrent" in done.stdout
    assert sorted(p.name for p in (tmp_path / "o" / "events").iterdir()) == [
        "events-emulated-node-1.jsonl", "events-emulated-node-2.jsonl"]
    truth = json.loads((tmp_path / "o" / "truth.json").read_text())
    assert truth["colocation"]["sharing"] == "concurrent"
    assert [j["duration_scale"] for j in truth["jobs"]] == [1.0, 0.9]
    assert [j["activity_scale"] for j in truth["jobs"]] == [1.0, 0.7]
    assert truth["timing"]["mode"] == "realistic"


@pytest.mark.parametrize("argv, message", [
    (["--sharing", "concurrent"], "--sharing applies to --jobs 2 or more"),
    (["--jobs", "0"], "--jobs must be at least 1"),
    (["--jobs", "2", "--duration-scales", "1"], "--duration-scales: 1 values for 2 jobs"),
    (["--jobs", "2", "--activity-scales", "1,lots"], "--activity-scales: not a comma-separated list"),
    (["--jobs", "2", "--sharing", "mps"], "--sharing: invalid choice"),
    (["--jobs", "2", "--sharing", "concurrent", "--context-switch-us", "5"],
     "--context-switch-us applies to --sharing time-sliced"),
])
def test_cli_errors_name_the_flag(tmp_path, argv, message):
    done = run_cli("--out", str(tmp_path / "o"), "--minutes", "0.05", *argv)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_jobs_may_end_before_the_recording_does(dlrm):
    """job_seconds: the jobs stop, the samples go on (idle activity, both baselines of memory)."""
    rec = colocation.record(8, 100, 0.0, 3, dlrm, jobs=2, job_seconds=5, timing=Timing(mode="exact"))
    assert max(job.events.t_end_ns[-1] for job in rec.jobs) <= T0 + 5 * 10**9
    after = rec.tick_ms > offline.DEFAULT_START_S * 1000 + 5100
    assert after.sum() == 79  # windows ending at 5.2 s .. 8.0 s, and the 5 s idle tail after the recording
    np.testing.assert_allclose(rec.truth_means[after][:, ACTIVITY], 0)
    np.testing.assert_allclose(rec.truth_means[after][:, FB], 2 * dlrm.idle[FB])
