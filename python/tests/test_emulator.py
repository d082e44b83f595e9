"""The DCGM emulator's parts: profiles, window averages, noise, exposition format, live following."""
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import child_environment
from precisionprobe.emulator import live, offline
from precisionprobe.emulator.exposition import (EMULATOR_NAME, EmulatedGpu, metrics_text,
                                                write_openmetrics)
from precisionprobe.emulator.noise import measure
from precisionprobe.emulator.profile import METRICS, Profile, ProfileError
from precisionprobe.emulator.timeline import dlrm_timeline
from precisionprobe.emulator.timing import Timing
from precisionprobe.emulator.truth import Timeline

MS = 10**6
T0 = 1_714_557_600 * 10**9


def values(util, fb, dram, fp32, sm, occ):
    return dict(zip(METRICS, (util, fb, dram, fp32, sm, occ)))


SMALL_PROFILE = {
    "idle": values(0, 1000, 0.0, 0.0, 0.0, 0.0),
    "layer_types": {
        "A": {"forward": values(100, 2000, 0.8, 0.2, 0.6, 0.4),
              "backward": values(90, 3000, 0.6, 0.1, 0.5, 0.3)},
        "B": {"forward": values(50, 1500, 0.2, 0.9, 0.8, 0.5),
              "backward": values(40, 1500, 0.1, 0.7, 0.7, 0.4)},
    },
    "layers": {"a_special": {"forward": values(10, 1000, 0.1, 0.1, 0.1, 0.1)}},
}

# Prometheus' text format: name{labels} value [timestamp ms]; dcgm-exporter prints integers for
# GPU_UTIL and FB_USED and %f (six decimals) for the ratios.
LABELS_RE = (r'gpu="(?P<gpu>\d+)",UUID="(?P<uuid>GPU-[0-9a-f-]{36})",pci_bus_id="[0-9A-F]{8}:[0-9A-F]{2}:00\.0",'
             r'device="nvidia(?P=gpu)",modelName="Emulated [^"]+",Hostname="[^"]+",'
             r'DCGM_FI_DRIVER_VERSION="emulated",container="[^"]*",namespace="[^"]*",pod="[^"]*"')
INT_LINE = re.compile(r"(?P<name>DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED)\{" + LABELS_RE
                      + r"\} (?P<value>\d+) (?P<ts>\d+)")
RATIO_LINE = re.compile(r"(?P<name>DCGM_FI_PROF_[A-Z0-9_]+)\{" + LABELS_RE
                        + r"\} (?P<value>[01]\.\d{6}) (?P<ts>\d+)")


@pytest.fixture
def profile():
    return Profile(SMALL_PROFILE, "small")


def test_profile_lookup_precedence(profile):
    assert profile.value("x", "A", True)[0] == 100
    assert profile.value("x", "A", False)[0] == 90
    assert profile.value("a_special", "A", True)[0] == 10    # the layer's own values first
    assert profile.value("a_special", "A", False)[0] == 90   # its type's for the other direction
    with pytest.raises(ProfileError, match="no values for layer type 'C'"):
        profile.value("x", "C", True)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["idle"].pop("DCGM_FI_PROF_SM_ACTIVE"), "missing"),
    (lambda d: d["idle"].update(DCGM_FI_PROF_SM_ACTIVE=1.5), r"outside \[0, 1\]"),
    (lambda d: d["idle"].update(DCGM_FI_DEV_GPU_UTIL=101), r"outside \[0, 100\]"),
    (lambda d: d["layer_types"]["A"].pop("backward"), "missing backward"),
    (lambda d: d["layer_types"]["A"].update(sideways={}), "unknown keys"),
    (lambda d: d["idle"].update(DCGM_FI_DEV_FB_USED="lots"), "not a number"),
])
def test_profile_validation(change, message):
    data = json.loads(json.dumps(SMALL_PROFILE))
    change(data)
    with pytest.raises(ProfileError, match=message):
        Profile(data)


def test_shipped_dlrm_profile_matches_the_papers_findings():
    p = Profile.named("dlrm")
    dram, fp32 = METRICS.index("DCGM_FI_PROF_DRAM_ACTIVE"), METRICS.index("DCGM_FI_PROF_PIPE_FP32_ACTIVE")
    for forward in (True, False):
        emb, linear = p.value("emb_l.0", "EmbeddingBag", forward), p.value("top_l.0", "Linear", forward)
        assert emb[dram] > 2 * linear[dram] and linear[fp32] > 5 * emb[fp32]
    assert "Emulated" in p.model_name


