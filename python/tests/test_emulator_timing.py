"""The emulator's timing model (emulator/timing.py) on its own, in offline recordings, in the live
emulator's answers and on the command line. Real numpy, no servers (test_emulator_timing_servers.py
has Prometheus)."""
import csv
import hashlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import child_environment
from precisionprobe.emulator import live, offline, timing
from precisionprobe.emulator.exposition import write_openmetrics
from precisionprobe.emulator.noise import measure
from precisionprobe.emulator.profile import FB_USED, GPU_UTIL, METRICS, Profile
from precisionprobe.emulator.timeline import dlrm_timeline
from precisionprobe.emulator.timing import Timing
from precisionprobe.emulator.truth import Timeline

START_NS = offline.DEFAULT_START_S * 10**9
HOUR = 3600
UTIL, FB = METRICS.index(GPU_UTIL), METRICS.index(FB_USED)
PROF = slice(2, 6)
# sha256 of metrics.om for record(5, 100, 0.005, 3, dlrm, mux_zero=0.02), written by the emulator
# before it had a timing model: exact mode must reproduce it bit for bit.
OLD_OPENMETRICS_SHA256 = "653769152cdc9c7abb5312598f3d49e2bd9679d1b891063fb76470bcf0c83798"


@pytest.fixture(scope="module")
def profile():
    return Profile.named("dlrm")


def stored(period_ms=100, seconds=HOUR, seed=1, **fields):
    t = timing.resolve(Timing(**fields), period_ms, seed)
    return t, timing.schedule(t, START_NS, seconds, seed)


# --- the model alone ---------------------------------------------------------------------------

def test_defaults_resolve_to_the_documented_values():
    t = timing.resolve(Timing(), 100, seed=4)
    assert (t.mode, t.exporter, t.dcgm_period_ms, t.dcgm_drift_ppm) == ("realistic", "on-scrape", 100.0, 15.0)
    assert (t.exporter_latency_ms, t.exporter_jitter_ms, t.scrape_interval_ms, t.scrape_jitter_ms) == (30, 2, 100, 1)
    assert t.scrape_tolerance_ms == 1.0 and timing.resolve(Timing(), 1000, 4).scrape_tolerance_ms == 2.0
    assert t.util_period_ms == pytest.approx(1000 / 6) and t.subms_phase
    assert 0 <= t.dcgm_phase_ms < 100 and 0 <= t.scrape_phase_ms < 100 and 0 <= t.util_phase_ms < 1000 / 6
    assert round(t.dcgm_phase_ms * 1000) == pytest.approx(t.dcgm_phase_ms * 1000, abs=1e-6)  # whole us
    assert timing.resolve(Timing(), 100, 4, live=True).exporter_latency_ms == 300
    assert timing.resolve(Timing(), 100, 4) == t  # phases from the seed: reproducible
    assert timing.resolve(Timing(), 100, 5).dcgm_phase_ms != t.dcgm_phase_ms
    exact = timing.resolve(Timing(mode="exact"), 100, 4)
    assert (exact.dcgm_phase_ms, exact.dcgm_drift_ppm, exact.exporter, exact.scrape_interval_ms) == (0, 0, None, None)


def test_dcgm_windows_are_consecutive_on_a_drifting_microsecond_grid():
    t = timing.resolve(Timing(dcgm_phase_ms=12.3456, dcgm_drift_ppm=50, dcgm_wander_ms=0, dcgm_poll_jitter_ms=0), 100, 0)
    k = np.arange(0, 40000)
    ends = timing.dcgm_end_ns(t, START_NS, k)
    assert np.all(ends % 1000 == 0) and np.any(ends % 10**6 != 0)  # microseconds, not whole ms
    assert ends[0] == START_NS + 12_346_000  # 12.3456 ms rounds to the microsecond
    period = np.diff(ends)
    assert abs(period.mean() - 100e6 * (1 + 50e-6)) < 1  # nominal period + 50 ppm
    # The newest window at each end is that window; just before, the previous one.
    assert np.array_equal(timing.dcgm_window_at(t, START_NS, ends), k)
    assert np.array_equal(timing.dcgm_window_at(t, START_NS, ends - 1), k - 1)


