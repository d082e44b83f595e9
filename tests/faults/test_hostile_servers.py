"""Servers that answer what a real Prometheus never would, on loopback: slow, 429 and 503,
bodies that are not JSON or not UTF-8, echoed credentials, partial answers, 50,000 series.

Each test is an example of what the extension does, written so that it fails if the engine
misbehaves. The server is tests/fixtures/hostile_server.py, one per module (so that its
per-query attempt counts are this module's); its first path segment picks the behaviour.
CTest runs this file as `faults.hostile`, and the ASan stage again with the sanitized
extension loaded; PP_EXTENSION names the built extension.
"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests.fixtures import hostile_server
from tests.fixtures.extension import EXTENSION, connect, http_stats, timed


@pytest.fixture(scope="module")
def hostile():
    """A hostile server of this module alone, so its per-query attempt counts are ours."""
    work = Path(tempfile.mkdtemp(prefix="pp-faults-"))
    process, url = hostile_server.start(work)
    yield url
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# ---- Slow responses, 429 and 503 --------------------------------------------------------------

def test_slower_than_timeout_fails_after_retries(hostile):
    conn = connect(f"{hostile}/slow", timeout_ms=500, retries=2)
    error, elapsed = timed(lambda: conn.execute("SELECT * FROM prom_range('slow_a', 1700000000, 1700000001, 1)").fetchall())
    assert isinstance(error, sqlite3.OperationalError)
    assert str(error).endswith("timed out after 500 ms (setting timeout_ms) (after 3 attempts)"), str(error)
    assert elapsed < 3 * 0.5 + 0.3 + 1.0  # never the server's 3 s per answer


def test_an_interrupt_stops_a_request_that_waits(hostile):
    """Ctrl-C (sqlite3_interrupt) while a slow server has not answered, and while a retry
    waits out its backoff: the call ends within about a second, saying it was interrupted."""
    conn = connect(f"{hostile}/slow", timeout_ms=20000, retries=0)
    threading.Timer(0.3, conn.interrupt).start()
    error, elapsed = timed(lambda: conn.execute("SELECT * FROM prom_range('slow_i', 1700000000, 1700000001, 1)").fetchall())
    assert isinstance(error, sqlite3.OperationalError) and str(error) == "prom_range: interrupted", str(error)
    assert elapsed < 1.6, elapsed  # never the server's 3 s
    conn = connect(f"{hostile}/unavailable", timeout_ms=20000, retries=8)
    threading.Timer(0.3, conn.interrupt).start()
    error, elapsed = timed(lambda: conn.execute("SELECT * FROM prom_range('up_i', 1700000000, 1700000001, 1)").fetchall())
    assert isinstance(error, sqlite3.OperationalError) and str(error) == "prom_range: interrupted", str(error)
    assert elapsed < 1.0, elapsed  # never the backoff of eight retries (some 20 s)


def test_one_slow_answer_is_retried_not_awaited(hostile):
    """The first answer would take 2 s; the retry answers at once and completes the result."""
    conn = connect(f"{hostile}/slow-once", timeout_ms=500, retries=1)
    rows, elapsed = timed(lambda: conn.execute(
        "SELECT ts, value FROM prom_samples('slow_b', 1700000000, 1700000001)").fetchall())
    assert rows == [(1700000000.0, 1.0), (1700000001.0, 2.0)]
    assert 0.5 <= elapsed < 1.9
    assert http_stats(conn)["requests"] == 2


@pytest.mark.parametrize("mode, query, timeout_ms, least, most", [
    ("retry-after", "ra_429", 3000, 1.0, 2.5),        # 429, Retry-After: 1
    ("retry-after-503", "ra_503", 3000, 1.0, 2.5),    # 503 with Prometheus' envelope, Retry-After: 1
    ("retry-after-long", "ra_long", 700, 0.7, 2.0),   # Retry-After: 30, capped at timeout_ms
    ("retry-after-date", "ra_date", 3000, 0.0, 0.9),  # an HTTP date: exponential backoff (100 ms)
])
def test_retry_after_is_honoured_within_timeout(hostile, mode, query, timeout_ms, least, most):
    conn = connect(f"{hostile}/{mode}", timeout_ms=timeout_ms, retries=2)
    rows, elapsed = timed(lambda: conn.execute(
        f"SELECT count(*) FROM prom_samples('{query}', 1700000000, 1700000001)").fetchall())
    assert rows == [(2,)]
    assert least <= elapsed < most, f"{mode}: {elapsed:.2f} s"
    assert http_stats(conn)["requests"] == 2


def test_unavailable_shows_the_servers_error_after_retries(hostile):
    conn = connect(f"{hostile}/unavailable", timeout_ms=700, retries=2)
    with pytest.raises(sqlite3.OperationalError,
                       match=r"^prom_samples: Prometheus error unavailable \(HTTP 503\): TSDB not ready$"):
        conn.execute("SELECT * FROM prom_samples('down', 1700000000, 1700000001)").fetchall()
    assert http_stats(conn)["requests"] == 3


def test_a_query_the_server_timed_out_is_not_asked_again(hostile):
    """A server's query timeout spent its whole time limit: each retry would wait as long again.
    The error says which setting makes each request smaller."""
    conn = connect(f"{hostile}/query-timeout", retries=3)
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM prom_samples('up', 1700000000, 1700000001)").fetchall()
    assert str(refused.value) == (
        "prom_samples: Prometheus error timeout (HTTP 503): query timed out in expression evaluation; each request "
        "asks for up to samples_chunk_seconds (3600) of every series the selector matches: lower that setting, or "
        "narrow the selector")
    assert http_stats(conn)["requests"] == 1


# ---- Hostile labels and bodies ------------------------------------------------------------------

def test_label_values_that_need_escaping_come_back_exactly(hostile):
    conn = connect(f"{hostile}/labels")
    metric, labels = conn.execute(
        "SELECT metric, labels FROM prom_range('x', 1700000000, 1700000001, 1) LIMIT 1").fetchone()
    expected = {k: v for k, v in hostile_server.LABELS.items() if k != "__name__"}
    assert metric == hostile_server.LABELS["__name__"]
    assert json.loads(labels) == expected
    # Through SQLite's JSON functions too (whose json_extract ends a string at an escaped NUL).
    for key, value in expected.items():
        if "\0" in value:
            continue
        assert conn.execute("SELECT json_extract(?, '$.' || ?)", (labels, key)).fetchone()[0] == value


@pytest.mark.parametrize("mode, reason", [
    ("badutf8", "invalid JSON: parse error at line 1, column 114: syntax error while parsing value - "
                "invalid string: ill-formed UTF-8 byte"),
    ("surrogate", "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"),
    ("truncated", "invalid JSON: parse error"),
])
def test_bodies_that_are_not_valid_json_text_give_a_clear_error(hostile, mode, reason):
    """Bytes that are not UTF-8 never reach SQLite: the error says why, in valid UTF-8 (Python
    would otherwise raise UnicodeDecodeError instead of the error), and the connection lives on."""
    conn = connect(f"{hostile}/{mode}")
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
    message = str(error.value)
    assert message.startswith(f"prom_range: HTTP 200 from {hostile}/{mode}/api/v1/query_range is not a "
                              "Prometheus API response ("), message
    assert reason in message
    conn.execute("SELECT pp_config('prometheus_url', ?)", (f"{hostile}/plain",))
    assert conn.execute("SELECT count(*) FROM prom_range('x', 1700000000, 1700000001, 1)").fetchone() == (2,)


def test_long_non_ascii_value_is_cut_at_a_character(hostile):
    conn = connect(f"{hostile}/notnumber-utf8")
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
    shown = re.fullmatch(r"prom_range: sample value '((?:zwölf)+z?w?ö?l?)\.\.\.' is not a number", str(error.value))
    assert shown, str(error.value)
    assert 35 <= len(shown.group(1).encode()) <= 40


@pytest.mark.parametrize("mode", ["echo-warning", "echo-value", "echo-cut", "echo-repeated"])
@pytest.mark.parametrize("credential", ["bearer", "url-user"])
def test_credentials_a_successful_answer_echoes_never_show(hostile, tmp_path, mode, credential):
    """A proxy or server may put the request's credentials into a 200 answer: a warning, a value
    the error quotes, a body cut short inside them, the labels of a series the warning about a
    repeated listing names. Each shows as ***, whole or cut."""
    token = "s3cret-Token-4242"
    if credential == "bearer":
        (tmp_path / "token").write_text(token + "\n")
        conn = connect(f"{hostile}/{mode}", bearer_token_file=str(tmp_path / "token"))
    else:  # a token given as the URL's user name, which curl sends as basic auth "TOKEN:"
        conn = connect(hostile.replace("http://", f"http://{token}@") + f"/{mode}")
    try:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
        shown = conn.execute("SELECT pp_last_warnings()").fetchone()[0]
    except sqlite3.OperationalError as error:
        shown = str(error)
    assert "***" in shown, shown
    encoded = [token, token[:6], "czNjcmV0LVRva2VuLTQyNDI6", "czNjcmV0LVRv"]  # the last two: base64 of "TOKEN:"
    assert not any(secret in shown for secret in encoded), shown


def test_a_partial_answer_says_so(hostile):
    """VictoriaMetrics' cluster answers success with isPartial when storage nodes are missing: the
    rows come, with a warning that they may be incomplete."""
    conn = connect(f"{hostile}/partial")
    assert conn.execute("SELECT count(*) FROM prom_range('x', 1700000000, 1700000001, 1)").fetchone() == (2,)
    assert json.loads(conn.execute("SELECT pp_last_warnings()").fetchone()[0]) == [
        f"prom_range: the answer from {hostile}/partial/api/v1/query_range is partial (isPartial: true): some of the "
        "server's storage nodes did not answer, so series or samples may be missing; run the query again"]


def test_a_refresh_stores_no_partial_answer(hostile, tmp_path):
    """pp_refresh never asks again for a time it has fetched, so samples missing from a partial
    answer would be missing from its results for good: it refuses the answer, and writes nothing."""
    events = tmp_path / "events.jsonl"
    with open(events, "w") as f:
        for k in range(4):  # events from 1700000005 to 1700000049: 30 s of them past the samples served
            start = (1700000005 + 12 * k) * 10**9
            f.write(json.dumps({
                "job_id": "partial", "host_name": "node-a", "ip": None, "pod": None, "namespace": None,
                "gpu_uuid": "GPU-a", "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 1, "epoch": 0,
                "batch": k, "layer": "l", "layer_type": "Linear", "forward": True, "t_start_ns": start,
                "t_end_ns": start + 8 * 10**9, "cpu_num": 1.0}) + "\n")
    conn = connect(f"{hostile}/partial-gpu", database=str(tmp_path / "results.db"))
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert str(refused.value) == (
        f"pp_refresh: pp_gpu_samples: the answer from {hostile}/partial-gpu/api/v1/query is partial (isPartial: true): "
        "some of the server's storage nodes did not answer, so series or samples may be missing; a refresh never "
        "asks again for a time it has fetched, so it stores no partial answer: refresh again once every storage "
        "node answers")
    # Nothing was written, the tables that the refresh would have created included.
    assert conn.execute("SELECT count(*) FROM sqlite_schema").fetchone() == (0,)


def test_a_refresh_asks_thanos_for_an_error_where_a_store_is_down(hostile, tmp_path):
    """Thanos Query answers a query some of whose stores are down with the others' samples and a
    warning (its default partial_response=true): a refresh asks for the error instead, and
    writes nothing; prom_samples, whose rows are not stored, takes the answer with its warning."""
    events = tmp_path / "events.jsonl"
    start = 1700000005 * 10**9
    events.write_text(json.dumps({
        "job_id": "thanos", "host_name": "node-a", "ip": None, "pod": None, "namespace": None, "gpu_uuid": "GPU-a",
        "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 1, "epoch": 0, "batch": 0, "layer": "l",
        "layer_type": "Linear", "forward": True, "t_start_ns": start, "t_end_ns": start + 8 * 10**9,
        "cpu_num": 1.0}) + "\n")
    conn = connect(f"{hostile}/thanos-partial-gpu", database=str(tmp_path / "results.db"))
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM pp_refresh(?, 1)", (str(events),)).fetchall()
    assert str(refused.value) == (
        "pp_refresh: pp_gpu_samples: Prometheus error execution (HTTP 422): receive series from store "
        "10.0.0.7:10901: rpc error: code = Unavailable desc = connection refused")
    assert conn.execute("SELECT count(*) FROM sqlite_schema").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM prom_samples('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000060)"
                        ).fetchone() == (30,)
    assert "receive series from store" in conn.execute("SELECT pp_last_warnings()").fetchone()[0]


def test_an_answer_nested_too_deep_is_refused_before_it_fills_memory(hostile):
    """Each level of JSON nesting costs the parser a value of its own, some 40 bytes for each byte
    of the answer: within max_response_bytes, brackets alone would take gigabytes. An API answer
    nests eight levels at most (a native histogram's buckets)."""
    conn = connect(f"{hostile}/deep")
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
    assert str(refused.value) == (
        f"prom_range: HTTP 200 from {hostile}/deep/api/v1/query_range is not a Prometheus API response: its JSON "
        "nests more than 64 levels deep (an API answer nests 8 at most)")


def test_warnings_past_the_hundred_kept_are_counted(hostile):
    """pp_last_warnings() keeps a statement's first 100 warnings; the others are not dropped
    unsaid, since a refresh's own warnings (events not folded yet) may come after a server's."""
    conn = connect(f"{hostile}/many-warnings")
    assert conn.execute("SELECT count(*) FROM prom_range('x', 1700000000, 1700000001, 1)").fetchone() == (2,)
    warnings = json.loads(conn.execute("SELECT pp_last_warnings()").fetchone()[0])
    assert warnings[:100] == [f"prom_range: store {i} did not answer" for i in range(100)]
    assert warnings[100:] == ["50 more warnings were not kept: pp_last_warnings() keeps the first 100 of a statement"]


def test_a_nul_in_the_servers_error_keeps_the_rest_of_it(hostile):
    conn = connect(f"{hostile}/nul-error")
    with pytest.raises(sqlite3.OperationalError,
                       match=r"^prom_range: Prometheus error bad\ufffddata \(HTTP 400\): the real reason$"):
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()


def test_an_overlong_error_type_leaves_the_error_text_in_the_message(hostile):
    conn = connect(f"{hostile}/long-error-type", retries=0)
    with pytest.raises(sqlite3.OperationalError,
                       match=r"^prom_range: Prometheus error x{64}\.\.\. \(1048576 bytes\) \(HTTP 503\): the real reason$"):
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()


def test_a_response_header_too_long_for_libcurl_is_named(hostile):
    """libcurl 7.x answers a header line over its 100 KB limit with 'Out of memory': the message
    says what that means here."""
    conn = connect(f"{hostile}/huge-header", retries=0)
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
    assert str(refused.value) == (
        f"prom_range: cannot reach {hostile}/huge-header/api/v1/query_range: libcurl reports 'Out of memory', "
        "its answer to a response header line over 100 KB: a server or proxy in front of it sends one")


def test_a_cursor_held_open_does_not_answer_later_statements(hostile, tmp_path):
    """Identical requests of one statement share an answer; a statement that comes later, while an
    earlier one still holds a cursor open, asks again: with the credentials now set, and with
    its own warnings."""
    (tmp_path / "token").write_text("first-token\n")
    conn = connect(f"{hostile}/auth", bearer_token_file=str(tmp_path / "token"))
    query = "SELECT json_extract(labels, '$.authorization') FROM prom_range('x', 1700000000, 1700000001, 1)"
    held = conn.cursor()
    assert held.execute(query).fetchone() == ("Bearer first-token",)  # one of two rows read: still open
    conn.execute("SELECT pp_config('bearer_token_file', '')")
    assert conn.execute(query).fetchall() == [("",), ("",)]
    (tmp_path / "token").write_text("second-token\n")
    conn.execute("SELECT pp_config('bearer_token_file', ?)", (str(tmp_path / "token"),))
    assert conn.execute(query).fetchall() == [("Bearer second-token",)] * 2
    # One statement's nested loop still shares one answer (3 outer rows, one request), and so
    # does a correlated subquery, whose every run opens a cursor of its own.
    before = http_stats(conn)["requests"]
    assert conn.execute("WITH n(i) AS (VALUES (1), (2), (3)) SELECT count(*) FROM n, prom_range('x', "
                        "1700000000, 1700000001, 1) AS p").fetchone() == (6,)
    assert http_stats(conn)["requests"] == before + 1
    assert conn.execute("WITH n(i) AS (VALUES (1), (2), (3)) SELECT sum((SELECT count(*) FROM prom_range('x', "
                        "1700000000, 1700000001, 1) WHERE n.i > 0)) FROM n").fetchone() == (6,)
    assert http_stats(conn)["requests"] == before + 2
    # The same statement run again (Python reuses its prepared statement) asks again too.
    conn.execute("SELECT pp_config('prometheus_url', ?)", (f"{hostile}/count",))
    seen = [conn.execute("SELECT value FROM prom_range('requests_seen', 1700000000, 1700000000, 1)").fetchone()[0]
            for _ in range(3)]
    assert seen[0] < seen[1] < seen[2], seen
    # Warnings are those of the latest statement (or run), not of the one held open.
    count = "SELECT count(*) FROM prom_range('x', 1700000000, 1700000001, 1)"
    conn.execute("SELECT pp_config('prometheus_url', ?)", (f"{hostile}/warn",))
    assert conn.execute(count).fetchone() == (2,)
    assert "might not be a counter" in conn.execute("SELECT pp_last_warnings()").fetchone()[0]
    conn.execute("SELECT pp_config('prometheus_url', ?)", (f"{hostile}/plain",))
    assert conn.execute(count).fetchone() == (2,)
    assert conn.execute("SELECT pp_last_warnings()").fetchone()[0] == "[]"
    held.close()


CARDINALITY_SCRIPT = """
import json, sqlite3, sys
def kib(field):
    status = open("/proc/self/status").read()
    return int(status.split(field + ":")[1].split()[0])
conn = sqlite3.connect(":memory:")
conn.enable_load_extension(True)
conn.load_extension(sys.argv[1])
conn.execute("SELECT pp_config('prometheus_url', ?)", (sys.argv[2],))
before = kib("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the current RSS
rows = conn.execute("SELECT count(*), count(DISTINCT labels), count(DISTINCT json_extract(labels, '$.UUID')), "
                    "sum(value) FROM prom_samples('DCGM_FI_DEV_GPU_UTIL', 1700000000, 1700000001)").fetchone()
peak = kib("VmHWM")
stats = json.loads(conn.execute("SELECT pp_http_stats()").fetchone()[0])
print(json.dumps({"rows": rows, "kib": peak - before, "stats": stats}))
"""


def test_fifty_thousand_series_in_one_response(hostile):
    """50,000 series in one 8 MB response: every series and point arrives, and the memory it
    takes is a small multiple of the response (measured in a fresh process)."""
    out = subprocess.run([sys.executable, "-c", CARDINALITY_SCRIPT, EXTENSION, f"{hostile}/cardinality"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    result = json.loads(out)
    n = hostile_server.CARDINALITY
    expected_sum = sum(i % 101 + (i + 1) % 101 for i in range(n))
    assert result["rows"] == [2 * n, n, n, expected_sum]
    body = result["stats"]["bytes"]
    grown = result["kib"] * 1024
    print(f"cardinality: {n} series, body {body / 1e6:.1f} MB, peak memory grew {grown / 1e6:.1f} MB")
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        return  # test.sh's asan stage: ASan's shadow memory and quarantine say nothing of ours
    assert grown < 4 * body, f"peak memory grew {grown / 1e6:.0f} MB for a {body / 1e6:.0f} MB response"


def test_an_https_url_of_a_plain_http_server_fails_at_once(hostile):
    """A TLS handshake that failed fails the same way on every attempt: it is not sent again."""
    conn = connect(hostile.replace("http://", "https://") + "/plain")
    conn.execute("SELECT pp_config('retries', 3)")
    with pytest.raises(sqlite3.OperationalError) as refused:
        conn.execute("SELECT * FROM prom_range('x', 1700000000, 1700000001, 1)").fetchall()
    message = str(refused.value)
    assert message.startswith(f"prom_range: cannot reach {hostile.replace('http://', 'https://')}/plain/api/v1/"
                              "query_range: "), message
    assert "wrong version number" in message and "attempts" not in message, message
    assert http_stats(conn)["requests"] == 1

