"""Refreshes that run at the same time, or in many parts, against the test Prometheus: four
connections refreshing and querying one WAL database while a writer appends events, refreshes
while the event files grow, a refresh from inside another statement of the same connection, and
refreshes that run out of room in the database file. Each ends with the tables one refresh over
the finished files gives.

CTest runs this file as `faults.wal` (the concurrency), `faults.parts` and `faults.parts_fetch`
(the refreshes in parts), fixture `servers`, with the environment of test_faults.py, whose env
fixture it uses (the refreshes with retention are in test_retention.py):

  PP_EXTENSION=build/precisionprobe PP_TEST_ENV_DIR=build/test-env PYTHONPATH=$PWD:$PWD/python \
      python3 -m pytest -q tests/faults/test_concurrent_refresh.py
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from test_faults import env  # noqa: F401 (the fixture of the test servers)
from tests.fixtures import dcgm_data
from tests.fixtures.extension import connect, http_stats
from tests.fixtures.training_events import assert_same_layer_states, job_lines


# ---- Concurrency: four connections, one WAL database ------------------------------------------

def test_four_connections_refresh_one_wal_database(env, tmp_path):
    """Four threads, one connection each, refresh and query one WAL database while a writer
    appends events: no corruption, and the final layer_state equals that of one connection
    refreshing once over the finished files. A refresh that meets another's write fails at once
    with SQLITE_BUSY, having changed nothing (the calling SELECT already holds a read
    transaction, so busy_timeout cannot wait); inside BEGIN IMMEDIATE it waits its turn."""
    url = env["prometheus_url"]
    events = tmp_path / "events"
    events.mkdir()
    jobs = [job_lines(g) for g in range(len(dcgm_data.GPUS))]
    database = str(tmp_path / "shared.db")
    setup = connect(url, database)
    assert setup.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    setup.execute("SELECT pp_install_views()")

    # Jobs still running: fold only up to each GPU's last known event, however old the data.
    settings = {"attribution_margin_seconds": 10**9}
    writing = threading.Event()
    writing.set()
    outcomes = {"refreshed": 0, "busy": 0, "queries": 0}
    failures = []
    lock = threading.Lock()

    def writer():
        files = [open(events / f"rank{g}.jsonl", "w") for g in range(len(jobs))]
        parts = 12
        for part in range(parts):
            for f, lines in zip(files, jobs):
                chunk = lines[len(lines) * part // parts:len(lines) * (part + 1) // parts]
                f.write("".join(chunk))
                f.flush()  # whole chunks, but a reader may still see a torn last line
            time.sleep(0.15)
        for f in files:
            f.close()
        writing.clear()

    def worker(number):
        conn = connect(url, database, **settings)
        # BEGIN IMMEDIATE waits here while the three others refresh in turn; under ASan (several
        # times slower) ten seconds were sometimes not enough for its turn to come.
        conn.execute("PRAGMA busy_timeout = 60000")
        immediate = number == 3  # this one wraps each refresh in BEGIN IMMEDIATE ... COMMIT
        last_round = False
        while True:
            done = not writing.is_set()
            try:
                if immediate:
                    conn.execute("BEGIN IMMEDIATE")
                conn.execute("SELECT * FROM pp_refresh(?)", (str(events),)).fetchall()
                if immediate:
                    conn.execute("COMMIT")
                with lock:
                    outcomes["refreshed"] += 1
            except sqlite3.OperationalError as error:
                busy = getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
                if immediate or not busy or "nothing was changed" not in str(error):
                    failures.append(f"worker {number}: {error!r}")
                    return
                with lock:
                    outcomes["busy"] += 1
                time.sleep(0.01)  # as an application would, before running it again
            if immediate and conn.in_transaction:
                conn.execute("ROLLBACK")
            if conn.in_transaction:
                failures.append(f"worker {number}: left a transaction open")
                return
            # Readers are never blocked in WAL mode.
            conn.execute("SELECT count(*), sum(data_num) FROM layer_metrics").fetchall()
            conn.execute("SELECT * FROM job_overview").fetchall()
            with lock:
                outcomes["queries"] += 1
            if last_round:
                return
            last_round = done

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads)

    final = connect(url, database, **settings)
    final.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert final.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

    reference_db = str(tmp_path / "reference.db")
    reference = connect(url, reference_db, **settings)
    reference.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()

    # A GPU's samples from its first event to 60 s after its last come in any sequence of
    # refreshes; those before it arrive only with other GPUs' fetches and are never used.
    # (Each GPU's bounds once: a subquery per sample scanned every event for each sample.)
    needed = ("(SELECT s.* FROM pp_samples AS s JOIN (SELECT gpu_uuid AS uuid, min(t_start_ns) AS first_ns, "
              "max(t_end_ns) + 60000000000 AS last_ns FROM pp_events GROUP BY gpu_uuid) USING (uuid) "
              "WHERE ts_ms * 1000000 BETWEEN first_ns AND last_ns)")
    for table in ["pp_events", "pp_jobs", "pp_layers", needed]:
        n = final.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        assert n == reference.execute(f"SELECT count(*) FROM {table}").fetchone()[0], table
    assert final.execute("SELECT count(*) FROM pp_events").fetchone()[0] == sum(len(j) - 1 for j in jobs)
    assert final.execute("SELECT group_concat(parameters) FROM (SELECT parameters FROM job_overview "
                         "ORDER BY job_id)").fetchone() == ("1000,2000,3000",)
    states = assert_same_layer_states(final, reference)
    print(f"concurrency: {outcomes['refreshed']} refreshes, {outcomes['busy']} clean SQLITE_BUSY failures, "
          f"{outcomes['queries']} query rounds, {len(states)} layer states equal")


@pytest.mark.parametrize("steps", [
    # The first refresh sees one GPU's job: the others' first fetch starts later than it would
    # have in one refresh.
    [(0.3, 0, 0), (0.3, 0.5, 0.5), (0.9, 0.9, 0.9)],
    # Fetches that end 60 s after a job's last event known then, short of its real end.
    [(0.2, 0.2, 0.2), (0.85, 0.9, 0.95), (0.97, 0.97, 0.97)],
], ids=["one_gpu_first", "fetches_end_short"])
def test_refreshes_as_the_files_grow_equal_one_refresh(env, tmp_path, steps):
    """Refreshes while the jobs still write (each file cut at a share of its lines, per GPU)
    leave exactly the layer states of one final refresh over the finished files: each GPU's
    alignment sees the same samples whatever the other GPUs' data made earlier fetches cover."""
    url = env["prometheus_url"]
    settings = {"attribution_margin_seconds": 10**9}  # the jobs are still running until final
    events = tmp_path / "events"
    events.mkdir()
    jobs = [job_lines(g) for g in range(len(dcgm_data.GPUS))]
    growing = connect(url, str(tmp_path / "growing.db"), **settings)
    folded_on_the_way = 0
    for shares in steps + [(1,) * len(jobs)]:
        for g, (lines, share) in enumerate(zip(jobs, shares)):
            (events / f"rank{g}.jsonl").write_text("".join(lines[:int(len(lines) * share)]))
        folded_on_the_way += int(growing.execute("SELECT windows_folded FROM pp_refresh(?)", (str(events),)).fetchone()[0])
    assert folded_on_the_way > 0  # the refreshes on the way folded windows: the parts are real parts
    # Every sample the jobs need was asked for (pp_fetch_state): another refresh asks for nothing.
    assert growing.execute("SELECT http_requests FROM pp_refresh(?)", (str(events),)).fetchone()[0] in (0, "0")
    growing.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    once = connect(url, str(tmp_path / "once.db"), **settings)
    once.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    alignment = "SELECT uuid, from_ms, through_ms, offset_ns, timing_ns, status FROM pp_alignment ORDER BY uuid, from_ms"
    assert growing.execute(alignment).fetchall() == once.execute(alignment).fetchall()
    assert_same_layer_states(growing, once)


