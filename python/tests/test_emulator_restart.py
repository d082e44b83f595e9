"""dcgm-exporter restarted mid-job (emulator/timing.py, "restart"): nothing stored for a few
seconds, then DCGM's windows on a new grid. Through the real pipeline (promtool backfill,
Prometheus, pp_refresh): the align step says the step as a restart, keeps the drift what it
was, and places the windows after it where they are; the estimates hold their truth."""
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import extension_path
from precisionprobe.emulator import offline
from precisionprobe.emulator.profile import Profile
from precisionprobe.emulator.timing import Timing
from precisionprobe.harness import prometheus, processes
from test_emulator_prometheus import assert_identified_types_hold, placement_errors_ms

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")

RESTART_S, DOWN_S = 40.0, 4.0


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """A 90 s recording at 100 ms with 0.5% noise, realistic timing, dcgm-exporter restarted 40 s
    in and down 4 s, its DCGM's windows 63 ms later in the period from then on; backfilled and
    served by a real Prometheus, and refreshed once."""
    work = tmp_path_factory.mktemp("emulator-restart")
    timing = Timing(exporter_restart_s=RESTART_S, exporter_down_s=DOWN_S, exporter_restart_phase_ms=63)
    rec = offline.record(90, 100, 0.005, 11, Profile.named("dlrm"), timing=timing)
    paths = offline.write(rec, work / "out")
    process, url = prometheus.start_backfilled(Path(paths["openmetrics"]), work)
    try:
        conn = sqlite3.connect(":memory:")
        conn.enable_load_extension(True)
        conn.load_extension(extension_path())
        conn.execute("SELECT pp_config('prometheus_url', ?)", (url,))
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(Path(paths["events"]).parent),)).fetchone()
        yield rec, conn
    finally:
        processes.stop(process)


def test_the_recording_stores_nothing_while_the_exporter_is_down_then_steps(restarted):
    rec, _ = restarted
    at = (rec.schedule.ts_ms - offline.DEFAULT_START_S * 1000) / 1000  # s after the recording's start
    assert not np.any((at > RESTART_S) & (at <= RESTART_S + DOWN_S))
    assert np.any(at < RESTART_S) and np.any(at > RESTART_S + DOWN_S)
    offset = rec.schedule.offset_ms
    before, after = offset[at <= RESTART_S], offset[at > RESTART_S + DOWN_S]
    # Scrapes at DCGM's period read windows some 30-130 ms old, before and after alike; the new
    # grid's phase moves that offset by a part of a period (wrapped into it), not by a drift.
    step = (np.median(after) - np.median(before)) % 100
    assert 5 < step < 95, step


def test_the_step_is_said_as_a_restart_and_the_drift_stays_small(restarted):
    _, conn = restarted
    warnings = conn.execute("SELECT pp_last_warnings()").fetchone()[0] or ""
    assert "stepped 1 time(s) after a gap in them" in warnings, warnings
    assert "samples jumped" not in warnings, warnings
    stretches = conn.execute("SELECT t_from, status, drift_ppm FROM sample_alignment WHERE status <> 'no layers' "
                             "ORDER BY t_from").fetchall()
    assert len(stretches) >= 7 and {s[1] for s in stretches} == {"estimated"}, stretches
    # The emulator's clocks run 15 ppm apart; the step spread over the stretches about it read as
    # hundreds of ppm, and the stretches after it were searched where their windows are not.
    assert all(abs(s[2]) < 60 for s in stretches[2:]), stretches


def test_every_window_after_the_restart_is_placed_and_the_estimates_hold(restarted):
    rec, conn = restarted
    errors = placement_errors_ms(conn, rec)
    assert np.all(np.abs(errors) <= 3), np.abs(errors).max()
    assert_identified_types_hold(conn, rec, at_least=10)
