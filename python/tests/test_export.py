"""`precisionprobe export` and `serve` as a platform engineer runs them: a one-minute recording of
the offline emulator backfilled into a real Prometheus and refreshed by `export`; the file it
writes checked by promtool; `serve` scraped by a second, real Prometheus, whose answers must be
the report's numbers; the Grafana dashboard's queries run against that Prometheus."""
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import extension_path, run_cli as precisionprobe, wait_for
from precisionprobe.analysis import openmetrics
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
    assert series[("precisionprobe_job_counters_emulated", key)] == 0  # (the offline emulator's own files: unmarked)
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
           f"its folder '{tmp_path / 'nowhere'}' does not exist\n")
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
                       ("", "must not be empty: give a file (or - for stdout)"),
                       # (a folder that is there: refused before the refresh, not after it)
                       (str(tmp_path), f"'{tmp_path}' is a folder: give a file, such as "
                                       f"'{tmp_path}/precisionprobe.prom'")]:
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
