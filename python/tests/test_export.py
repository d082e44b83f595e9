"""`precisionprobe export` and `serve` as a platform engineer runs them: a one-minute recording of
the offline emulator backfilled into a real Prometheus and refreshed by `export`; the file it
writes checked by promtool; `serve` scraped by a second, real Prometheus, whose answers must be
the report's numbers; the Grafana dashboard's queries run against that Prometheus."""
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import extension_path, run_cli as precisionprobe, wait_for
from precisionprobe._version import __version__
from precisionprobe.analysis import openmetrics, serve as endpoint
from precisionprobe.analysis.report import JobReport, Row, Value
from precisionprobe.emulator import offline
from precisionprobe.emulator.profile import Profile
from precisionprobe.harness import prometheus, processes
from precisionprobe.harness.ports import free_port, wait_ready

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "precisionprobe-dashboard.json"
DOC = ROOT / "docs" / "export.md"
SHORTS = [short for _, short, _ in openmetrics.METRICS]
SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text):
    """{(name, frozenset of labels): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, labels, value = SAMPLE.match(line).groups()
        out[(name, frozenset(LABEL.findall(labels)))] = float(value)
    return out


@pytest.fixture(scope="module")
def scraper(tmp_path_factory):
    """A real Prometheus scraping a loopback port every 200 ms, started first: it takes some
    5 s to apply its targets, which the recording and the refresh fill. `serve` listens there
    later (scraped below)."""
    port = free_port()
    process, url = prometheus.scrape([port], tmp_path_factory.mktemp("scrape"), interval_ms=200,
                                     job_name="precisionprobe")
    try:
        yield port, url
    finally:
        processes.stop(process)


@pytest.fixture(scope="module")
def run(tmp_path_factory, scraper):
    """A one-minute dlrm recording, refreshed and exported by `export` (from a backfilled
    Prometheus, stopped afterwards), and the report `analyze --format json` reads from the same
    database."""
    work = tmp_path_factory.mktemp("export")
    rec = offline.record(60, 100, 0.005, 7, Profile.named("dlrm"))
    paths = offline.write(rec, work / "a")
    process, url = prometheus.start_backfilled(paths["openmetrics"], work)
    try:
        precisionprobe("export", work / "a" / "events", "--prometheus", url, "--final", "--db", work / "a.db",
                       "--openmetrics", work / "a.prom")
    finally:
        processes.stop(process)
    report = json.loads(precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh",
                                       "--format", "json").stdout)
    (job,) = report["jobs"]
    return work, job, (work / "a.prom").read_text()


def test_promtool_accepts_the_exported_file(run):
    work, _, text = run
    # promtool parses Prometheus text format 0.0.4 and lints the names (units, _total, help):
    # `# UNIT` and `# EOF` are comments there. The OpenMetrics parser is checked by the scrape below.
    result = subprocess.run(["promtool", "check", "metrics"], input=text, text=True, capture_output=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert text.endswith("\n# EOF\n")
    assert oct((work / "a.prom").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert not list(work.glob(".a.prom.*"))  # the temporary file was renamed, not left


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_series_are_per_job_and_layer_type_only(run):
    _, job, text = run
    series = samples(text)
    label_names = {name for _, labels in series for name, _ in labels}
    assert label_names == {"job_id", "layer_type", "direction", "metric"}
    assert {dict(labels).get("direction") for _, labels in series} == {None, "forward", "backward", "untracked"}
    per_row = 3 + 5 * len(SHORTS)  # seconds, share, calls; estimate, interval, blend, identified
    assert len(series) <= per_row * len(job["layer_types"]) + 11
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(families) == len(set(families)) and {line.split()[3] for line in text.splitlines()
                                                    if line.startswith("# TYPE")} == {"gauge"}
    assert {name for name, _ in series} == set(families)


def _expected(job):
    """{(name, labels): value} that the report says the exposition holds for layer types."""
    out = {}
    for row in job["layer_types"]:
        labels = {"job_id": job["job_id"], "layer_type": row["layer_type"], "direction": row["direction"]}
        key = frozenset(labels.items())
        out[("precisionprobe_layer_type_share_ratio", key)] = row["share"]
        out[("precisionprobe_layer_type_gpu_seconds", key)] = row["seconds"]
        if row["calls"] is not None:
            out[("precisionprobe_layer_type_calls", key)] = row["calls"]
        for short in SHORTS:
            v = row["metrics"][short]
            scale = 100 if short == "gpu_util" else 1
            name = f"precisionprobe_layer_type_{short}"
            if v["kind"] == "estimate":
                out[(f"{name}_ratio", key)] = v["value"] / scale
            for kind in ("lower90", "upper90", "blend"):
                if v[kind] is not None:
                    out[(f"{name}_{kind}_ratio", key)] = v[kind] / scale
            if v["kind"] is not None:
                out[("precisionprobe_layer_type_identified", frozenset({**labels, "metric": short}.items()))] = \
                    1 if v["kind"] == "estimate" else 0
    return out


def test_exported_values_are_the_reports(run):
    _, job, text = run
    series = samples(text)
    per_type = {k: v for k, v in series.items() if k[0].startswith("precisionprobe_layer_type_")}
    assert per_type == _expected(job)  # exact: both are Python's shortest round-trip reprs
    key = frozenset({"job_id": job["job_id"]}.items())
    assert series[("precisionprobe_job_busy_ratio", key)] == job["busy_share"]
    assert series[("precisionprobe_job_gpu_seconds", key)] == job["gpu_seconds"]
    assert series[("precisionprobe_job_dram_active_ratio", key)] == job["job_metrics"]["dram_active"]
    assert series[("precisionprobe_job_gpu_shared", key)] == 0
    # The three kinds of number are all there: identified estimates, intervals only, blends.
    kinds = {row["metrics"][s]["kind"] for row in job["layer_types"] for s in SHORTS}
    assert kinds == {"estimate", "interval", "blend"}


def _query(url, expr):
    query = urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as r:
            answer = json.load(r)
    except urllib.error.HTTPError as e:
        answer = json.load(e)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


@pytest.fixture(scope="module")
def scraped(run, scraper):
    """`serve` on the run's database, on the port the scraper scrapes; yields once Prometheus
    holds every layer type's share."""
    work, job, _ = run
    port, url = scraper
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
    log = open(work / "serve.log", "w")
    server = processes.start([sys.executable, "-m", "precisionprobe", "serve", str(work / "a" / "events"),
                              "--db", str(work / "a.db"), "--no-refresh", "--port", str(port)], log, env=env)
    try:
        wait_ready(f"http://127.0.0.1:{port}/metrics", server, "precisionprobe serve", 60)
        count = f"count(precisionprobe_layer_type_share_ratio{{job_id={json.dumps(job['job_id'])}}})"
        wait_for(lambda: [r for r in _query(url, count) if int(r["value"][1]) == len(job["layer_types"])],
                 30, "Prometheus to store serve's series")
        yield url, port
        processes.stop(server)
        assert server.returncode == 0  # SIGTERM ends it cleanly
        (line,) = (work / "serve.log").read_text().splitlines()  # scrapes, timed out or not, are not logged
        assert line == f"python3 -m precisionprobe serve: serving http://127.0.0.1:{port}/metrics from '{work / 'a.db'}'"
    finally:
        processes.stop(server)
        log.close()


