"""The emulator's exporter restart (emulator/timing.py, "restart"), in the model alone, in an
offline schedule and in the live emulator's answers: nothing served while dcgm-exporter is down,
then DCGM's windows on a grid of their own. Real numpy, no servers (test_emulator_restart.py
takes a recording with a restart through Prometheus and pp_refresh)."""
import numpy as np
import pytest

from precisionprobe.emulator import live, offline, timing
from precisionprobe.emulator.profile import Profile
from precisionprobe.emulator.timing import Timing

START_NS = offline.DEFAULT_START_S * 10**9


def test_without_a_restart_nothing_changes():
    t = timing.resolve(Timing(), 100, seed=4)
    assert (t.exporter_restart_s, t.exporter_down_s, t.exporter_restart_phase_ms) == (None, None, None)
    assert timing.restart(t, START_NS) is None


def test_a_restart_puts_the_windows_after_it_on_a_new_grid():
    plain = timing.resolve(Timing(dcgm_phase_ms=10.0, dcgm_wander_ms=0, dcgm_poll_jitter_ms=0), 100, 2)
    t = timing.resolve(Timing(dcgm_phase_ms=10.0, dcgm_wander_ms=0, dcgm_poll_jitter_ms=0, exporter_restart_s=30,
                              exporter_down_s=3, exporter_restart_phase_ms=45.5), 100, 2)
    first, down, up = timing.restart(t, START_NS)
    assert (down, up) == (START_NS + 30 * 10**9, START_NS + 33 * 10**9)
    # Window first - 1 is the last polled before the restart; first is the new engine's first poll.
    assert timing.dcgm_end_ns(t, START_NS, first - 1) <= down < timing.dcgm_end_ns(plain, START_NS, first)
    assert timing.dcgm_end_ns(t, START_NS, first) == up + 45_500_000
    k = np.arange(first - 50, first + 50)
    before, after = k[k < first], k[k >= first]
    np.testing.assert_array_equal(timing.dcgm_end_ns(t, START_NS, before), timing.dcgm_end_ns(plain, START_NS, before))
    # 15 ppm long, as before (each end a whole microsecond)
    assert np.all(np.abs(np.diff(timing.dcgm_end_ns(t, START_NS, after)) - 100_001_500) <= 1000)
    # The newest window at a time: the old grid's until the restart, the last polled before it
    # until the new engine's first poll, then the new grid's.
    at = START_NS + np.array([29_950, 31_000, 33_045, 33_046, 33_146]) * 10**6
    np.testing.assert_array_equal(timing.dcgm_window_at(t, START_NS, at),
                                  [timing.dcgm_window_at(plain, START_NS, at[0]), first - 1, first - 1, first, first + 1])


def test_the_phase_after_a_restart_comes_from_the_seed():
    given = Timing(exporter_restart_s=10)
    a, b = timing.resolve(given, 100, 1), timing.resolve(given, 100, 2)
    assert a == timing.resolve(given, 100, 1) and a.exporter_restart_phase_ms != b.exporter_restart_phase_ms
    assert 0 <= a.exporter_restart_phase_ms < 100 and a.exporter_down_s == 5


def test_a_schedule_stores_nothing_while_the_exporter_is_down_nor_until_a_new_window_is_served():
    t = timing.resolve(Timing(exporter_restart_s=20, exporter_down_s=2.5), 100, 7)
    s = timing.schedule(t, START_NS, 40, 7)
    plain = timing.schedule(timing.resolve(Timing(), 100, 7), START_NS, 40, 7)
    first, down, up = timing.restart(t, START_NS)
    stored_ns = s.ts_ms * 10**6
    assert not np.any((stored_ns > down) & (stored_ns <= up))
    before = stored_ns <= down
    np.testing.assert_array_equal(s.ts_ms[before], plain.ts_ms[:before.sum()])  # unchanged until then
    after = s.window[~before]
    assert after.min() == first + 1  # the first window with a value: the new engine's second poll
    assert np.all(s.window_begin_ns[~before] >= timing.dcgm_end_ns(t, START_NS, first))


@pytest.mark.parametrize("fields, message", [
    (dict(exporter_down_s=3), "--exporter-down-s applies only with --exporter-restart-s"),
    (dict(exporter_restart_phase_ms=3), "--exporter-restart-phase-ms applies only with --exporter-restart-s"),
    (dict(exporter_restart_s=10, exporter_restart_phase_ms=100), "must be below its period"),
    (dict(mode="exact", exporter_restart_s=10), "applies to --timing realistic only"),
])
def test_restart_parameters_that_do_not_apply_are_refused_naming_the_flag(fields, message):
    with pytest.raises(ValueError, match=message):
        timing.resolve(Timing(**fields), 100, 0)


@pytest.mark.parametrize("fields, message", [
    (dict(exporter_restart_s=-1), "exporter_restart_s .--exporter-restart-s. must be from 0 to 604800 s"),
    (dict(exporter_restart_s=1, exporter_down_s=0), "exporter_down_s .--exporter-down-s. must be above 0 s"),
])
def test_restart_times_out_of_range_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Timing(**fields)


def test_live_answers_nothing_while_restarting_then_the_new_grid_s_windows():
    now = [START_NS]
    emu = live.Emulator(Profile.named("dlrm"), live.build_gpus(1, [], "h", "m"), interval_ms=100,
                        clock=lambda: now[0], timing=Timing(exporter_restart_s=10, exporter_down_s=2,
                                                            exporter_restart_phase_ms=20, exporter_jitter_ms=0))
    first, down, up = timing.restart(emu.timing, START_NS)
    now[0] = down - 10**8
    emu.collect()
    assert emu.served[-1]["window"] < first
    for at in (down + 10**6, up, up + 20 * 10**6 + 300 * 10**6):  # down; up, nothing new polled yet
        now[0] = at
        with pytest.raises(live.ExporterDown):
            emu.metrics()
    now[0] = up + 500 * 10**6
    emu.collect()
    assert emu.served[-1]["window"] > first
    w = emu.served[-1]["window"]  # on the new grid, give or take its polls' wander and jitter
    assert abs(emu.served[-1]["window_end_ns"] - (up + 20 * 10**6 + (w - first) * 100_001_500)) < 300_000