def test_window_averages_by_hand(profile):
    # A forward [50, 150) ms, B forward [150, 170) ms, A backward [260, 290) ms; 100 ms windows.
    a, b, a_bwd = (profile.value("x", t, f) for t, f in (("A", True), ("B", True), ("A", False)))
    tl = Timeline([T0 + 50 * MS, T0 + 150 * MS, T0 + 260 * MS], [T0 + 150 * MS, T0 + 170 * MS, T0 + 290 * MS],
                  [a, b, a_bwd], profile.idle)
    got = tl.window_means([T0 + k * 100 * MS for k in (1, 2, 3, 4)], 100 * MS)
    idle = profile.idle
    expected = [0.5 * a + 0.5 * idle,                    # (0, 100]: 50 ms of A
                0.5 * a + 0.2 * b + 0.3 * idle,          # (100, 200]: 50 ms A, 20 ms B
                0.3 * a_bwd + 0.7 * idle,                # (200, 300]: 30 ms A backward
                idle]                                    # (300, 400]: nothing
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # The GPU_UTIL column spelled out: 50, 0.5*100 + 0.2*50 = 60, 0.3*90 = 27, 0.
    np.testing.assert_allclose(got[:, 0], [50, 60, 27, 0])
    # A window that is not aligned to anything, and one before all events.
    np.testing.assert_allclose(tl.window_means([T0 + 175 * MS, T0], 100 * MS),
                               [0.75 * a + 0.2 * b + 0.05 * idle, idle])


def test_overlapping_events_later_start_owns_the_shared_time(profile):
    a, b = profile.value("x", "A", True), profile.value("x", "B", True)
    tl = Timeline([T0, T0 + 40 * MS], [T0 + 80 * MS, T0 + 60 * MS], [a, b], profile.idle)
    np.testing.assert_allclose(tl.window_means([T0 + 100 * MS], 100 * MS)[0],
                               0.4 * a + 0.2 * b + 0.4 * profile.idle)


def test_window_means_are_integrals_of_the_generated_timeline(profile):
    events = dlrm_timeline(T0, 5, seed=3)
    vals = np.array([[i, i * 2, 0, 0, 0, 0] for i in range(len(events))], dtype=float)
    tl = Timeline(events.t_start_ns, events.t_end_ns, vals, np.zeros(6))
    ticks = T0 + np.arange(1, 50) * 100 * MS
    got = tl.window_means(ticks, 100 * MS)
    for k in (0, 7, 31, 48):  # brute force: overlap of every event with the window
        lo, hi = ticks[k] - 100 * MS, ticks[k]
        overlap = np.clip(np.minimum(events.t_end_ns, hi) - np.maximum(events.t_start_ns, lo), 0, None)
        assert got[k, 0] == pytest.approx((overlap * vals[:, 0]).sum() / (100 * MS), rel=1e-9)


def test_timeline_is_dlrm_like_and_reproducible():
    events = dlrm_timeline(T0, 20, seed=1)
    again = dlrm_timeline(T0, 20, seed=1)
    assert np.array_equal(events.t_start_ns, again.t_start_ns)
    assert not np.array_equal(events.t_start_ns, dlrm_timeline(T0, 20, seed=2).t_start_ns)
    durations_ms = (events.t_end_ns - events.t_start_ns) / MS
    assert durations_ms.min() >= 0.1 - 1e-6 and durations_ms.max() <= 5 + 1e-6
    assert np.all(events.t_start_ns[1:] >= events.t_end_ns[:-1])  # one GPU: no overlap
    assert events.t_end_ns[-1] <= T0 + 20 * 10**9
    names = [events.layers[i] for i in events.layer_id[:42]]
    assert [n for n, _ in names[:21]] == [n for n, _ in names[21:]][::-1]  # backward reversed
    assert names[4] == ("emb_l.0", "EmbeddingBag") and names[20] == ("loss_fn", "MSELoss")
    assert events.forward[:21].all() and not events.forward[21:42].any()
    per_iteration_ms = 20_000 / (events.batch.max() + 1)
    assert 60 < per_iteration_ms < 120