def test_dcgm_polls_wander_slowly_and_jitter_around_the_straight_grid():
    t = timing.resolve(Timing(dcgm_drift_ppm=50, dcgm_wander_ms=0.2, dcgm_poll_jitter_ms=0.02), 100, 3)
    k = np.arange(0, 20000)
    ends = timing.dcgm_end_ns(t, START_NS, k)
    straight = START_NS + t.dcgm_phase_ms * 1e6 + k * 100e6 * (1 + 50e-6)
    stray_ms = (ends - straight) / 1e6
    assert np.abs(stray_ms).max() <= 0.2 + 3 * 0.02 + 0.001  # the wander's amplitude and 3 sigma of jitter
    assert np.abs(stray_ms).max() > 0.1                       # and it does wander
    # Slowly: neighbours differ by the jitter, not the wander.
    assert np.std(np.diff(stray_ms)) == pytest.approx(0.02 * np.sqrt(2), rel=0.1)
    assert np.all(np.diff(ends) > 0)
    assert np.array_equal(timing.dcgm_window_at(t, START_NS, ends), k)
    assert np.array_equal(timing.dcgm_window_at(t, START_NS, ends - 1), k - 1)
    # The same seed gives the same polls.
    again = timing.resolve(Timing(dcgm_drift_ppm=50, dcgm_wander_ms=0.2, dcgm_poll_jitter_ms=0.02), 100, 3)
    assert np.array_equal(timing.dcgm_end_ns(again, START_NS, k), ends)


def test_drift_moves_the_offset_of_stored_time_from_window_end():
    """With no jitter, ts - window end falls by the drift times the elapsed time, modulo a period."""
    t, s = stored(dcgm_drift_ppm=100, exporter_jitter_ms=0, scrape_jitter_ms=0, scrape_tolerance_ms=0)
    offset = s.offset_ms
    assert offset.min() >= 30 - 1 and offset.max() <= 130 + 1  # latency .. latency + one period
    # A repeat makes the offset jump up by one DCGM period, a skip down: undo the jumps.
    unwrapped = offset + 100 * (1 + 100e-6) * np.cumsum(np.concatenate([[0], np.diff(s.window) - 1]))
    slope = np.polyfit(s.ts_ms - s.ts_ms[0], unwrapped, 1)[0]
    assert slope == pytest.approx(-100e-6, rel=0.02)
    fixed = stored(dcgm_drift_ppm=0, exporter_jitter_ms=0, scrape_jitter_ms=0, scrape_tolerance_ms=0)[1]
    assert np.ptp(fixed.offset_ms) <= 1.0  # no drift: only millisecond truncation moves it


@pytest.mark.parametrize("drift", [15, 1000, -1000])
def test_scraping_at_the_dcgm_period_repeats_and_skips_at_the_drift_rate(drift):
    """DCGM slower than the scrapes (drift > 0) stores windows twice; faster skips them. Jitter near
    a crossing adds repeat/skip pairs; the net count follows the drift over an hour."""
    _, s = stored(dcgm_drift_ppm=drift)
    n = len(s)
    net = int(s.repeat.sum()) - s.skipped
    assert abs(net - n * drift * 1e-6) <= 2, (s.repeat.sum(), s.skipped)
    assert s.repeat.sum() > 0 and s.skipped > 0  # the grids crossed: both happen
    _, quiet = stored(dcgm_drift_ppm=drift, exporter_jitter_ms=0, scrape_jitter_ms=0, dcgm_wander_ms=0,
                      dcgm_poll_jitter_ms=0)
    if drift > 0:
        assert quiet.skipped == 0 and abs(quiet.repeat.sum() - len(quiet) * drift * 1e-6) <= 1
    else:
        assert quiet.repeat.sum() == 0 and abs(quiet.skipped - len(quiet) * -drift * 1e-6) <= 1


def test_a_one_second_scrape_keeps_one_window_in_ten():
    _, s = stored(scrape_interval_ms=1000)
    assert len(s) == pytest.approx(HOUR, abs=2) and s.repeat.sum() == 0
    steps = np.diff(s.window)
    assert set(steps.tolist()) <= {9, 10, 11} and np.mean(steps) == pytest.approx(10, abs=0.01)
    assert s.skipped == pytest.approx(9 * len(s), rel=0.01)


def test_prometheus_snaps_stored_times_within_its_tolerance():
    _, s = stored(seconds=60, scrape_phase_ms=40.5, scrape_jitter_ms=1)
    phase = s.ts_ms % 100
    assert set(phase.tolist()) <= {40, 41, 42, 43, 44, 45}
    assert np.mean(phase == 40) > 0.5  # most scrapes are under 1 ms late: stored at the ideal tick
    _, unsnapped = stored(seconds=60, scrape_phase_ms=40.5, scrape_jitter_ms=1, scrape_tolerance_ms=0)
    assert np.mean(unsnapped.ts_ms % 100 == 40) < 0.5


def test_the_cached_exporter_adds_the_age_of_its_collection():
    _, scrape = stored(seconds=600)
    _, cached = stored(seconds=600, exporter="cached", exporter_phase_ms=50.0)
    assert np.median(cached.offset_ms) > np.median(scrape.offset_ms)
    assert cached.offset_ms.max() <= 30 + 100 + 100 + 8  # latency + period + collection age + jitter


