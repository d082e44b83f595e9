"""Refreshes with event retention (event_retention_minutes) against the test Prometheus: the
database keeps only recent events and samples while the files grow, and what it folded before
stays in the estimator's state and the means, so the results equal those of a database keeping
everything; two hosts' states merge into one database.

CTest runs this file as `faults.retention` and `faults.retention_merge` (the two hosts), fixture
`servers`, with the environment of test_faults.py, whose env fixture it uses:

  PP_EXTENSION=build/precisionprobe PP_TEST_ENV_DIR=build/test-env PYTHONPATH=$PWD:$PWD/python \
      python3 -m pytest -q tests/faults/test_retention.py
"""
import pytest

from test_faults import env  # noqa: F401 (the fixture of the test servers)
from tests.fixtures import dcgm_data
from tests.fixtures.extension import connect
from tests.fixtures.training_events import assert_same_layer_states, job_lines, layer_states


def test_retention_keeps_the_last_minutes_and_every_folded_mean(env, tmp_path):
    """With event_retention_minutes = 4, refreshes while the files grow keep only the events
    and samples of the last 4 minutes before each GPU's fold point, and layer_state is exactly
    that of one refresh keeping everything. Each job writes two files, as a hook client that
    starts a new one, the first without a job header (as older hook clients wrote JSON Lines):
    its events all go, it is never read again, and pp_dropped_events counts them. The estimator
    fits every window: those kept, and those removed as its state."""
    url = env["prometheus_url"]
    events = tmp_path / "events"
    events.mkdir()
    jobs = [job_lines(g) for g in range(len(dcgm_data.GPUS))]

    def write(share):
        for g, lines in enumerate(jobs):
            upto, half = int(len(lines) * share), len(lines) // 2
            (events / f"rank{g}-a.jsonl").write_text("".join(lines[1:min(upto, half)]))
            if upto > half:
                (events / f"rank{g}-b.jsonl").write_text("".join(lines[:1] + lines[half:upto]))

    settings = {"attribution_margin_seconds": 10**9}
    kept = connect(url, str(tmp_path / "kept.db"), event_retention_minutes=4, **settings)
    for share in (0.5, 1.0):
        write(share)
        kept.execute("SELECT * FROM pp_refresh(?)", (str(events),)).fetchall()
    kept.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    everything = connect(url, str(tmp_path / "everything.db"), **settings)
    everything.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()

    got = assert_same_layer_states(kept, everything)

    # What is left: each GPU's samples of the last 4 minutes before its fold point, the events
    # that can reach into their windows, and nothing of the first files.
    total = sum(len(lines) - 1 for lines in jobs)
    left = kept.execute("SELECT count(*) FROM pp_events").fetchone()[0]
    dropped = kept.execute("SELECT sum(events) FROM pp_dropped_events").fetchone()[0]
    assert 0 < left < total / 2 and left + dropped == total
    assert kept.execute("SELECT count(*) FROM pp_events WHERE source_file LIKE '%-a.jsonl'").fetchone() == (0,)
    for g, lines in enumerate(jobs):
        first_file = kept.execute("SELECT events FROM pp_dropped_events WHERE source_file LIKE ?",
                                  (f"%rank{g}-a.jsonl",)).fetchone()
        assert first_file == (len(lines) // 2 - 1,)
    oldest = kept.execute(
        "SELECT min(f.folded_through_ms - (SELECT min(ts_ms) FROM pp_samples AS s WHERE s.uuid = f.uuid)) "
        "FROM pp_fold_state AS f").fetchone()[0]
    assert 230000 <= oldest < 240000
    assert kept.execute("SELECT count(*) FROM pp_windows").fetchone()[0] < \
        everything.execute("SELECT count(*) FROM pp_windows").fetchone()[0] / 2

    # Nothing is read twice, and another refresh changes nothing.
    again = kept.execute("SELECT events_added, windows_folded FROM pp_refresh(?)", (str(events),)).fetchone()
    assert tuple(int(n) for n in again) == (0, 0)
    assert layer_states(kept) == got

    # The estimator solves from the windows kept and the state of those removed (pp_estimator_state):
    # the same fit as from every window (the estimate to rounding), each window counted once.
    estimates = ("SELECT job_id, layer_type, forward, metric, windows, estimate, stderr, lower90, upper90 "
                 "FROM layer_type_estimates ORDER BY 1, 2, 3, 4")
    short, full = kept.execute(estimates).fetchall(), everything.execute(estimates).fetchall()
    assert [row[:5] for row in short] == [row[:5] for row in full] and short
    for s, f in zip(short, full):
        assert s[5] == pytest.approx(f[5], rel=1e-9, abs=1e-12), s[:4]
        if f[6] is None:  # no window fitted (GPU_UTIL whose samples lie off its driver's grid here)
            assert s[6] is None and s[4] == 0, s[:4]
            continue
        # The standard errors differ only in the robust part, which windows kept as sums lack.
        assert 0.8 < s[6] / f[6] < 1.25, s[:4]
    assert kept.execute("SELECT count(*) FROM pp_estimator_state").fetchone()[0] > 0


def test_retention_states_of_two_hosts_merge_into_one_database(env, tmp_path):
    """A job on GPUs of two hosts, and another job on host B alone, each host with its own
    database (host B's keeping 4 minutes): host B's whole estimator state (pp_estimator_states:
    its stored state and its windows kept), its GPU spans and its layers added to host A's
    database give the estimates of one database holding both hosts' events, per layer and per
    layer type, every window counted once; host B's overlap means (layer_state) merged into
    host A's give that database's layer_type_metrics."""
    url = env["prometheus_url"]
    settings = {"attribution_margin_seconds": 10**9}
    dirs = {name: tmp_path / name for name in ("a", "b", "both")}
    for d in dirs.values():
        d.mkdir()
    # Host A: the job on GPU 0; host B: the job on GPU 2 and another job alone on GPU 1.
    files = {0: job_lines(0, "spread"), 1: job_lines(1), 2: job_lines(2, "spread")}
    for g, lines in files.items():
        (dirs["a" if g == 0 else "b"] / f"rank{g}.jsonl").write_text("".join(lines))
        (dirs["both"] / f"rank{g}.jsonl").write_text("".join(lines))
    host_a = connect(url, str(tmp_path / "a.db"), **settings)
    host_b = connect(url, str(tmp_path / "b.db"), event_retention_minutes=4, **settings)
    both = connect(url, str(tmp_path / "both.db"), **settings)
    for conn, name in ((host_a, "a"), (host_b, "b"), (both, "both")):
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(dirs[name]),)).fetchall()
    assert host_b.execute("SELECT count(*) FROM pp_estimator_state").fetchone()[0] > 0  # some windows went

    host_b.execute("CREATE TABLE estimator_export AS SELECT * FROM pp_estimator_states")
    host_a.execute("ATTACH ? AS b", (str(tmp_path / "b.db"),))
    host_a.execute("INSERT INTO pp_estimator_state SELECT * FROM b.estimator_export")
    host_a.execute("INSERT INTO pp_gpu_spans SELECT * FROM b.pp_gpu_spans")
    host_a.execute("INSERT OR IGNORE INTO pp_layers SELECT * FROM b.pp_layers")
    # Per layer too: job1, which host A never ran, is named by the layers merged.
    per_layer = "SELECT job_id, layer, forward, metric, windows, estimate FROM layer_estimates ORDER BY 1, 2, 3, 4"
    merged, expected = host_a.execute(per_layer).fetchall(), both.execute(per_layer).fetchall()
    assert [row[:5] for row in merged] == [row[:5] for row in expected]
    assert {row[0] for row in merged} == {"job1", "spread"}
    for got, want in zip(merged, expected):
        assert got[5] == pytest.approx(want[5], rel=1e-9, abs=1e-12), got[:4]
    host_a.execute("INSERT INTO layer_state SELECT * FROM b.layer_state WHERE true "
                   "ON CONFLICT (job_id, layer, forward, metric) DO UPDATE SET state = pp_mean_merge(state, excluded.state)")

    estimates = ("SELECT job_id, layer_type, forward, metric, windows, estimate FROM layer_type_estimates "
                 "ORDER BY 1, 2, 3, 4")
    merged, expected = host_a.execute(estimates).fetchall(), both.execute(estimates).fetchall()
    assert [row[:5] for row in merged] == [row[:5] for row in expected]
    assert {row[0] for row in merged} == {"job1", "spread"}
    for got, want in zip(merged, expected):
        assert got[5] == pytest.approx(want[5], rel=1e-9, abs=1e-12), got[:4]
    means = "SELECT * FROM layer_type_metrics ORDER BY job_id, layer_type, forward"
    merged_means, expected_means = host_a.execute(means).fetchall(), both.execute(means).fetchall()
    assert [row[:5] for row in merged_means] == [row[:5] for row in expected_means]  # through data_num
    assert {row[0] for row in merged_means} == {"job1", "spread"}
    for got, want in zip(merged_means, expected_means):
        assert got[5:] == pytest.approx(want[5:], rel=1e-9, abs=1e-12), got[:3]
    # Without host B's state, host A's estimates of the job are those of its own GPU only.
    alone = connect(url, str(tmp_path / "a.db"))
    alone.execute("DELETE FROM pp_estimator_state WHERE uuid = ?", (dcgm_data.GPUS[2][2],))
    fewer = alone.execute("SELECT windows FROM layer_type_estimates WHERE job_id = 'spread' AND "
                          "layer_type = 'Linear' AND forward = 1 AND metric = 'DCGM_FI_PROF_SM_ACTIVE'").fetchone()[0]
    assert fewer < dict(((r[0], r[1], r[2], r[3]), r[4]) for r in expected)[
        ("spread", "Linear", 1, "DCGM_FI_PROF_SM_ACTIVE")]