def test_refresh_while_a_cursor_of_the_same_connection_is_open(env, tmp_path):
    """pp_refresh writes from inside a SELECT: with another statement of the same connection
    still reading, and inside a transaction that is then rolled back."""
    conn = connect(env["prometheus_url"], str(tmp_path / "nested.db"))
    attribution = str(Path(__file__).resolve().parents[1] / "data" / "attribution" / "*.jsonl")
    conn.execute("SELECT pp_install_views()")
    conn.execute("BEGIN")
    assert int(conn.execute("SELECT events_added FROM pp_refresh(?)", (attribution,)).fetchone()[0]) == 6
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM pp_events").fetchone() == (0,)
    conn.execute("CREATE TABLE paths(p)")
    conn.execute("INSERT INTO paths VALUES (?), (?)", (attribution, attribution))
    reading = conn.execute("SELECT p FROM paths")
    first = reading.fetchone()
    assert int(conn.execute("SELECT events_added FROM pp_refresh(?)", first).fetchone()[0]) == 6
    second = reading.fetchone()
    assert int(conn.execute("SELECT events_added FROM pp_refresh(?)", second).fetchone()[0]) == 0
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM pp_events").fetchone() == (6,)


def test_a_refresh_that_fills_the_database_keeps_nothing(env, tmp_path):
    """A refresh that runs out of room (PRAGMA max_page_count here; a full disk or a file-size
    limit alike) fails with SQLite's "database or disk is full" and leaves every table as it
    was, wherever it stops: SQLite may roll back the whole transaction on that error, and the
    align step's other GPUs, on another thread, must then write nothing (each write would have
    committed on its own: windows of a refresh that failed, stored). Once there is room, the
    refresh gives the tables of one that never failed."""
    url = env["prometheus_url"]
    settings = {"attribution_margin_seconds": 10**9}
    events = tmp_path / "events"
    events.mkdir()
    jobs = [job_lines(g) for g in range(len(dcgm_data.GPUS))]
    for g, lines in enumerate(jobs):
        (events / f"rank{g}.jsonl").write_text("".join(lines[:len(lines) // 2]))
    half = tmp_path / "half.db"
    conn = connect(url, str(half), **settings)
    conn.execute("SELECT * FROM pp_refresh(?)", (str(events),)).fetchall()
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                                "AND name NOT LIKE 'sqlite%' ORDER BY name")]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    for g, lines in enumerate(jobs):
        (events / f"rank{g}.jsonl").write_text("".join(lines))

    def counts(c):
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}

    def refresh_within(limit):
        """Counts before and after a refresh of a copy of half.db allowed `limit` pages, and its error."""
        trial = tmp_path / "trial.db"
        shutil.copyfile(half, trial)
        c = connect(url, str(trial), **settings)
        before = counts(c)
        c.execute(f"PRAGMA max_page_count = {limit}")
        try:
            c.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
            error = None
        except sqlite3.OperationalError as e:
            error = str(e)
        c.close()
        c = connect(url, str(trial))
        after = counts(c)
        c.close()
        return before, after, error

    # The pages the refresh needs (the file only grows inside its transaction, so the size it
    # ends with is its peak), then limits below it, every 8 pages: each stops it in another step,
    # the align step's writes among them. The peak varies a little from run to run: the GPUs'
    # pieces write in the order their threads finish, and the B-trees split where the rows fall.
    # So a limit just under one run's peak may be enough for another, and a refresh allowed a
    # little more than the peak must go through.
    varies = 40
    trial = tmp_path / "trial.db"
    shutil.copyfile(half, trial)
    c = connect(url, str(trial), **settings)
    c.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    high = c.execute("PRAGMA page_count").fetchone()[0]
    c.close()
    assert high > pages and refresh_within(high + varies)[2] is None
    failed = 0
    for limit in range(high - 4, max(pages, high - 124), -8):
        before, after, error = refresh_within(limit)
        if error is None and limit > high - varies:
            continue
        assert error == "pp_refresh: database or disk is full", (limit, high, error)
        assert after == before, (limit, {t: (before[t], after[t]) for t in tables if after[t] != before[t]})
        failed += 1
    assert failed >= 10

    conn = connect(url, str(tmp_path / "trial.db"), **settings)
    conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    once = connect(url, str(tmp_path / "once.db"), **settings)
    once.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert_same_layer_states(conn, once)