def test_prometheus_scrapes_serve_and_answers_the_reports_numbers(run, scraped):
    _, job, _ = run
    url, port = scraped
    expected = _expected(job)
    for name in ("precisionprobe_layer_type_share_ratio", "precisionprobe_layer_type_dram_active_ratio",
                 "precisionprobe_layer_type_gpu_util_upper90_ratio", "precisionprobe_layer_type_identified"):
        got = {}
        for r in _query(url, name):
            labels = {k: v for k, v in r["metric"].items() if k not in ("__name__", "instance", "job")}
            assert r["metric"]["job"] == "precisionprobe" and r["metric"]["instance"] == f"127.0.0.1:{port}"
            got[(name, frozenset(labels.items()))] = float(r["value"][1])
        assert got == {k: v for k, v in expected.items() if k[0] == name}
    # Prometheus parsed OpenMetrics (it asks for it first): only that parser reads `# UNIT`.
    query = urllib.parse.urlencode({"metric": "precisionprobe_layer_type_gpu_seconds"})
    with urllib.request.urlopen(f"{url}/api/v1/targets/metadata?{query}", timeout=10) as r:
        (metadata,) = json.load(r)["data"]
    assert (metadata["type"], metadata["unit"]) == ("gauge", "seconds")


def test_the_fleet_mean_of_one_job_is_its_estimate(run, scraped):
    """docs/export.md's fleet formula: with one job, sum(value * seconds) / sum(seconds) per layer
    type is that job's identified estimate, and types without one are absent."""
    _, job, _ = run
    url, _ = scraped
    fleet = _query(url, _fleet_mean("dram_active", "1h"))
    got = {(r["metric"]["layer_type"], r["metric"]["direction"]): float(r["value"][1]) for r in fleet}
    want = {(row["layer_type"], row["direction"]): row["metrics"]["dram_active"]["value"]
            for row in job["layer_types"] if row["metrics"]["dram_active"]["kind"] == "estimate"}
    assert got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], rel=1e-12) for k in want)