def test_retention_keeps_a_stalled_jobs_span(tmp_path):
    """A job that stalled: its events of the first minute go with 2 minutes of retention, yet the
    windows of its stall that are kept still count as its untracked time, for the estimator as
    for the fold (its span starts at its first event: pp_gpu_spans), and the estimator still
    counts every window removed."""
    uuid, s = "GPU-stall", 10**9
    conn = connect(None, str(tmp_path / "stall.db"), event_retention_minutes=2, sample_offset_ms=0)
    conn.execute("SELECT pp_install_views()")
    calls = [t for t in range(0, 60)] + [t for t in range(300, 330)]  # a 240 s stall between
    conn.executemany(
        "INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, t_start, t_end, "
        "source_file, line) VALUES ('stalled', ?, 'fc', 'Linear', 1, ?, ?, ?, ?, 'by hand', ?)",
        [(uuid, t * s, t * s + s // 2, t, t + 0.5, n) for n, t in enumerate(calls)])
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, 'DCGM_FI_PROF_SM_ACTIVE', ?, ?)",
                     [(uuid, t * 1000, 0.5 if (t - 1 in calls) else 0.0) for t in range(1, 401)])
    conn.execute("SELECT * FROM pp_refresh(NULL, 1)").fetchall()
    assert conn.execute("SELECT min(t_start) FROM pp_events").fetchone() == (300,)
    # Aligned to 60 s after the last event; kept: the 2 minutes before that.
    kept = conn.execute("SELECT min(ts_ms) / 1000, max(ts_ms) / 1000 FROM pp_windows").fetchone()
    assert kept == (270, 389)
    # The job's span runs from its first event at 0 s to its last end at 329.5 s: the untracked
    # time is in the 60 windows kept, ending 270..329 s, 30 of them its stall, where no event is
    # left; the estimator's state holds the 269 windows before them.
    state = dict(conn.execute("SELECT metric, windows FROM pp_estimator_state WHERE shift = 0 AND grouping = 'layer'"))
    assert state == {"DCGM_FI_PROF_SM_ACTIVE": 269}
    windows = dict(conn.execute("SELECT layer_type, windows FROM layer_type_estimates WHERE job_id = 'stalled'"))
    assert windows == {"(untracked)": 269 + 60, "Linear": 60 + 30}