def test_a_full_database_inside_begin_says_the_whole_transaction_went(env, tmp_path):
    """Inside the application's BEGIN, a write that finds the database full makes SQLite roll back
    the whole transaction, the application's own rows too: the error says so, where it said only
    "database or disk is full" and the application learnt it from its COMMIT ("no transaction is
    active")."""
    url = env["prometheus_url"]
    (tmp_path / "events").mkdir()
    for g in range(len(dcgm_data.GPUS)):
        (tmp_path / "events" / f"rank{g}.jsonl").write_text("".join(job_lines(g)))
    conn = connect(url, str(tmp_path / "app.db"))
    conn.execute("SELECT pp_install_views()")
    conn.execute("CREATE TABLE app_rows(x)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 10}")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO app_rows VALUES (1)")
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(tmp_path / "events"),)).fetchall()
    assert not conn.in_transaction
    assert str(error.value) == (
        "pp_refresh: database or disk is full; SQLite rolled back the whole transaction this refresh ran in, its "
        "writes before the refresh included: nothing of it was stored (once the cause is dealt with, run what it did "
        "again, and pp_refresh)")
    assert conn.execute("SELECT count(*) FROM app_rows").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM pp_events").fetchone() == (0,)


FILE_SIZE_LIMITED_REFRESH = """
import resource, sqlite3, sys
from test_faults import connect
url, database, events, limit = sys.argv[1:5]
conn = connect(url, database, attribution_margin_seconds=10**9)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))  # (Python ignores SIGXFSZ: writes fail, EFBIG)
try:
    conn.execute("SELECT * FROM pp_refresh(?, 1)", (events,)).fetchall()
except sqlite3.OperationalError as error:
    print(error)
"""