def test_noise_is_reproducible_multiplicative_and_rounds_like_dcgm():
    truth = np.tile([50.4, 24000.0, 0.5, 0.25, 0.6, 0.3], (20000, 1))
    ticks = np.arange(20000)
    a = measure(truth, 0, ticks, noise=0.01, seed=7)
    assert np.array_equal(a, measure(truth, 0, ticks, noise=0.01, seed=7))
    assert not np.array_equal(a, measure(truth, 1, ticks, noise=0.01, seed=7))  # other GPU
    assert np.array_equal(a[5], measure(truth[5], 0, [5], noise=0.01, seed=7)[0])  # per tick
    rel = a[:, 2:] / truth[:, 2:] - 1
    assert np.all(np.abs(rel.mean(axis=0)) < 0.0005)
    assert np.all(np.abs(rel.std(axis=0) - 0.01) < 0.0005)
    assert np.all(a[:, :2] == np.rint(a[:, :2]))          # GPU_UTIL, FB_USED integers
    exact = measure(truth[:3], 0, [0, 1, 2])
    np.testing.assert_allclose(exact, [[50, 24000, 0.5, 0.25, 0.6, 0.3]] * 3)


def test_multiplexing_zeros_hit_only_profiling_fields():
    truth = np.tile([50.0, 24000.0, 0.5, 0.25, 0.6, 0.3], (20000, 1))
    out = measure(truth, 0, np.arange(20000), mux_zero=0.1, seed=1)
    zeros = (out == 0).mean(axis=0)
    assert zeros[0] == 0 and zeros[1] == 0
    assert np.all(np.abs(zeros[2:] - 0.1) < 0.01)