def _fleet_mean(metric, window):
    text = DOC.read_text()
    formula = re.search(r"<!-- fleet mean -->\n```promql\n(.*?)```", text, re.S).group(1)
    return formula.replace("dram_active", metric).replace("30d", window)


def _dashboard_queries(dashboard):
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def test_the_dashboard_is_valid_and_its_queries_answer(run, scraped):
    _, job, _ = run
    url, _ = scraped
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["job_id"]["type"] == "query" and "job_id" in variables["job_id"]["definition"]
    assert [o["value"] for o in variables["metric"]["options"]] == SHORTS
    titles = [p["title"] for p in dashboard["panels"]]
    assert {"GPU busy and idle", "Share of GPU time per layer type"} <= set(titles)
    assert len({p["id"] for p in dashboard["panels"]}) == len(titles)
    # Every query names exported families only, reads the chosen data source, and answers on
    # the scraped run for every metric the variable offers.
    families = {f.name for f in openmetrics.FAMILIES}
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    for title, expr in _dashboard_queries(dashboard):
        for short in SHORTS:
            query = (expr.replace("${metric}", short).replace("$__range", "1h")
                     .replace("$job_id", job["job_id"]))
            assert set(re.findall(r"precisionprobe_\w+", query)) <= families, title
            result = _query(url, query)
            assert result, f"{title}: {query} returned nothing"


DOC_BLOCK = re.compile(r"(<!-- export output: generated by python/tests/test_export.py -->\n```text\n)(.*?)(```\n)",
                       re.S)
DOC_FAMILIES = ("precisionprobe_job_gpu_seconds", "precisionprobe_job_busy_ratio",
                "precisionprobe_layer_type_share_ratio", "precisionprobe_layer_type_dram_active_ratio",
                "precisionprobe_layer_type_dram_active_lower90_ratio",
                "precisionprobe_layer_type_dram_active_upper90_ratio",
                "precisionprobe_layer_type_dram_active_blend_ratio", "precisionprobe_layer_type_identified")
DOC_ROWS = ('layer_type="EmbeddingBag",direction="backward"', 'layer_type="Linear",direction="backward"',
            'layer_type="ReLU",direction="backward"')


def _doc_excerpt(text):
    """The exported file cut to DOC_FAMILIES, their job-level samples and those of DOC_ROWS (of
    the identified family, dram_active's only)."""
    out, keep = [], False
    for line in text.splitlines():
        if line == "# EOF":
            break
        if line.startswith("# HELP "):
            keep = line.split()[2] in DOC_FAMILIES
        if not keep:
            continue
        if line.startswith("#") or "layer_type=" not in line:
            out.append(line)
        elif any(row in line for row in DOC_ROWS) and ('metric="' not in line or 'metric="dram_active"' in line):
            out.append(line)
    return "\n".join(out + ["# EOF"]) + "\n"


def test_the_docs_show_this_export_and_every_family(run):
    """docs/export.md shows an excerpt of the file this test exports (PP_WRITE_DOCS=1 rewrites it)
    and names every family."""
    _, job, exported = run
    kinds = {(row["layer_type"], row["direction"]): row["metrics"]["dram_active"]["kind"] for row in job["layer_types"]}
    # What the docs say of the three rows shown.
    assert [kinds[row] for row in (("EmbeddingBag", "backward"), ("Linear", "backward"), ("ReLU", "backward"))] == \
        ["estimate", "interval", "blend"]
    text = DOC.read_text()
    match = DOC_BLOCK.search(text)
    assert match, "docs/export.md lacks its generated output block"
    excerpt = _doc_excerpt(exported)
    if os.environ.get("PP_WRITE_DOCS"):
        text = text[:match.start(2)] + excerpt + text[match.end(2):]
        DOC.write_text(text)
    else:
        assert match.group(2) == excerpt, "docs/export.md is out of date: rerun with PP_WRITE_DOCS=1"
    documented = set(re.findall(r"`(precisionprobe_\w+)`", text))
    named = set()
    for family in openmetrics.FAMILIES:
        name = family.name
        for short in SHORTS:
            name = name.replace(f"_{short}_", "_METRIC_")
        named.add(name)
    assert named <= documented, f"undocumented: {sorted(named - documented)}"