def test_a_refresh_past_the_file_size_limit_names_the_reason(env, tmp_path):
    """A refresh whose database would grow past the process's file-size limit (ulimit -f) fails
    saying so, where SQLite says only "disk I/O error", and keeps nothing; without the limit the
    same refresh runs."""
    url = env["prometheus_url"]
    events = tmp_path / "events"
    events.mkdir()
    jobs = [job_lines(g) for g in range(len(dcgm_data.GPUS))]
    for g, lines in enumerate(jobs):
        (events / f"rank{g}.jsonl").write_text("".join(lines[:len(lines) // 2]))
    database = tmp_path / "limited.db"
    conn = connect(url, str(database), attribution_margin_seconds=10**9)
    conn.execute("SELECT * FROM pp_refresh(?)", (str(events),)).fetchall()
    before = conn.execute("SELECT (SELECT count(*) FROM pp_events), (SELECT count(*) FROM pp_windows), "
                          "(SELECT group_concat(bytes) FROM pp_event_files)").fetchone()
    for g, lines in enumerate(jobs):
        (events / f"rank{g}.jsonl").write_text("".join(lines))
    limit = database.stat().st_size + 40000
    said = subprocess.run([sys.executable, "-c", FILE_SIZE_LIMITED_REFRESH, url, str(database), str(events), str(limit)],
                          capture_output=True, text=True, timeout=120, check=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout
    assert said == "pp_refresh: disk I/O error (File too large)\n", said
    assert conn.execute("SELECT (SELECT count(*) FROM pp_events), (SELECT count(*) FROM pp_windows), "
                        "(SELECT group_concat(bytes) FROM pp_event_files)").fetchone() == before
    assert int(conn.execute("SELECT events_added FROM pp_refresh(?, 1)", (str(events),)).fetchone()[0]) > 0


def test_jobs_far_apart_on_a_gpu_fetch_their_own_spans(env, tmp_path):
    """Two jobs a month apart on one GPU: the samples of each job's span are fetched, not the
    month between them; an event whose clock was years off is named before any request."""
    lines = job_lines(0)
    later = [json.loads(line) for line in job_lines(0, job_id="later")[1:41]]
    month = 30 * 86400 * 10**9
    for event in later:
        event["t_start_ns"] += month
        event["t_end_ns"] += month
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "a.jsonl").write_text("".join(lines))
    (tmp_path / "events" / "b.jsonl").write_text("".join(json.dumps(e) + "\n" for e in later))
    conn = connect(env["prometheus_url"], str(tmp_path / "apart.db"))
    added, requests = conn.execute(
        "SELECT events_added, http_requests FROM pp_refresh(?, 1)", (str(tmp_path / "events"),)).fetchone()
    assert added == len(lines) - 1 + len(later)
    # One request for the first job's span, and for the later one's, which Prometheus has no
    # samples of, one per label the GPU's series may carry (UUID, uuid, Hostname, hostname).
    assert requests == 5, requests
    assert conn.execute("SELECT count(*) > 0 FROM layer_metrics WHERE job_id = 'job0' AND data_num > 0").fetchone() == (1,)

    years = 9 * 365 * 86400 * 10**9
    stray = dict(later[0], job_id="stray", t_start_ns=later[0]["t_start_ns"] + years,
                 t_end_ns=later[0]["t_end_ns"] + years)
    (tmp_path / "events" / "c.jsonl").write_text(json.dumps(dict(later[0], job_id="stray")) + "\n" +
                                                 json.dumps(stray) + "\n")
    before = http_stats(conn)["requests"]
    # The failed refresh takes back its imports: the error names the lines in their file.
    stray_file = re.escape(str(tmp_path / "events" / "c.jsonl"))
    with pytest.raises(sqlite3.OperationalError, match=r"pp_refresh: the samples to fetch from 20\d\d-.* UTC need "
                       r"\d+ requests of samples_chunk_seconds = 3600 \(limit max_requests_per_query = 10000\); the "
                       r"longest job span in that time is job 'stray' on GPU " + dcgm_data.GPUS[0][2] +
                       r": its events run from 20\d\d-\S+ \S+ \(" + stray_file + r" line 1\) to 2\d\d\d-\S+ \S+ UTC \(" +
                       stray_file + r" line 2\) \(samples are asked for from \S+ \S+ to now, \S+ \S+\): if a clock "
                       r"was off, correct or remove the line whose time is off in its file \(no setting skips it\); if "
                       r"the job did run that long, raise the limit or the chunk"):
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(tmp_path / "events"),)).fetchall()
    assert http_stats(conn)["requests"] == before
    assert conn.execute("SELECT count(*) FROM pp_events WHERE job_id = 'stray'").fetchone() == (0,)

    # A job refreshed in parts: each line is named with its own event's time, though the
    # samples are asked for from where the last refresh's ended.
    (tmp_path / "events" / "c.jsonl").unlink()
    grow = [dict(json.loads(line), job_id="grow") for line in lines[1:3]]
    grow_file = tmp_path / "events" / "d.jsonl"
    grow_file.write_text("".join(json.dumps(e) + "\n" for e in grow))
    conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(tmp_path / "events"),)).fetchall()
    with open(grow_file, "a") as f:
        f.write(json.dumps(dict(grow[1], t_start_ns=grow[1]["t_start_ns"] + years,
                                t_end_ns=grow[1]["t_end_ns"] + years)) + "\n")
    first = datetime.fromtimestamp(grow[0]["t_start_ns"] // 10**9, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    with pytest.raises(sqlite3.OperationalError,
                       match=r"job 'grow' on GPU \S+: its events run from " + first + r" \(" + re.escape(str(grow_file)) +
                       r" line 1\) to 2\d\d\d-\S+ \S+ UTC \(" + re.escape(str(grow_file)) + r" line 3\) \(samples are "
                       r"asked for from (?!" + first + r")\S+ \S+ to now, "):
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(tmp_path / "events"),)).fetchall()