def test_gpu_util_windows_lie_on_the_driver_grid():
    t, s = stored(seconds=120, util_phase_ms=20.0)
    rel = (s.util_end_ns - START_NS) / 1e6 - 20.0
    assert np.allclose(rel / (1000 / 6), np.round(rel / (1000 / 6)), atol=1e-5)  # u[j] = phase + j * period
    assert np.all(s.util_end_ns <= s.window_end_ns)
    assert np.all(s.window_end_ns - s.util_end_ns < 1000 / 6 * 1e6)  # the newest one at the poll
    assert np.all(s.util_end_ns - s.util_begin_ns == pytest.approx(1000 / 6 * 1e6, abs=1000))
    assert np.array_equal(s.instant_ns, s.window_end_ns)
    # Two polls in one driver period read the same driver window.
    assert np.any(np.diff(s.util_window) == 0) and np.all(np.diff(s.util_window) >= 0)


@pytest.mark.parametrize("fields, message", [
    (dict(scrape_interval_ms=0.5), "--scrape-interval-ms) must be at least 1 ms"),
    (dict(exporter_latency_ms=-1), "--exporter-latency-ms) must not be negative"),
    (dict(dcgm_period_ms=50), "floor"),
    (dict(mode="late"), "--timing 'late'"),
    (dict(exporter="pull"), "--exporter 'pull'"),
    (dict(scrape_jitter_ms=float("nan")), "not a finite number"),
    # Huge values: an hour is the ceiling of every period, latency and jitter.
    (dict(exporter_latency_ms=1e300), "--exporter-latency-ms) must be at most 3600000 ms (an hour)"),
    (dict(util_period_ms=1e300), "--util-period-ms) must be at most 3600000 ms"),
    (dict(mode="offset", offset_ms=-1e300), "--offset-ms) must be within"),
    # Lateness that would make DCGM's polls or Prometheus' scrapes overtake each other.
    (dict(dcgm_poll_jitter_ms=5), "--dcgm-poll-jitter-ms) must be below a tenth of the DCGM period"),
    (dict(scrape_jitter_ms=40), "--scrape-jitter-ms) must be below a third of the scrape interval"),
    # Periods that their component takes in whole milliseconds only.
    (dict(scrape_interval_ms=99.5), "--scrape-interval-ms) must be a whole number of ms, got 99.5: "
                                    "Prometheus' scrape_interval takes whole milliseconds"),
    (dict(exporter="cached", exporter_period_ms=150.25), "--exporter-period-ms) must be a whole number of ms"),
])
def test_timing_rejects_bad_values_naming_the_flag(fields, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        timing.resolve(Timing(**fields), 100, 0)


def test_a_scrape_tolerance_over_one_percent_of_the_interval_is_clamped_as_prometheus_does():
    """Prometheus 2.51 and later use min(interval / 100, --scrape.timestamp-tolerance)."""
    assert timing.resolve(Timing(scrape_tolerance_ms=5), 100, 0).scrape_tolerance_ms == 1.0
    assert timing.resolve(Timing(scrape_tolerance_ms=5), 1000, 0).scrape_tolerance_ms == 5.0
    assert timing.resolve(Timing(), 1000, 0).scrape_tolerance_ms == 2.0
    # A clamped tolerance snaps no scrape later than 1 ms at a 100 ms interval.
    _, s = stored(seconds=20, scrape_phase_ms=40.5, scrape_jitter_ms=3, scrape_tolerance_ms=1000)
    late = (s.ts_ms - START_NS // 10**6 - 40) % 100
    assert np.any(late == 0) and np.any(late >= 2)


@pytest.mark.parametrize("interval_ms, message", [
    (float("nan"), r"^interval_ms \(-c/--interval-ms\): not a finite number: nan"),
    (150.5, r"^dcgm_period_ms \(-c/--interval-ms\) must be a whole number of ms, got 150.5"),
    (10**13, r"^dcgm_period_ms \(-c/--interval-ms\) must be at most 3600000 ms"),
])
def test_recordings_and_the_live_emulator_check_the_collection_interval(profile, interval_ms, message):
    """Not truncated (150.5 recorded as 150) nor failing in int() without naming the flag."""
    with pytest.raises(ValueError, match=message):
        offline.record(1, interval_ms, 0.0, 0, profile)
    with pytest.raises(ValueError, match=message):
        live.Emulator(profile, live.build_gpus(1, [], "h", "m"), interval_ms=interval_ms)


@pytest.mark.parametrize("fields, live, message", [
    (dict(mode="exact", dcgm_drift_ppm=3), False, "--dcgm-drift-ppm applies to --timing realistic only"),
    (dict(mode="exact", exporter_latency_ms=10), False, "no latency applies"),
    (dict(offset_ms=5), False, "--offset-ms applies to --timing offset only"),
    (dict(dcgm_phase_ms=100), False, "below its period"),
    (dict(exporter_period_ms=200), False, "--exporter cached only"),
    (dict(scrape_interval_ms=1000), True, "in live mode"),
])
def test_timing_rejects_parameters_outside_their_mode(fields, live, message):
    with pytest.raises(ValueError, match=message):
        timing.resolve(Timing(**fields), 100, 0, live=live)


# --- offline recordings ------------------------------------------------------------------------

def old_record(seconds, interval_ms, noise, seed, profile, mux_zero):
    """The offline recording as the emulator made it before the timing model (its code, verbatim)."""
    start_s = offline.DEFAULT_START_S
    events = dlrm_timeline(start_s * 10**9, seconds, seed)
    values = np.array([profile.value(events.layers[lid][0], events.layers[lid][1], fwd)
                       for lid, fwd in zip(events.layer_id.tolist(), events.forward.tolist())])
    timeline = Timeline(events.t_start_ns, events.t_end_ns, values, profile.idle)
    ticks = np.arange(1, int(seconds * 1000) // interval_ms + 1, dtype=np.int64)
    tick_ms = start_s * 1000 + ticks * interval_ms
    truth = timeline.window_means(tick_ms * 10**6, interval_ms * 10**6)
    return tick_ms, truth, measure(truth, 0, tick_ms // interval_ms, noise=noise, mux_zero=mux_zero, seed=seed)


def within_recording(rec):
    """Which stored samples lie within the recording (not in the idle tail after its end)."""
    return rec.tick_ms * 10**6 <= rec.start_ns + int(rec.seconds * 1e9)


def openmetrics_sha256(rec):
    within = within_recording(rec)
    out = io.StringIO()
    write_openmetrics(out, [rec.gpu], rec.tick_ms[within], [rec.samples[within]])
    return hashlib.sha256(out.getvalue().encode()).hexdigest()


def test_exact_mode_reproduces_the_old_output_bit_for_bit(profile):
    """Within the recording; the old output stopped at its end, where the idle tail now begins."""
    rec = offline.record(5, 100, 0.005, 3, profile, 0.02, timing=Timing(mode="exact"))
    assert openmetrics_sha256(rec) == OLD_OPENMETRICS_SHA256
    for interval, seed in ((100, 3), (250, 7), (1000, 0)):
        rec = offline.record(20, interval, 0.01, seed, profile, 0.05, timing=Timing(mode="exact"))
        tick_ms, truth, samples = old_record(20, interval, 0.01, seed, profile, 0.05)
        within = within_recording(rec)
        assert np.array_equal(rec.tick_ms[within], tick_ms) and len(rec.tick_ms) > len(tick_ms)
        assert np.array_equal(rec.truth_means[within], truth) and np.array_equal(rec.samples[within], samples)
        assert rec.schedule.repeat.sum() == 0 and np.array_equal(rec.schedule.offset_ms, np.zeros(len(rec.tick_ms)))


def test_offset_mode_shifts_the_exact_stamps_by_exactly_offset_ms(profile):
    exact = offline.record(10, 100, 0.01, 2, profile, timing=Timing(mode="exact"))
    for offset in (20, 7, -3):
        shifted = offline.record(10, 100, 0.01, 2, profile, timing=Timing(mode="offset", offset_ms=offset))
        assert np.array_equal(shifted.tick_ms, exact.tick_ms + offset)
        assert np.array_equal(shifted.samples, exact.samples)
        assert np.array_equal(shifted.schedule.window_end_ns, exact.schedule.window_end_ns)
    assert offline.record(1, 100, 0, 2, profile, timing=Timing(mode="offset")).timing.offset_ms == 20


def test_subms_phase_shows_what_millisecond_truncation_alone_does(profile):
    rec = offline.record(10, 100, 0.0, 2, profile, timing=Timing(mode="exact", subms_phase=True))
    phase_ns = rec.schedule.window_end_ns - rec.tick_ms * 10**6
    assert len(set(phase_ns.tolist())) == 1 and 0 < phase_ns[0] < 10**6 and phase_ns[0] % 1000 == 0
    np.testing.assert_allclose(rec.schedule.offset_ms, -phase_ns[0] / 1e6)
    exact = offline.record(10, 100, 0.0, 2, profile, timing=Timing(mode="exact"))
    assert np.array_equal(rec.tick_ms, exact.tick_ms) and not np.array_equal(rec.truth_means, exact.truth_means)


@pytest.fixture(scope="module")
def realistic(profile):
    """Two minutes scraped a little faster than DCGM's period (repeats every ~20 scrapes), noisy,
    with multiplexing zeros."""
    return offline.record(120, 100, 0.01, 5, profile, 0.05, timing=Timing(scrape_interval_ms=95))


def test_repeats_carry_identical_values_for_all_six_metrics(realistic):
    rec = realistic
    repeat = rec.schedule.repeat
    assert repeat.sum() >= 50
    assert np.array_equal(rec.samples[repeat], rec.samples[np.flatnonzero(repeat) - 1])
    # Neighbouring windows that are not repeats differ (noise keyed by window index).
    assert not np.array_equal(rec.samples[1:][~repeat[1:], 2], rec.samples[:-1][~repeat[1:], 2])


def test_realistic_values_are_each_metric_s_own_window_and_instant(realistic, profile):
    rec, s = realistic, realistic.schedule
    ev = rec.events
    timeline = Timeline(ev.t_start_ns, ev.t_end_ns, rec.call_values, profile.idle)
    prof = timeline.means(s.window_begin_ns, s.window_end_ns)
    np.testing.assert_array_equal(rec.truth_means[:, PROF], prof[:, PROF])
    util = timeline.means(s.util_begin_ns, s.util_end_ns)[:, UTIL]
    np.testing.assert_array_equal(rec.truth_means[:, UTIL], util)
    assert not np.allclose(util, prof[:, UTIL])  # the driver's window is not DCGM's
    np.testing.assert_array_equal(rec.truth_means[:, FB], timeline.value_at(s.instant_ns)[:, FB])
    # FB_USED is one layer's value or idle, never a blend.
    possible = {profile.idle[FB]} | {float(v[FB]) for v in rec.call_values}
    assert set(rec.truth_means[:, FB].tolist()) <= possible
    # GPU_UTIL is an average over (u[j-1], u[j]]: a layer running across a driver boundary
    # counts on both sides only for its part in each.
    assert np.all(rec.samples[:, UTIL] == np.rint(rec.samples[:, UTIL]))


def test_value_at_is_the_layer_running_at_that_instant(profile):
    a, b = profile.value("x", "Linear", True), profile.value("x", "EmbeddingBag", True)
    timeline = Timeline([100, 300], [200, 400], [a, b], profile.idle)
    got = timeline.value_at([99, 100, 150, 199, 200, 300, 399, 400])
    expected = [profile.idle, a, a, a, profile.idle, b, b, profile.idle]
    np.testing.assert_array_equal(got, np.array(expected))
    signal = live.GpuSignal(profile.idle)
    signal.add(300, 400, b)
    signal.add(100, 200, a)
    np.testing.assert_array_equal([signal.value_at(t) for t in (99, 100, 150, 199, 200, 300, 399, 400)], expected)
    np.testing.assert_allclose(timeline.means([150], [350])[0], signal.mean(150, 350))


def test_write_puts_the_truth_per_stored_sample_and_the_timing_in_truth_json(tmp_path, realistic):
    paths = offline.write(realistic, tmp_path)
    with open(paths["samples_truth"]) as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["ts_ms", "window_end_ns", "util_window_end_ns", "instant_ns", "repeat"]
    s = realistic.schedule
    assert [int(r["ts_ms"]) for r in rows] == realistic.tick_ms.tolist()
    assert [int(r["window_end_ns"]) for r in rows] == s.window_end_ns.tolist()
    assert [int(r["util_window_end_ns"]) for r in rows] == s.util_end_ns.tolist()
    assert [int(r["instant_ns"]) for r in rows] == s.instant_ns.tolist()
    assert [r["repeat"] for r in rows] == [str(int(x)) for x in s.repeat]
    truth = json.loads(open(paths["truth"]).read())
    assert truth["timing"]["mode"] == "realistic" and truth["timing"]["scrape_interval_ms"] == 95
    assert truth["timing"]["dcgm_phase_ms"] == realistic.timing.dcgm_phase_ms
    assert truth["repeats"] == int(s.repeat.sum()) and truth["skipped_windows"] == s.skipped
    assert truth["median_offset_ms"] == pytest.approx(float(np.median(s.offset_ms)))
    assert truth["samples_per_metric"] == len(rows)
    stamps = [line.rsplit(" ", 1)[1] for line in open(paths["openmetrics"]) if line.startswith(GPU_UTIL + "{")]
    assert [round(float(x) * 1000) for x in stamps] == realistic.tick_ms.tolist()


@pytest.mark.parametrize("mode", timing.MODES)
def test_samples_go_on_after_the_job_with_the_gpu_idle(profile, mode):
    """dcgm-exporter and Prometheus do not stop with a job: every mode stores the window that
    holds the last event's end, then TAIL_SECONDS of windows of the idle GPU (FB_USED keeps the
    job's memory: the profile's idle value)."""
    rec = offline.record(3, 100, 0.0, 5, profile, timing=Timing(mode=mode))
    s, last_end = rec.schedule, int(rec.events.t_end_ns.max())
    assert rec.tail_seconds == timing.TAIL_SECONDS == 5
    assert np.any((s.window_begin_ns < last_end) & (s.window_end_ns >= last_end))
    idle = (s.window_begin_ns >= last_end) & (s.util_begin_ns >= last_end)
    assert idle.sum() >= 45 and rec.tick_ms[-1] >= (rec.start_ns + int((3 + 5) * 1e9)) // 10**6 - 100
    np.testing.assert_allclose(rec.truth_means[idle], np.broadcast_to(profile.idle, (idle.sum(), len(METRICS))))
    np.testing.assert_allclose(rec.samples[idle], rec.truth_means[idle])  # noise 0


def test_the_tail_outlasts_the_data_path_s_own_delay():
    """A tail that covers the exporter's latency, two DCGM periods and a scrape interval where
    those add up to more than TAIL_SECONDS."""
    assert timing.tail_seconds(timing.resolve(Timing(), 100, 1)) == 5
    slow = timing.resolve(Timing(scrape_interval_ms=30_000, exporter_latency_ms=500), 1000, 1)
    assert timing.tail_seconds(slow) >= 30 + 2 + 0.5


# --- the live emulator's answers ---------------------------------------------------------------

def make_event(layer_type, start_ns, end_ns):
    return {"gpu_uuid": "cpu", "layer": layer_type.lower(), "layer_type": layer_type, "forward": True,
            "t_start_ns": start_ns, "t_end_ns": end_ns}


def test_live_realistic_serves_the_model_s_window_without_timestamps(profile):
    t0 = START_NS + 123_456_789  # the emulator starts mid-second; its grids count from the second
    now = [t0]
    gpus = live.build_gpus(1, [], "h", "m")
    model = Timing(exporter_jitter_ms=0, dcgm_phase_ms=10.0, util_phase_ms=5.0, dcgm_wander_ms=0, dcgm_poll_jitter_ms=0)
    emu = live.Emulator(profile, gpus, interval_ms=100, noise=0.01, seed=3, clock=lambda: now[0], timing=model)
    assert emu.origin_ns == START_NS and emu.timing.exporter_latency_ms == 300
    events = dlrm_timeline(START_NS, 5, seed=1)
    values = [profile.value(n, k, f) for n, k, f in
              ((events.layers[i][0], events.layers[i][1], fwd)
               for i, fwd in zip(events.layer_id.tolist(), events.forward.tolist()))]
    for i in range(len(events)):
        emu.add_event({"gpu_uuid": "cpu", "layer": events.layers[events.layer_id[i]][0],
                       "layer_type": events.layers[events.layer_id[i]][1], "forward": bool(events.forward[i]),
                       "t_start_ns": int(events.t_start_ns[i]), "t_end_ns": int(events.t_end_ns[i])})
    timeline = Timeline(events.t_start_ns, events.t_end_ns, values, profile.idle)
    t = emu.timing
    for scrape_ns in START_NS + np.arange(1000, 4500, 37) * 10**6:
        now[0] = int(scrape_ns)
        text = emu.metrics("Prometheus/test")
        k = int(timing.dcgm_window_at(t, START_NS, scrape_ns - 300 * 10**6))
        entry = emu.served[-1]
        assert entry["window"] == k and entry["ts_ms"] is None and entry["agent"] == "Prometheus/test"
        assert entry["window_end_ns"] == timing.dcgm_end_ns(t, START_NS, k)
        assert abs(entry["window_end_ns"] - (START_NS + 10**7 + k * 100_001_500)) <= 500  # to the microsecond
        begin, end = entry["window_begin_ns"], entry["window_end_ns"]
        j = int(timing.util_window_at(t, START_NS, end))
        assert entry["util_window"] == j and entry["instant_ns"] == end
        truth = timeline.means([begin], [end])[0]
        truth[UTIL] = timeline.means([entry["util_begin_ns"]], [entry["util_end_ns"]])[0, UTIL]
        truth[FB] = timeline.value_at([end])[0, FB]
        expected = measure(truth, 0, [k], 0.01, 0.0, 3, util_ticks=[j])[0]
        np.testing.assert_allclose(emu.windows[k]["values"][0], expected, rtol=1e-12, atol=1e-9)
        samples = [line for line in text.splitlines() if line.startswith("DCGM_")]
        assert len(samples) == 6 and all(len(line.rsplit("} ", 1)[1].split()) == 1 for line in samples)
    # A window served again is served unchanged, even after events arrive for it (late).
    k = emu.served[-1]["window"]
    before = emu.windows[k]["values"].copy()
    late_before = emu.late
    emu.add_event(make_event("Linear", emu.served[-1]["window_end_ns"] - 5 * 10**6,
                             emu.served[-1]["window_end_ns"] - 10**6))
    assert emu.late == late_before + 1
    emu.collect()
    assert emu.served[-1]["window"] == k and np.array_equal(emu.windows[k]["values"], before)


def test_live_serves_the_idle_tail_after_the_latest_event(profile):
    """--duration waits for the idle tail after the latest event (in_tail), whose windows the
    emulator serves as those of the idle GPU."""
    now = [START_NS]
    emu = live.Emulator(profile, live.build_gpus(1, [], "h", "m"), interval_ms=100, clock=lambda: now[0])
    assert not emu.in_tail()  # no event yet: nothing to wait for
    end = START_NS + 2 * 10**9
    emu.add_event(make_event("Linear", end - 50 * 10**6, end))
    now[0] = end + int(4.9e9)
    assert emu.in_tail()
    emu.collect()
    assert emu.served[-1]["window_begin_ns"] > end
    np.testing.assert_allclose(emu.served[-1]["values"][0], profile.idle)
    now[0] = end + 5 * 10**9
    assert not emu.in_tail()


def test_live_cached_exporter_serves_its_last_collection(profile):
    now = [START_NS]
    emu = live.Emulator(profile, live.build_gpus(1, [], "h", "m"), interval_ms=100, clock=lambda: now[0],
                        timing=Timing(exporter="cached", exporter_period_ms=1000, exporter_phase_ms=250,
                                      exporter_jitter_ms=0, dcgm_phase_ms=0, dcgm_drift_ppm=0))
    served = []
    for ms in range(2300, 4300, 100):
        now[0] = START_NS + ms * 10**6
        emu.collect()
        served.append(emu.served[-1]["window"])
    # Collections at 2.25 s and 3.25 s read the window that ended 300 ms earlier: 1.9 s and 2.9 s.
    assert served == [19] * 10 + [29] * 10


def test_live_lag_ms_and_exporter_latency_are_one_parameter(profile):
    gpus = live.build_gpus(1, [], "h", "m")
    assert live.Emulator(profile, gpus, 100, lag_ms=800).timing.exporter_latency_ms == 800
    assert live.Emulator(profile, gpus, 100, timing=Timing(mode="exact")).timing.exporter_latency_ms == 500
    with pytest.raises(ValueError, match="one parameter"):
        live.Emulator(profile, gpus, 100, lag_ms=800, timing=Timing(exporter_latency_ms=300))
    for bad in (-5, float("nan"), 1e300):  # named as given, not as --exporter-latency-ms
        with pytest.raises(ValueError, match=r"^--lag-ms must be a number of ms from 0 to 3600000"):
            live.Emulator(profile, gpus, 100, lag_ms=bad, timing=Timing(mode="exact"))


# --- the command line --------------------------------------------------------------------------

def run_cli(*argv):
    return subprocess.run([sys.executable, "-m", "precisionprobe.emulator", *argv], env=child_environment(),
                          capture_output=True, text=True, timeout=60)


def test_cli_takes_every_timing_field_and_validates_it(tmp_path):
    out = tmp_path / "o"
    ok = run_cli("offline", "--out", str(out), "--minutes", "0.2", "-c", "100", "--seed", "4",
                 "--exporter", "cached", "--exporter-period-ms", "200", "--exporter-phase-ms", "3",
                 "--exporter-latency-ms", "25", "--exporter-jitter-ms", "1", "--dcgm-phase-ms", "7.5",
                 "--dcgm-drift-ppm", "20", "--dcgm-wander-ms", "0.1", "--dcgm-poll-jitter-ms", "0.01",
                 "--util-period-ms", "200", "--util-phase-ms", "1",
                 "--scrape-interval-ms", "50", "--scrape-phase-ms", "2", "--scrape-jitter-ms", "0.5",
                 "--scrape-tolerance-ms", "0", "--exporter-restart-s", "6", "--exporter-down-s", "1.5",
                 "--exporter-restart-phase-ms", "12")
    assert ok.returncode == 0, ok.stderr
    assert "timing realistic: scrapes every 50 ms, exporter cached" in ok.stdout
    got = json.loads((out / "truth.json").read_text())["timing"]
    assert got == {"mode": "realistic", "dcgm_period_ms": 100.0, "dcgm_phase_ms": 7.5, "dcgm_drift_ppm": 20.0,
                   "dcgm_wander_ms": 0.1, "dcgm_poll_jitter_ms": 0.01, "poll_seed": 4,
                   "util_period_ms": 200.0, "util_phase_ms": 1.0, "exporter": "cached",
                   "exporter_period_ms": 200.0, "exporter_phase_ms": 3.0, "exporter_latency_ms": 25.0,
                   "exporter_jitter_ms": 1.0, "scrape_interval_ms": 50.0, "scrape_phase_ms": 2.0,
                   "scrape_jitter_ms": 0.5, "scrape_tolerance_ms": 0.0, "offset_ms": None, "subms_phase": True,
                   "exporter_restart_s": 6.0, "exporter_down_s": 1.5, "exporter_restart_phase_ms": 12.0}
    offset = run_cli("offline", "--out", str(tmp_path / "p"), "--minutes", "0.05", "-c", "100",
                     "--timing", "offset", "--offset-ms", "15", "--subms-phase")
    assert offset.returncode == 0 and "offset (IDEALISED)" in offset.stdout, offset.stderr
    for argv, message in ((["--scrape-interval-ms", "0.5"], "--scrape-interval-ms) must be at least 1 ms"),
                          (["--exporter-latency-ms", "-5"], "--exporter-latency-ms) must not be negative"),
                          (["--timing", "exact", "--dcgm-drift-ppm", "5"], "applies to --timing realistic only"),
                          (["--offset-ms", "5"], "--offset-ms applies to --timing offset only"),
                          (["--scrape-jitter-ms", "abc"], "not a number")):
        bad = run_cli("offline", "--out", str(tmp_path / "bad"), "--minutes", "0.05", *argv)
        assert bad.returncode == 2 and message in bad.stderr, (argv, bad.stderr)
    live_bad = run_cli("live", "--events", str(tmp_path / "ev"), "--profile", "dlrm", "--port", "0",
                       "--scrape-interval-ms", "100", "--duration", "1")
    assert live_bad.returncode == 2 and "in live mode" in live_bad.stderr


def test_cli_refuses_nonsense_with_one_error_naming_the_option(tmp_path):
    for argv, message in ((["-c", "1e3"], "argument -c/--interval-ms: not a whole number of ms: '1e3'"),
                          (["-c", "3600001"], "argument -c/--interval-ms: at most 3600000 ms (an hour)"),
                          (["--minutes", "1e300"], "argument --minutes: at most 10080 (a week)"),
                          (["--start", "99999999999999999"], "argument --start: expected an integer from 0"),
                          (["--dcgm-wander-ms", "1e300"], "dcgm_wander_ms (--dcgm-wander-ms) must be at most"),
                          (["--scrape-jitter-ms", "400"], "below a third of the scrape interval (333.333 ms)")):
        bad = run_cli("offline", "--out", str(tmp_path / "bad"), "--minutes", "0.05", *argv)
        assert bad.returncode == 2 and message in bad.stderr, (argv, bad.stderr)
        assert "Traceback" not in bad.stderr and bad.stderr.count("error:") == 1, bad.stderr


# --- live and offline: one model ---------------------------------------------------------------

def test_live_and_offline_give_the_same_windows_and_values_for_the_same_seed_and_parameters(profile):
    """Fed an offline recording's events, a live emulator started at the recording's start with
    the same seed, noise and timing resolves the same grids and computes, for each window the
    recording stores, the same windows and values: only the scrape schedule differs (live, the
    real Prometheus decides it)."""
    model = Timing(exporter="cached", exporter_latency_ms=40, dcgm_drift_ppm=80)
    rec = offline.record(20, 100, 0.01, 5, profile, mux_zero=0.05, timing=model)
    emu = live.Emulator(profile, live.build_gpus(1, [], "h", "m"), interval_ms=100, noise=0.01,
                        mux_zero=0.05, seed=5, clock=lambda: rec.start_ns, timing=model)
    assert emu.origin_ns == rec.start_ns
    scrape_fields = ("scrape_interval_ms", "scrape_phase_ms", "scrape_jitter_ms", "scrape_tolerance_ms")
    offline_model = {k: v for k, v in timing.parameters(rec.timing).items() if k not in scrape_fields}
    live_model = {k: v for k, v in timing.parameters(emu.timing).items() if k not in scrape_fields}
    assert live_model == offline_model
    ev = rec.events
    for i in range(len(ev)):
        emu.add_event(make_event(ev.layers[ev.layer_id[i]][1], int(ev.t_start_ns[i]), int(ev.t_end_ns[i]))
                      | {"layer": ev.layers[ev.layer_id[i]][0], "forward": bool(ev.forward[i])})
    s = rec.schedule
    for i in range(len(s)):
        entry = emu._window(int(s.window[i]))
        assert (entry["window_begin_ns"], entry["window_end_ns"]) == (s.window_begin_ns[i], s.window_end_ns[i])
        assert (entry["util_begin_ns"], entry["util_end_ns"]) == (s.util_begin_ns[i], s.util_end_ns[i])
        np.testing.assert_allclose(entry["values"][0], rec.samples[i], rtol=1e-9, atol=1e-9)