def test_exposition_is_dcgm_exporter_format(profile):
    gpus = live.build_gpus(2, [], "node-7", profile.model_name, pod="p", namespace="ns", container="c")
    text = metrics_text(gpus, np.array([[37.4, 24321.6, 0.5, 0.123456789, 1.0, 0.0]] * 2), 1714557600100)
    lines = text.splitlines()
    assert lines[0].startswith(f"# {EMULATOR_NAME}")
    samples = [line for line in lines if not line.startswith("#")]
    assert len(samples) == 12
    for metric in METRICS:
        assert f"# TYPE {metric} gauge" in lines
        help_line = next(line for line in lines if line.startswith(f"# HELP {metric} "))
        assert "EMULATED" in help_line and "not a GPU counter" in help_line
    parsed = {}
    for line in samples:
        match = INT_LINE.fullmatch(line) or RATIO_LINE.fullmatch(line)
        assert match, line
        parsed[(match["name"], match["gpu"])] = match["value"]
        assert match["ts"] == "1714557600100"
        assert match["uuid"] == gpus[int(match["gpu"])].uuid
    assert parsed[("DCGM_FI_DEV_GPU_UTIL", "0")] == "37"
    assert parsed[("DCGM_FI_DEV_FB_USED", "1")] == "24322"
    assert parsed[("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "0")] == "0.123457"
    assert parsed[("DCGM_FI_PROF_SM_ACTIVE", "1")] == "1.000000"
    assert gpus[0].uuid != gpus[1].uuid
    assert live.build_gpus(2, [], "node-7", "m")[1].uuid == gpus[1].uuid  # stable per host/index


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_parses_the_exposition(profile):
    gpus = live.build_gpus(2, [], "node-7", profile.model_name)
    text = metrics_text(gpus, np.array([[37, 24321, 0.5, 0.1, 1.0, 0.0]] * 2), 1714557600100)
    result = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                            text=True, timeout=30)
    # Exit 3: lint remarks only, no parse error (exit 1). The one remark is about
    # dcgm-exporter's own label names (modelName, Hostname), which the emulator keeps.
    assert result.returncode in (0, 3), result.stdout + result.stderr
    remarks = set((result.stdout + result.stderr).splitlines())
    assert remarks <= {f"{m} label names should be written in 'snake_case' not 'camelCase'" for m in METRICS}


def test_openmetrics_output(profile):
    import io
    out = io.StringIO()
    gpu = EmulatedGpu(0, "GPU-00000000-0000-4000-8000-000000000000", "h", profile.model_name)
    write_openmetrics(out, [gpu], np.array([1714557600100, 1714557601000]),
                      [np.array([[1, 2, 0.5, 0.25, 0.125, 1.0], [3, 4, 0.0, 0.0, 0.0, 0.0]])])
    lines = out.getvalue().splitlines()
    assert lines[-1] == "# EOF"
    assert lines[2].endswith("} 1 1714557600.100") and lines[3].endswith("} 3 1714557601.000")
    assert any(line.startswith("DCGM_FI_PROF_SM_ACTIVE{") and line.endswith(" 0.125000 1714557600.100")
               for line in lines)


def test_offline_recording_is_consistent(tmp_path):
    rec = offline.record(3, 100, 0.0, 1, Profile.named("dlrm"), timing=Timing(mode="exact"))  # IDEALISED
    # 3 s of windows, then the 5 s idle tail that dcgm-exporter and Prometheus store after a job.
    assert rec.tail_seconds == 5 and len(rec.tick_ms) == 80 and rec.tick_ms[0] == offline.DEFAULT_START_S * 1000 + 100
    # Noise 0: published = truth rounded as dcgm-exporter prints.
    np.testing.assert_allclose(rec.samples[:, 2:], rec.truth_means[:, 2:])
    np.testing.assert_allclose(rec.samples[:, :2], np.rint(rec.truth_means[:, :2]))
    paths = offline.write(rec, tmp_path)
    truth = json.loads(open(paths["truth"]).read())
    assert truth["layer_types"]["EmbeddingBag"]["forward"]["DCGM_FI_PROF_DRAM_ACTIVE"] == 0.78
    assert truth["layers"]["emb_l.3"]["layer_type"] == "EmbeddingBag"
    assert truth["gpu_uuid"] == rec.gpu.uuid and truth["samples_per_metric"] == 80 and truth["tail_seconds"] == 5
    lines = open(paths["events"]).read().splitlines()
    assert json.loads(lines[0])["record"] == "job"
    first = json.loads(lines[1])
    from precisionprobe._event_format import EVENT_FIELDS
    assert list(first) == list(EVENT_FIELDS)
    assert first["gpu_uuid"] == rec.gpu.uuid and first["layer"] == "bot_l.0" and first["forward"] is True
    assert len(lines) == len(rec.events) + 1


def test_live_signal_equals_offline_truth(profile):
    events = dlrm_timeline(T0, 2, seed=5)
    vals = np.array([profile.value("x", "A" if i % 3 else "B", i % 2 == 0) for i in range(len(events))])
    signal = live.GpuSignal(profile.idle)
    for i in np.random.default_rng(0).permutation(len(events)):  # arrival order does not matter
        signal.add(int(events.t_start_ns[i]), int(events.t_end_ns[i]), vals[i])
    tl = Timeline(events.t_start_ns, events.t_end_ns, vals, profile.idle)
    ticks = T0 + np.arange(1, 20) * 100 * MS
    np.testing.assert_allclose([signal.window_mean(int(t), 100 * MS) for t in ticks],
                               tl.window_means(ticks, 100 * MS), rtol=1e-9)


def event(layer, layer_type, forward, start_ms, end_ms, uuid="cpu", gpu=None):
    return {"job_id": "j", "host_name": "h", "ip": "1.2.3.4", "pod": "p", "namespace": "", "gpu_uuid": uuid,
            "gpu": gpu, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 1, "epoch": 0, "batch": 0,
            "layer": layer, "layer_type": layer_type, "forward": forward,
            "t_start_ns": T0 + start_ms * MS, "t_end_ns": T0 + end_ms * MS, "cpu_num": 2.0}


def test_live_emulator_publishes_window_averages_after_the_lag(profile):
    """The IDEALISED exact mode: explicit timestamps at window ends (test_emulator_timing.py has
    the realistic default)."""
    now = [T0 + 1000 * MS]
    gpus = live.build_gpus(2, ["GPU-11111111-1111-4111-8111-111111111111"], "h", "m")
    emu = live.Emulator(profile, gpus, interval_ms=100, lag_ms=500, clock=lambda: now[0],
                        timing=Timing(mode="exact"))
    assert emu.add_event(event("l1", "A", True, 50, 150)) == 0                      # cpu -> GPU 0
    assert emu.add_event(event("l2", "B", True, 150, 170, uuid=gpus[0].uuid)) == 0  # by UUID
    assert emu.add_event(event("l3", "A", True, 120, 130, uuid="GPU-real", gpu=1)) == 1  # by index
    assert emu.add_event(event("l4", "A", True, 120, 130, uuid="GPU-real", gpu=5)) is None
    now[0] = T0 + 699 * MS      # 699 - 500 lag: the newest window that ended is (100, 200]
    ts, vals = emu.collect()
    assert ts == T0 // MS + 100
    now[0] = T0 + 705 * MS
    ts, vals = emu.collect()
    a, b = profile.value("x", "A", True), profile.value("x", "B", True)
    assert ts == T0 // MS + 200
    np.testing.assert_allclose(vals[0, 2:], (0.5 * a + 0.2 * b + 0.3 * profile.idle)[2:])
    np.testing.assert_allclose(vals[1, 2:], (0.1 * a + 0.9 * profile.idle)[2:])
    assert vals[0, 0] == 60 and vals[1, 0] == 10
    assert (emu.events, emu.unmapped, emu.late) == (3, 1, 0)
    emu.add_event(event("l5", "A", True, 190, 195))  # its window (100, 200] is already out
    assert emu.late == 1
    ts_again, vals_again = emu.collect()           # same window: same values, however scraped
    assert ts_again == ts and np.array_equal(vals_again, vals)
    assert f'UUID="{gpus[0].uuid}"' in emu.metrics() and f" {ts}\n" in emu.metrics()


def test_tail_and_mirror_follow_growing_files(tmp_path, profile):
    events_dir, mirror_dir = tmp_path / "run", tmp_path / "run.emulated"
    tail = live.EventTail(events_dir, exclude=mirror_dir)
    gpus = live.build_gpus(1, [], "h", "m")
    emu = live.Emulator(profile, gpus, interval_ms=100)
    mirror = live.Mirror(events_dir, mirror_dir, gpus)
    assert live.follow_once(tail, emu, mirror) == 0  # directory not there yet
    events_dir.mkdir()
    f = events_dir / "events-h-1.jsonl"
    header = '{"record":"job","job_id":"j"}'
    e1 = json.dumps(event("l1", "A", True, 0, 10), separators=(",", ":"))
    e2 = json.dumps(event("l2", "B", False, 10, 20), separators=(",", ":"))
    f.write_text(header + "\n" + e1 + "\n" + e2[:40])  # the second event is half written
    assert live.follow_once(tail, emu, mirror) == 2
    with open(f, "a") as out:
        out.write(e2[40:] + "\nnot json\n")
    assert live.follow_once(tail, emu, mirror) == 2
    mirror.close()
    lines = (mirror_dir / "events-h-1.jsonl").read_text().splitlines()
    assert lines[0] == header and lines[3] == "not json"
    rewritten = [json.loads(line) for line in lines[1:3]]
    assert [e["gpu_uuid"] for e in rewritten] == [gpus[0].uuid] * 2
    assert [e["gpu"] for e in rewritten] == [0, 0]
    assert list(rewritten[1]) == list(json.loads(e2))  # same fields, same order
    assert {k: v for k, v in rewritten[1].items() if k not in ("gpu_uuid", "gpu")} == \
           {k: v for k, v in json.loads(e2).items() if k not in ("gpu_uuid", "gpu")}
    assert (emu.events, emu.bad_lines) == (2, 1)


def test_tail_and_mirror_follow_compact_files(tmp_path, profile):
    """The hook client's default format: the mirror gets the same JSON event lines as from the
    same events written as JSON Lines, after the header; format, definition and block lines
    are not copied."""
    events_dir, mirror_dir = tmp_path / "run", tmp_path / "run.emulated"
    events_dir.mkdir()
    tail = live.EventTail(events_dir, exclude=mirror_dir)
    gpus = live.build_gpus(1, [], "h", "m")
    emu = live.Emulator(profile, gpus, interval_ms=100)
    mirror = live.Mirror(events_dir, mirror_dir, gpus)
    header = ('{"record":"job","job_id":"j","host_name":"h","ip":"1.2.3.4","pod":"p","namespace":"",'
              '"rank":0,"local_rank":0,"world_size":1,"pid":1,"cpu_num":2.0}')
    f = events_dir / "events-h-1.jsonl"
    f.write_text("#precisionprobe-events compact 1\n" + header + "\n"
                 'L 0 "l1" "A"\nD 0 null "cpu"\n' f"@ {T0} 0 0\n0 f0 0 {10 * MS}\n"
                 'L 1 "l2" "B"\n' f"1 b0 {10 * MS} {10 * MS}\n1 b0 5")  # the last one is torn
    assert live.follow_once(tail, emu, mirror) == 8
    mirror.close()
    lines = (mirror_dir / "events-h-1.jsonl").read_text().splitlines()
    assert lines[0] == header and len(lines) == 3
    expected = [event("l1", "A", True, 0, 10), event("l2", "B", False, 10, 20)]
    for e in expected:
        e["gpu_uuid"], e["gpu"] = gpus[0].uuid, 0
    assert [json.loads(line) for line in lines[1:]] == expected
    assert [list(json.loads(line)) for line in lines[1:]] == [list(e) for e in expected]
    assert (emu.events, emu.bad_lines) == (2, 0)


def test_cli_names_itself_an_emulator(tmp_path):
    env = child_environment()
    for argv in (["--help"], ["live", "--help"], ["offline", "--help"]):
        out = subprocess.run([sys.executable, "-m", "precisionprobe.emulator", *argv], env=env,
                             capture_output=True, text=True, timeout=60).stdout
        assert "EMULATED" in out and "precisionprobe DCGM emulator" in " ".join(out.split())
    bad = subprocess.run([sys.executable, "-m", "precisionprobe.emulator", "offline", "--out",
                          str(tmp_path), "--interval-ms", "50"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "floor" in bad.stderr
    # Values out of range are one line naming the flag, never a traceback.
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    for argv, message in ((["offline", "--out", str(tmp_path), "--minutes", "inf"], "argument --minutes: expected a finite"),
                          (["offline", "--out", str(tmp_path), "--seed", "-1"], "argument --seed: expected an integer"),
                          (["live", "--events", str(tmp_path), "--profile", "dlrm", "--port", "99999"],
                           "argument --port: expected an integer from 0 to 65535, not 99999"),
                          (["live", "--events", str(tmp_path), "--profile", "dlrm", "--duration", "-1"],
                           "argument --duration: expected a finite number above 0"),
                          (["live", "--events", str(tmp_path), "--profile", "dlrm", "--poll-ms", "0"],
                           "argument --poll-ms: expected an integer from 1"),
                          # These were a numpy reshape error, [Errno 20] and [Errno 17], no flag named.
                          (["offline", "--out", str(tmp_path / "short"), "--minutes", "0.0001"],
                           "error: --minutes: 0.0001 minutes (6 ms) hold no layer call of the emulated DLRM"),
                          (["offline", "--out", str(a_file)], f"error: --out: '{a_file}' is a file, not a folder"),
                          (["live", "--events", str(tmp_path / "events"), "--profile", "dlrm", "--port", "0",
                            "--mirror", str(a_file)], f"error: --mirror: '{a_file}' is a file, not a folder")):
        bad = subprocess.run([sys.executable, "-m", "precisionprobe.emulator", *argv], env=env, capture_output=True,
                             text=True, timeout=60)
        assert bad.returncode == 2 and message in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    ok = subprocess.run([sys.executable, "-m", "precisionprobe.emulator", "offline", "--out",
                         str(tmp_path / "o"), "--minutes", "0.05", "--interval-ms", "100", "--seed", "2"],
                        env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["events", "metrics.om", "samples_truth.csv",
                                                                  "truth.json"]


def test_layer_types_only_the_default_covers_are_named_once(capsys):
    """A profile with a "default" covers any layer type; the live emulator says which ones got
    the default values, once each, rather than using them silently."""
    data = dict(SMALL_PROFILE, default={"forward": values(70, 1000, 0.3, 0.3, 0.3, 0.3),
                                        "backward": values(60, 1000, 0.2, 0.2, 0.2, 0.2)})
    emu = live.Emulator(Profile(data, "with-default"), live.build_gpus(1, [], "h", "m"), interval_ms=100)
    for start in (0, 10, 20):
        emu.add_event(event("conv", "Conv2d", True, start, start + 5))
    emu.add_event(event("l1", "A", True, 30, 35))
    err = capsys.readouterr().err
    assert err.count("has no values for layer type 'Conv2d': its calls get the profile's default values") == 1
    assert "'A'" not in err and emu.defaulted_types == {"Conv2d"}


def test_an_emulated_gpus_uuid_is_made_from_any_job_id():
    """A JSON escape in an event file can give a job id a lone surrogate, which UTF-8 cannot
    encode: the replayed GPU still gets its UUID, stable and apart from the others."""
    from precisionprobe.emulator.exposition import emulated_uuid
    odd = emulated_uuid("node", 0, "a\udc80b:7")
    assert odd.startswith("GPU-") and odd == emulated_uuid("node", 0, "a\udc80b:7")
    assert odd != emulated_uuid("node", 0, "ab:7")
    import uuid  # a plain id's UUID is what it was before such ids were taken
    assert emulated_uuid("node", 0, "job:7") == "GPU-" + str(
        uuid.uuid5(uuid.NAMESPACE_URL, "precisionprobe-emulator://node/process/job:7"))