def test_a_refresh_keeps_the_locks_of_the_processs_other_connections(tmp_path):
    """The refresh's check of the -wal file must not touch SQLite's locks: closing a descriptor of
    the -shm file would drop every POSIX lock the process holds on it, and another process could
    then checkpoint over a snapshot a connection of this one still reads."""
    database = str(tmp_path / "locks.db")
    refreshing = connect(database=database)
    refreshing.execute("PRAGMA journal_mode = WAL")
    refreshing.execute("SELECT pp_install_views()")
    refreshing.execute("CREATE TABLE t(x)")
    refreshing.execute("INSERT INTO t VALUES (1), (2)")
    reader = sqlite3.connect(database, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)  # its snapshot
    refreshing.execute("SELECT * FROM pp_refresh(NULL)").fetchall()
    other_process = (
        "import sqlite3, sys\n"
        # A checkpoint blocked by a reader waits out the busy timeout before it says so.
        "c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0.2)\n"
        "c.execute('INSERT INTO t VALUES (3)')\n"
        "print(c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()[0])\n")
    import subprocess
    import sys
    busy = subprocess.run([sys.executable, "-c", other_process, database], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert busy == "1", "the checkpoint ran over a snapshot that a reader of this process still holds"
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)
    reader.execute("COMMIT")
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (3,)