def test_any_job_id_and_layer_type_is_a_valid_label_value():
    """Label values are escaped (backslash, quote, newline), so that promtool reads them back."""
    job_id, layer_type = 'team "a"\\run\n2', "Conv2d\\x"
    row = Row(layer_type, layer_type, "forward", 3, 1.5, 0.0045, 0.5,
              {short: Value("blend", 0.25, blend=0.25) for short in SHORTS})
    report = JobReport(job_id, 1, 0.009, 0.00015, 100.0, None, None, 0.5, 0.5, None, None, {}, [row], [])
    text = openmetrics.exposition([report])
    result = subprocess.run(["promtool", "check", "metrics"], input=text, text=True, capture_output=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    line = next(line for line in text.splitlines() if line.startswith("precisionprobe_layer_type_share_ratio{"))
    assert line == ('precisionprobe_layer_type_share_ratio{job_id="team \\"a\\"\\\\run\\n2",'
                    'layer_type="Conv2d\\\\x",direction="forward"} 0.5')


def test_a_job_on_no_gpu_has_no_gpu_time_series():
    """A run recorded on the CPU has no GPU time: its GPU seconds and shares are left out (not 0,
    which would read as a job that never ran), its calls are still exported."""
    rows = [Row("Linear", "Linear", "forward", 84, 43.78, 0, 0.0,
                {short: Value("blend", None, blend=None) for short in SHORTS})]
    report = JobReport("quick", 0, 0, 0, None, 53699137, None, None, 0, None, None, {}, rows, [])
    families = {line.split("{")[0] for line in openmetrics.exposition([report]).splitlines()
                if line.startswith("precisionprobe_") and "{" in line}
    assert "precisionprobe_layer_type_calls" in families and "precisionprobe_job_gpus" in families
    assert not families & {"precisionprobe_job_gpu_seconds", "precisionprobe_layer_type_gpu_seconds",
                           "precisionprobe_layer_type_share_ratio"}


def test_errors_are_one_line(run, tmp_path):
    work, _, _ = run
    events = work / "a" / "events"
    missing = precisionprobe("export", events, "--db", work / "a.db", "--no-refresh", "--openmetrics",
                             tmp_path / "nowhere" / "x.prom", check=False)
    assert (missing.returncode, missing.stderr) == (
        1, f"python3 -m precisionprobe export: --openmetrics: cannot write '{tmp_path / 'nowhere' / 'x.prom'}': "
           "No such file or directory\n")
    no_db = precisionprobe("serve", events, "--db", tmp_path / "none.db", "--no-refresh", "--port", "0",
                           check=False)
    assert (no_db.returncode, no_db.stderr) == (
        1, f"python3 -m precisionprobe serve: --no-refresh: no results database at '{tmp_path / 'none.db'}'\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = precisionprobe("serve", events, "--db", work / "a.db", "--no-refresh", "--port", port, check=False)
        # Said before the refresh, which may wait minutes for Prometheus (none answers here): the
        # refresh failed first, and only a refresh that worked reached the port.
        busy_first = precisionprobe("serve", events, "--db", tmp_path / "new.db", "--prometheus",
                                    "http://127.0.0.1:1", "--port", port, check=False)
    assert busy_first.stderr == (f"python3 -m precisionprobe serve: --listen/--port: cannot listen on 127.0.0.1:{port}: "
                                 "Address already in use\n")
    assert not (tmp_path / "new.db").exists()
    # A job not in the database yet is served (empty until it appears), and said at the start.
    with open(tmp_path / "not-yet.log", "w") as log:
        env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
        not_yet = processes.start([sys.executable, "-m", "precisionprobe", "serve", str(events), "--db",
                                   str(work / "a.db"), "--no-refresh", "--job", "nope", "--port", "0"], log, env=env)
        try:
            wait_for(lambda: "serving http" in (tmp_path / "not-yet.log").read_text(), 60, "serve to start")
        finally:
            processes.stop(not_yet)
    said = (tmp_path / "not-yet.log").read_text()
    assert said.startswith(f"python3 -m precisionprobe serve: warning: --job: no job 'nope' in "
                           f"'{work / 'a.db'}' yet (jobs: "), said
    assert "/metrics is empty until it appears\n" in said
    wrong_job = precisionprobe("export", events, "--db", work / "a.db", "--no-refresh", "--job", "nope",
                               "--openmetrics", "-", check=False)
    assert wrong_job.stderr.startswith(f"python3 -m precisionprobe export: --job: no job 'nope' in '{work / 'a.db'}' "
                                       "(jobs: "), wrong_job.stderr
    assert busy.returncode == 1
    assert busy.stderr == (f"python3 -m precisionprobe serve: --listen/--port: cannot listen on 127.0.0.1:{port}: "
                           "Address already in use\n")
    for seconds in ("0", "inf"):
        interval = precisionprobe("serve", events, "--no-refresh", "--port", "0", "--refresh-seconds", seconds,
                                  check=False)
        assert interval.stderr == ("python3 -m precisionprobe serve: --refresh-seconds: must be more than 0 and at "
                                   f"most 86400 (a day), got {seconds}\n")


def test_serve_refuses_an_empty_listen_address(tmp_path):
    # Bound as given, '' would be every interface: `--listen "$ADDR"` with ADDR unset would expose
    # the endpoint to the network instead of keeping the loopback default.
    for address in ("", " "):
        empty = precisionprobe("serve", tmp_path, "--no-refresh", "--port", "0", "--listen", address, check=False)
        assert (empty.returncode, empty.stderr) == (
            1, "python3 -m precisionprobe serve: --listen: must not be empty, which would listen on every interface: "
               "leave it out for 127.0.0.1 (this machine only), or say 0.0.0.0 for every IPv4 interface\n")


def test_a_pipe_or_device_is_written_in_place_and_a_link_keeps_pointing_at_its_file(tmp_path):
    # Renamed over, /dev/null or a named pipe would become a plain file (as root, /dev/null is
    # then gone for every process of the machine); a link would become a file beside its target.
    from precisionprobe.analysis.cli import write_atomically
    pipe = tmp_path / "pipe.prom"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # (so that opening it to write does not block)
    try:
        write_atomically(pipe, "# EOF\n")
        assert stat.S_ISFIFO(os.lstat(pipe).st_mode)
        assert os.read(reader, 100) == b"# EOF\n"
    finally:
        os.close(reader)
    target = tmp_path / "shared" / "pp.prom"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "pp.prom"
    link.symlink_to(target)
    write_atomically(link, "# EOF\n")
    assert link.is_symlink() and target.read_text() == "# EOF\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.prom", "pp.prom", "shared"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["pp.prom"]  # no temporary file left


def test_an_openmetrics_path_that_names_a_folder_or_nothing_is_refused(tmp_path):
    # Before, 'new/' (a folder that does not exist yet) became a file named 'new', and '' was the
    # working folder ("Is a directory", after a temporary file was made beside it).
    from precisionprobe.analysis.cli import CommandError, write_atomically
    for given, why in [(f"{tmp_path}/new/", f"'{tmp_path}/new/' ends in '/', so it names a folder: give a file, "
                                            f"such as '{tmp_path}/new/precisionprobe.prom'"),
                       ("", "must not be empty: give a file (or - for stdout)")]:
        with pytest.raises(CommandError) as refused:
            write_atomically(given, "# EOF\n")
        assert str(refused.value) == f"--openmetrics: {why}"
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_file_left_by_a_killed_export_does_not_stop_the_next(tmp_path):
    # In a container every export may run as pid 1: one killed between writing its temporary
    # file and renaming it leaves the name the next would take, were the name the pid's alone.
    from precisionprobe.analysis.cli import write_atomically
    leftover = tmp_path / f".pp.prom.{os.getpid()}.tmp"
    leftover.write_text("half")
    write_atomically(tmp_path / "pp.prom", "# EOF\n")
    assert (tmp_path / "pp.prom").read_text() == "# EOF\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [leftover.name, "pp.prom"]


def test_serve_answers_failures_with_500_and_refreshes_on_its_own_thread():
    """The endpoint itself, with stand-ins for reading and refreshing: a failed scrape is a 500
    with its reason, a failed refresh a warning, and neither stops the next."""
    state = {"reads": 0, "refreshes": 0}

    def read():
        state["reads"] += 1
        if state["reads"] == 1:
            raise RuntimeError("database is locked")
        return "# EOF\n"

    def refresh():
        state["refreshes"] += 1
        if state["refreshes"] == 1:
            raise RuntimeError("pp_refresh: Prometheus at http://127.0.0.1:9 does not answer")

    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, read, "precisionprobe serve", log)
    thread = threading.Thread(target=endpoint.serve, args=(server, refresh, 0.05, "precisionprobe serve", log),
                              daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(base + "/metrics", timeout=5)
        assert failed.value.code == 500
        assert failed.value.read() == b"precisionprobe serve: scrape of /metrics failed: database is locked\n"
        request = urllib.request.Request(base + "/metrics", headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.read() == b"# EOF\n" and r.headers["Content-Type"] == openmetrics.CONTENT_TYPE
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            assert r.headers["Content-Type"] == openmetrics.TEXT_CONTENT_TYPE
            assert r.headers["Server"] == f"precisionprobe/{__version__}"
        # HEAD (a load balancer's health check) answers as GET does, without the body.
        with urllib.request.urlopen(urllib.request.Request(base + "/metrics", method="HEAD"), timeout=5) as r:
            assert r.status == 200 and r.headers["Content-Length"] == "6" and r.read() == b""
        wait_for(lambda: state["refreshes"] >= 3, 10, "three refreshes")
    finally:
        server.shutdown()
        thread.join(5)
    assert "precisionprobe serve: scrape of /metrics failed: database is locked" in log.lines
    assert ("precisionprobe serve: warning: refresh failed: pp_refresh: Prometheus at http://127.0.0.1:9 does "
            "not answer") in log.lines
    assert len(log.lines) == 2  # the later refreshes and scrapes succeeded silently


def test_serve_closes_a_connection_that_never_finishes_its_request():
    """A client that connects and sends half a request (or nothing) is hung up on after the
    timeout, silently, instead of holding a thread and a file descriptor for ever; scrapes are
    answered meanwhile."""
    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log, timeout=0.5)
    thread = threading.Thread(target=endpoint.serve, args=(server,), daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as silent, \
                socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                assert r.read() == b"# EOF\n"
            for client in (silent, slow):
                client.settimeout(10)
                assert client.recv(100) == b""  # closed by the server, with nothing said
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def _serving(**limits):
    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log, **limits)
    thread = threading.Thread(target=endpoint.serve, args=(server,), daemon=True)
    thread.start()
    return server, thread, log


def test_serve_closes_a_slow_loris_that_sends_a_byte_now_and_then():
    """Each read waiting less than the timeout does not keep a request open: the request line
    and headers must all arrive within the deadline, and scrapes are answered meanwhile."""
    server, thread, log = _serving(timeout=1, deadline=1.5)
    port = server.server_address[1]
    try:
        with socket.create_connection(("127.0.0.1", port)) as loris:
            started, closed = time.monotonic(), False
            for byte in b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"x" * 100:
                try:
                    loris.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                loris.settimeout(0.3)
                try:
                    if loris.recv(100) == b"":
                        closed = True
                        break
                except socket.timeout:
                    pass
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    assert r.read() == b"# EOF\n"
            assert closed and time.monotonic() - started < 6, time.monotonic() - started
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def _answer_to_get(connection):
    """The whole answer to GET /metrics over connection, which is closed after it (HTTP/1.0: the
    server closes its side after the answer)."""
    with connection:
        connection.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        connection.settimeout(5)
        answer = b""
        while chunk := connection.recv(1000):
            answer += chunk
        return answer


def test_serve_caps_the_connections_of_one_client_and_of_all():
    """Past the caps, connections are closed at once, so that one client's many cannot take every
    thread and file descriptor: another address (here 127.0.0.1 beside the hog's 127.0.0.2) is
    still answered, and the hog's own connections are answered again once its others close."""
    server, thread, log = _serving(max_connections=6, max_connections_per_client=3)
    port = server.server_address[1]

    def from_hog():
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        return s

    try:
        held = [from_hog() for _ in range(3)]
        time.sleep(0.2)  # (the server has taken them)
        refused = from_hog()
        refused.settimeout(5)
        assert refused.recv(100) == b""  # closed at once, nothing said
        refused.close()
        # Read to the end: the server closes a connection after it stopped counting it.
        assert _answer_to_get(socket.create_connection(("127.0.0.1", port))).endswith(b"# EOF\n")
        others = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        time.sleep(0.2)
        over_all = socket.create_connection(("127.0.0.1", port))  # the seventh: past the cap of six
        over_all.settimeout(5)
        assert over_all.recv(100) == b""
        over_all.close()
        for s in held + others:
            s.close()
        time.sleep(0.2)
        answer = _answer_to_get(from_hog())
        assert answer.startswith(b"HTTP/1.0 200 OK") and answer.endswith(b"# EOF\n"), answer
    finally:
        server.shutdown()
        thread.join(5)
    assert log.lines == []


def test_serve_on_loopback_answers_requests_for_loopback_names_only():
    """A page in a browser on the machine can make its own domain name resolve to 127.0.0.1 (DNS
    rebinding) and read what a loopback endpoint serves: only a loopback Host is answered."""
    server, thread, log = _serving()
    port = server.server_address[1]
    try:
        for host, status in ((f"127.0.0.1:{port}", 200), (f"localhost:{port}", 200), ("LOCALHOST", 200),
                             (f"[::1]:{port}", 200), (f"{socket.gethostname()}:{port}", 200),
                             (f"rebind.attacker.example:{port}", 403), ("10.0.0.7", 403), ("127.0.0.1.evil", 403)):
            request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Host": host})
            try:
                with urllib.request.urlopen(request, timeout=5) as r:
                    got, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                got, body = e.code, e.read()
            assert got == status, (host, got, body)
            if status == 403:
                assert body.startswith(b"forbidden: this endpoint listens on loopback"), body
    finally:
        server.shutdown()
        thread.join(5)
    assert endpoint.host_is_loopback("127.0.0.53") and endpoint.host_is_loopback("db.localhost:9")
    assert not endpoint.host_is_loopback("localhost.attacker.example")


def test_serve_waits_for_a_file_descriptor_instead_of_spinning():
    """accept() failing with EMFILE leaves the listening socket readable: serve_forever would call
    it again at once, using a whole core. The server waits a moment, and says so once."""
    import errno

    class NoDescriptors:
        def accept(self):
            raise OSError(errno.EMFILE, "Too many open files")

    log = _Lines()
    server = endpoint.listen("127.0.0.1", 0, lambda: "# EOF\n", "precisionprobe serve", log)
    try:
        real, server.socket = server.socket, NoDescriptors()
        started = time.monotonic()
        for _ in range(3):
            with pytest.raises(OSError):
                server.get_request()
        assert time.monotonic() - started >= 3 * endpoint.NO_DESCRIPTOR_WAIT_S
        assert log.lines == ["precisionprobe serve: cannot accept connections for now: Too many open files "
                             "(waiting for open ones to close)"]
    finally:
        server.socket = real
        server.server_close()


def test_serve_takes_an_ipv6_address_in_brackets_as_urls_write_it():
    # Before, '[::1]' went to getaddrinfo as it was: "Name or service not known".
    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    with endpoint.listen("[::1]", 0, lambda: "# EOF\n") as server:
        assert server.address_family == socket.AF_INET6 and server.server_address[0] == "::1"


class _Lines:
    def __init__(self):
        self.lines, self._part = [], ""

    def write(self, text):
        self._part += text
        *done, self._part = self._part.split("\n")
        self.lines += done

    def flush(self):
        pass


def test_the_cache_reads_again_only_when_the_database_changed(tmp_path):
    database = tmp_path / "x.db"
    database.write_bytes(b"one")
    reads = []
    cached = endpoint.when_changed(lambda: reads.append(1) or str(len(reads)), [database, tmp_path / "x.db-wal"])
    assert (cached(), cached()) == ("1", "1")
    time.sleep(0.01)
    (tmp_path / "x.db-wal").write_bytes(b"wal")
    assert cached() == "2"
    database.write_bytes(b"three")
    assert (cached(), cached()) == ("3", "3")


def test_a_database_removed_while_serving_is_a_failed_scrape_not_an_empty_one(run, tmp_path):
    """Removed under serve, the database is not made anew, empty, by the next scrape (which would
    answer 200 with no series: every series would end with the target still up): the scrape
    fails, so Prometheus marks the target down, until a refresh makes the database again."""
    from precisionprobe.analysis.cli import CommandError, _exposition_reader
    work, job, _ = run
    database = tmp_path / "served.db"
    shutil.copy(work / "a.db", database)
    read = _exposition_reader(database, None, refreshing=True)
    assert job["job_id"] in read()
    database.unlink()
    with pytest.raises(CommandError) as removed:
        read()
    assert str(removed.value) == (f"the results database '{database}' was removed while serving; a scrape does not "
                                  "make it anew: the next refresh does, from RUN_DIR's events")
    assert not database.exists()


def test_serve_with_retention_keeps_the_last_minutes(tmp_path):
    """`serve --retention-minutes 2` on a five-minute job: its refresh keeps the last 2 minutes
    of events and samples in the database, while the per-layer means count every call and the
    estimator every window."""
    t0, second, uuid = 1_700_000_000, 10**9, "GPU-5e7e0000-0000-4000-8000-000000000000"
    rng = random.Random(5)
    calls = [(t, t * second + rng.randrange(200, 800) * 10**6) for t in range(t0, t0 + 300)]  # 0.2-0.8 s each
    events = tmp_path / "events"
    events.mkdir()
    (events / "events-node-1.jsonl").write_text("".join(
        json.dumps({"job_id": "long", "host_name": "node", "ip": "10.0.0.1", "pod": "long-0", "namespace": "ml",
                    "gpu_uuid": uuid, "gpu": 0, "rank": 0, "local_rank": 0, "world_size": 1, "pid": 100, "epoch": 0,
                    "batch": t - t0, "layer": "fc", "layer_type": "Linear", "forward": True,
                    "t_start_ns": t * second, "t_end_ns": end, "cpu_num": 4.0}) + "\n"
        for t, end in calls))
    database = tmp_path / "long.db"
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")
    # The GPU's samples, stored at the ends of their 1 s windows: the share of each the call ran
    # (stored samples that cover the events are taken as they are: no Prometheus is asked).
    busy = {t + 1: (end - t * second) / second for t, end in calls}
    conn.executemany("INSERT INTO pp_samples(uuid, metric, ts_ms, value) VALUES (?, 'DCGM_FI_PROF_SM_ACTIVE', ?, ?)",
                     [(uuid, t * 1000, busy.get(t, 0.0)) for t in range(t0 + 1, t0 + 400)])
    conn.commit()
    conn.close()

    log = open(tmp_path / "serve.log", "w")
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path())
    port = free_port()
    server = processes.start([sys.executable, "-m", "precisionprobe", "serve", str(events), "--db", str(database),
                              "--final", "--retention-minutes", "2", "--port", str(port)], log, env=env)
    try:
        wait_ready(f"http://127.0.0.1:{port}/metrics", server, "precisionprobe serve", 60)
    finally:
        processes.stop(server)
        log.close()
    conn = sqlite3.connect(database)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    left, dropped = conn.execute("SELECT (SELECT count(*) FROM pp_events), (SELECT sum(events) FROM pp_dropped_events)"
                                 ).fetchone()
    assert 0 < left < 150 and left + dropped == 300
    kept = conn.execute("SELECT f.folded_through_ms - min(s.ts_ms) FROM pp_fold_state AS f, pp_samples AS s").fetchone()
    assert kept[0] < 120_000
    calls_counted, mean = conn.execute("SELECT pp_mean_count(state), pp_mean_value(state) FROM layer_state "
                                       "WHERE layer = 'fc' AND metric = '_duration'").fetchone()
    assert calls_counted == 300 and mean == pytest.approx(sum(end - t * second for t, end in calls) / 300 / second)
    # The estimates still saw the whole job: the windows removed are in the estimator's state, so
    # the report has no finding about the minutes kept.
    report = json.loads(precisionprobe("analyze", events, "--db", database, "--no-refresh", "--format", "json").stdout)
    (job,) = report["jobs"]
    assert job["estimate_minutes"] is None and job["minutes"] == pytest.approx(5, abs=0.05)
    assert not any("kept their events (event_retention_minutes)" in f for f in job["findings"]), job["findings"]
    seen = conn.execute("SELECT max(windows) FROM layer_type_estimates WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE'"
                        ).fetchone()[0]
    state = conn.execute("SELECT sum(windows) FROM pp_estimator_state WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
                         "AND grouping = 'layer_type' AND shift = 0").fetchone()[0]
    assert state > 0 and seen / 60 == pytest.approx(5, abs=0.1)  # 1 s windows
    errors = precisionprobe("serve", events, "--port", "0", "--retention-minutes", "-1", check=False)
    assert errors.stderr == "python3 -m precisionprobe serve: --retention-minutes: must be 0 or more, got -1\n"
