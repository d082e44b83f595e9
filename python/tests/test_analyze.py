"""`precisionprobe analyze` and `compare` as a user runs them: the offline emulator's recordings
(realistic dcgm-exporter timing) backfilled into a real Prometheus, the commands run as
subprocesses, their output read back in each format."""
import csv
import io
import json
import os
import re
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import extension_path, run_cli as precisionprobe
from precisionprobe.emulator import offline
from precisionprobe.emulator.colocation import scaled_profile
from precisionprobe.emulator.profile import Profile
from precisionprobe.harness import prometheus, processes
from precisionprobe.harness.ports import free_port

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None or shutil.which("prometheus") is None,
                                reason="needs Debian's prometheus package (promtool, prometheus)")

SHORT = {"DCGM_FI_DEV_GPU_UTIL": "gpu_util", "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
         "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy", "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
         "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp32_active"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two 2-minute recordings an hour apart in one Prometheus: A with the dlrm profile, B with
    every layer's activity above idle halved."""
    work = tmp_path_factory.mktemp("analyze")
    profile = Profile.named("dlrm")
    paths = {}
    for name, start, prof in (("a", offline.DEFAULT_START_S, profile),
                              ("b", offline.DEFAULT_START_S + 3600, scaled_profile(profile, 0.5))):
        rec = offline.record(120, 100, 0.005, 7, prof, start_s=start)
        paths[name] = offline.write(rec, work / name)
        prometheus.backfill(paths[name]["openmetrics"], work / prometheus.TSDB_DIR)
    process, url = prometheus.serve(work)
    try:
        yield work, paths, url
    finally:
        processes.stop(process)


@pytest.fixture(scope="module")
def report_a(runs):
    work, paths, url = runs
    result = precisionprobe("analyze", work / "a" / "events", "--prometheus", url, "--final", "--format", "json",
                            "--db", work / "a.db")
    return json.loads(result.stdout), json.loads(Path(paths["a"]["truth"]).read_text())


def test_analyze_reports_the_job_with_its_shares_of_gpu_time(report_a):
    report, _ = report_a
    (job,) = report["jobs"]
    assert job["job_id"] == offline.JOB_ID and job["gpus"] == 1
    assert job["minutes"] == pytest.approx(2, abs=0.05)
    shares = [row["share"] for row in job["layer_types"]]
    assert sum(shares) == pytest.approx(1, abs=1e-6)
    assert shares == sorted(shares, reverse=True)
    assert {r["direction"] for r in job["layer_types"]} == {"forward", "backward", "untracked"}
    assert sum(r["share"] for r in job["layers"]) == pytest.approx(1, abs=1e-6)


def test_identified_values_hold_the_truth_and_others_are_never_a_point(report_a):
    report, truth = report_a
    (job,) = report["jobs"]
    identified = 0
    for row in job["layer_types"]:
        if row["direction"] == "untracked":
            continue
        true = truth["layer_types"][row["name"]][row["direction"]]
        for metric, short in SHORT.items():
            value = row["metrics"][short]
            if value["kind"] == "estimate":
                identified += 1
                assert value["value"] == pytest.approx(true[metric], rel=0.05, abs=0.001 * value["scale"])
            elif value["kind"] == "interval":
                assert value["value"] is None  # a bound-pinned point is never shown as a value
            elif value["kind"] == "blend":
                assert value["value"] == value["blend"]
    assert identified >= 15  # EmbeddingBag and Linear: most of their 20 values in two minutes


def test_findings_say_the_embeddings_are_memory_bound(report_a):
    report, _ = report_a
    (job,) = report["jobs"]
    text = " ".join(job["findings"])
    assert "The GPU ran kernels" in text and "idle" in text
    assert "embedding stage (EmbeddingBag, forward and backward)" in text and "is memory-bound" in text
    # What is not resolved says what would resolve it.
    assert job["unresolved"] and all("; " in item for item in job["unresolved"])


def test_the_embedding_verdict_weighs_each_direction_by_its_time():
    """A backward pass 500 times longer than the forward decides the stage, as on the GPU: here the
    long backward calls are memory-bound and the short forward calls, known only as a blend of
    the Linear layers around them, are not."""
    from precisionprobe.analysis.findings import embedding_sentences
    from precisionprobe.analysis.report import JobReport, Row, Value

    def row(direction, share, dram, fp32, kind):
        metrics = {"dram_active": Value(kind, dram, blend=dram), "fp32_active": Value(kind, fp32, blend=fp32),
                   "sm_occupancy": Value(kind, 0.3, blend=0.3)}
        return Row("EmbeddingBag", "EmbeddingBag", direction, 92, 1.0, share * 60, share, metrics)

    def verdict(backward, forward):
        job = JobReport("dlrm", 1, 60, 1, 100, None, None, 0.9, 0.1, None, None, {}, [backward, forward], [])
        return embedding_sentences(job)[0]

    text = verdict(row("backward", 0.579, 0.84, 0.09, "estimate"), row("forward", 0.001, 0.22, 0.37, "blend"))
    assert "is memory-bound (DRAM 0.84 vs FP32 0.09 weighted by time)" in text, text
    assert "forward DRAM 0.22 vs FP32 0.37" in text and "only indicative" in text, text
    # The same two directions with the shares swapped: the forward decides, and it is not.
    text = verdict(row("backward", 0.001, 0.84, 0.09, "estimate"), row("forward", 0.579, 0.22, 0.37, "blend"))
    assert "is not memory-bound by this measure" in text, text


def test_with_retention_the_advice_is_about_the_minutes_kept():
    """A 60-minute job whose estimates saw the last 10 (a database whose retention ran before the
    estimator kept the windows it removes as its state): the findings say so, and an interval twice as wide as `identified` asks is answered with minutes to keep, not
    with a run length, since a longer run would not widen what the estimator sees."""
    from precisionprobe.analysis.findings import complete
    from precisionprobe.analysis.report import JobReport, Row, Value

    interval = Value("interval", None, 0.20, 0.30, 0.25, "not identified", 1.0)  # half 0.05, 5% asks 0.0125
    linear = Row("Linear", "Linear", "forward", 92, 1.0, 600, 0.2, {"dram_active": interval})
    job = complete(JobReport("long", 1, 3600, 60, 100, None, None, 0.9, 0.1, None, None, {}, [linear], [],
                             estimate_minutes=10))
    assert ("Only the last 10 of the run's 60 minutes kept their events (event_retention_minutes): the means "
            "cover the whole run, the estimates those minutes.") in job.findings
    assert job.unresolved == ["Linear forward, DRAM active: between 0.2 and 0.3 (90%), not identified; keeping "
                              "about 160 minutes of events (event_retention_minutes) would likely identify it"]
    job.estimate_minutes = None  # nothing removed: the run itself is what grows
    assert complete(job).unresolved[0].endswith("a run of about 960 minutes would likely identify it")


def test_a_job_on_no_gpu_is_told_so_with_its_longest_calls():
    """A run recorded on the CPU and analyzed without --emulate has no GPU counters: the findings
    say so and what to do, and name the layer with the most call time, not a 0% "largest share"."""
    from precisionprobe.analysis.findings import complete
    from precisionprobe.analysis.report import JobReport, Row

    rows = [Row("EmbeddingBag", "EmbeddingBag", "backward", 112, 12.11, 0, 0.0),
            Row("Linear", "Linear", "backward", 84, 43.78, 0, 0.0)]
    job = complete(JobReport("quick", 0, 0, 0, None, 53699137, None, None, 0, None, None, {}, rows, []))
    assert job.findings[0].startswith("The job ran on no GPU (its layer events name none)")
    assert "--emulate dlrm" in job.findings[0]
    assert job.findings[1] == "The most time in layer calls went to Linear backward (3.7 s: 84 calls of 43.78 ms)."
    assert job.unresolved == []


def test_compare_with_a_run_on_no_gpu_says_missing_not_measured():
    """A run on the CPU has 0% of GPU time by construction: compare marks its side missing and
    warns, rather than report a measured difference of the whole share."""
    from precisionprobe.analysis.compare import compare_jobs
    from precisionprobe.analysis.report import JobReport, METRICS, Row, Value

    def job(gpus, share):
        metrics = {short: Value("blend", 0.5 if gpus else None) for _, short, _ in METRICS}
        rows = [Row("Linear", "Linear", "backward", 84, 43.78, 3.0, share, metrics)]
        return JobReport("j", gpus, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, [])

    on_gpu, on_cpu = job(1, 0.4), job(0, 0.0)
    (share, *_) = compare_jobs(on_gpu, on_cpu)
    assert (share["metric"], share["a"], share["b"], share["exceeds_uncertainty"]) == ("share", 0.4, None, "missing")
    (share, *_) = compare_jobs(on_gpu, on_gpu)
    assert (share["difference"], share["exceeds_uncertainty"]) == (0.0, "measured")


def test_compare_of_runs_with_no_layer_type_in_common_warns_before_its_rows():
    """Two runs of different models (a DLRM and a ResNeXt): every row is missing on one side,
    which compare says first instead of leaving it to be read from the table."""
    from precisionprobe.analysis.compare import comparison_warnings
    from precisionprobe.analysis.report import JobReport, Row

    def job(job_id, *types):
        rows = [Row(t, t, "forward", 10, 1.0, 0.01, 0.1, {}) for t in types]
        rows.append(Row("(untracked)", "(untracked)", "untracked", None, None, 0.5, 0.5, {}))
        return JobReport(job_id, 1, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, [])

    dlrm, resnext = job("dlrm-1", "EmbeddingBag", "Linear", "ReLU"), job("resnext-1", *(f"T{i}" for i in range(7)))
    assert comparison_warnings(dlrm, resnext) == [
        "RUN_A (job dlrm-1) and RUN_B (job resnext-1) have no layer type in common, so every row is missing on one "
        "side: compare two runs of one model (RUN_A: EmbeddingBag, Linear, ReLU; RUN_B: T0, T1, T2, T3, T4 and 2 more)"]
    assert comparison_warnings(dlrm, job("dlrm-2", "Linear", "Sigmoid")) == []
    (on_cpu,) = comparison_warnings(dlrm, JobReport("cpu-1", 0, 0, 1, None, 1, None, None, 0, None, None, {},
                                                    [], []))
    assert on_cpu.startswith("RUN_B (job cpu-1) ran on no GPU")


def test_every_format_reads_the_same_database(runs, report_a):
    work, _, _ = runs
    table = precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh").stdout
    assert "Per layer type:" in table and "Per layer:" in table and "value±h: identified estimate" in table
    assert "EmbeddingBag  backward" in table
    markdown = precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh",
                              "--format", "markdown", "--no-layers").stdout
    assert "| layer | direction | calls |" in markdown and "### Per layer\n" not in markdown
    rows = list(csv.DictReader(io.StringIO(precisionprobe(
        "analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh", "--format", "csv").stdout)))
    report, _ = report_a
    (job,) = report["jobs"]
    assert len(rows) == len(job["layer_types"]) + len(job["layers"])
    assert {r["level"] for r in rows} == {"layer_type", "layer"}


def test_no_layers_leaves_the_layers_out_of_every_format(runs, report_a):
    # Before, --no-layers changed the table and Markdown only: CSV and JSON still held every layer.
    work, _, _ = runs
    analyze = ("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh", "--no-layers", "--format")
    rows = list(csv.DictReader(io.StringIO(precisionprobe(*analyze, "csv").stdout)))
    report, _ = report_a
    (job,) = report["jobs"]
    assert len(rows) == len(job["layer_types"]) and {r["level"] for r in rows} == {"layer_type"}
    (job,) = json.loads(precisionprobe(*analyze, "json").stdout)["jobs"]
    assert "layers" not in job and len(job["layer_types"]) == len(report["jobs"][0]["layer_types"])


def test_compare_finds_the_halved_activity_beyond_the_uncertainty(runs, report_a):
    work, _, url = runs
    precisionprobe("analyze", work / "b" / "events", "--prometheus", url, "--final", "--db", work / "b.db")
    rows = json.loads(precisionprobe("compare", work / "a.db", work / "b.db", "--format", "json").stdout)["rows"]
    dram = {(r["layer_type"], r["direction"]): r for r in rows if r["metric"] == "dram_active"}
    backward = dram[("EmbeddingBag", "backward")]
    assert backward["exceeds_uncertainty"] == "yes" and backward["difference"] < -0.3
    same = json.loads(precisionprobe("compare", work / "a.db", work / "a.db", "--format", "json").stdout)["rows"]
    assert {r["exceeds_uncertainty"] for r in same if r["a_kind"] in ("estimate", "interval")} == {"no"}
    # docs/analyze.md shows the table's first rows and its note.
    table = precisionprobe("compare", work / "a.db", work / "b.db").stdout.splitlines()
    check_doc_block("compare", "\n".join(table[:13] + ["..."] + table[-2:]) + "\n")


def test_errors_are_one_line(runs, report_a, tmp_path):
    work, _, _ = runs
    missing = precisionprobe("analyze", tmp_path / "nowhere", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"python3 -m precisionprobe analyze: run directory '{tmp_path / 'nowhere'}' does not exist"
    empty = tmp_path / "empty"
    empty.mkdir()
    no_events = precisionprobe("analyze", empty, "--prometheus", "http://127.0.0.1:9", check=False)
    assert no_events.returncode == 1 and "no layer events in" in no_events.stderr
    assert list(empty.iterdir()) == []  # no empty results database left behind
    assert len(no_events.stderr.strip().splitlines()) == 1 + no_events.stderr.count("warning:")
    down = precisionprobe("analyze", work / "a" / "events", "--db", tmp_path / "down.db", "--prometheus",
                          f"http://127.0.0.1:{free_port()}", check=False)
    assert down.returncode == 1
    # The error is one line; a slow refresh (retries) may have said how long it ran before it.
    (line,) = [x for x in down.stderr.strip().splitlines() if not x.startswith("precisionprobe: refreshing")]
    assert line.startswith("python3 -m precisionprobe analyze: pp_refresh") and "Traceback" not in down.stderr
    assert line.endswith("(--prometheus names the Prometheus that holds the run's DCGM samples; without one, "
                         "--emulate PROFILE replays the run on emulated GPUs, and --no-refresh reports what the "
                         "database holds)"), line
    not_a_url = precisionprobe("analyze", work / "a" / "events", "--db", tmp_path / "url.db", "--prometheus",
                               "notaurl", check=False)
    assert not_a_url.stderr.startswith("python3 -m precisionprobe analyze: --prometheus: pp_config: setting "
                                       "'prometheus_url' needs an http:// or https:// URL"), not_a_url.stderr
    assert not (tmp_path / "url.db").exists()  # refused before the results database is made
    several = precisionprobe("compare", work / "a.db", tmp_path / "none.db", check=False)
    assert several.returncode == 1 and "RUN_B: no results database at" in several.stderr
    # Events imported whose GPUs Prometheus has no samples of: said so, not "no layer events".
    unsampled = tmp_path / "unsampled"
    unsampled.mkdir()
    lines = (work / "a" / "events").glob("*.jsonl")
    (unsampled / "events-node-1.jsonl").write_text(
        next(lines).read_text().replace('"GPU-', '"GPU-not-in-prometheus-').replace('"emulated-node"', '"elsewhere"'))
    _, _, url = runs
    waiting = precisionprobe("analyze", unsampled, "--prometheus", url, check=False)
    assert waiting.returncode == 1 and "layer events of" in waiting.stderr and "is attributed yet" in waiting.stderr
    # compare never writes into a database that is not analyze's.
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE important(x)").connection.commit()
    before = other.read_bytes()
    foreign = precisionprobe("compare", other, work / "a.db", check=False)
    assert foreign.returncode == 1 and "RUN_A: '" in foreign.stderr and "is not a precisionprobe results database" in foreign.stderr
    assert other.read_bytes() == before
    # Nor does analyze add its tables beside another application's (a mistyped --db).
    mistyped = precisionprobe("analyze", work / "a" / "events", "--db", other, check=False)
    assert mistyped.stderr.strip() == (f"python3 -m precisionprobe analyze: {other} holds tables of another application "
                                       "(important) and none of precisionprobe's: it was not changed; give a results "
                                       "database, or a new file, with --db"), mistyped.stderr
    assert other.read_bytes() == before
    (tmp_path / "garbage.db").write_bytes(bytes(range(256)) * 16)
    (tmp_path / "empty.db").write_bytes(b"")
    for name, why in [("garbage.db", "is not an SQLite database (SQLite: file is not a database)"),
                      ("empty.db", "is not a precisionprobe results database (an empty file;")]:
        unreadable = precisionprobe("compare", tmp_path / name, work / "a.db", check=False)
        assert unreadable.returncode == 1 and f"RUN_A: '{tmp_path / name}' {why}" in unreadable.stderr, unreadable.stderr
    # A database with a report_jobs table but not the rest of analyze's: which of the two it is.
    partial = tmp_path / "partial.db"
    sqlite3.connect(partial).execute("CREATE TABLE report_jobs(x)").connection.commit()
    half = precisionprobe("compare", work / "a.db", partial, check=False)
    assert (half.returncode, half.stderr) == (1, f"python3 -m precisionprobe compare: RUN_B: {partial} holds no results "
                                                 "views (layer_metrics): analyze the run into it first\n")
    no_such_job = precisionprobe("compare", work / "a.db", work / "a.db", "--job-b", "nope", check=False)
    assert "compare: --job-b: no job 'nope' in" in no_such_job.stderr, no_such_job.stderr
    db = tmp_path / "no-folder" / "r.db"
    unusable = precisionprobe("analyze", work / "a" / "events", "--db", db, check=False)
    assert unusable.returncode == 1
    assert unusable.stderr.strip() == (f"python3 -m precisionprobe analyze: cannot open the results database {db}: "
                                       "unable to open database file (its folder does not exist)"), unusable.stderr


def test_results_read_without_the_extension(runs, report_a):
    """A colleague's pandas opens the results database with Python's plain sqlite3: the report_*
    tables hold the numbers the report shows."""
    import sqlite3
    pandas = pytest.importorskip("pandas", reason="pandas is not installed (scripts/setup.sh installs it)")
    work, _, _ = runs
    conn = sqlite3.connect(work / "a.db")  # no extension loaded
    with pytest.raises(sqlite3.OperationalError, match="no such function: pp_mean"):
        conn.execute("SELECT * FROM layer_metrics").fetchall()
    types = pandas.read_sql("SELECT * FROM report_layer_types", conn)
    estimates = pandas.read_sql("SELECT * FROM report_estimates WHERE grouping = 'layer_type'", conn)
    conn.close()
    assert set(types["direction"]) == {"forward", "backward", "untracked"}
    report, _ = report_a
    (job,) = report["jobs"]
    row = next(r for r in job["layer_types"] if r["name"] == "EmbeddingBag" and r["direction"] == "backward")
    saved = estimates[(estimates.layer_type == "EmbeddingBag") & (estimates.direction == "backward")
                      & (estimates.metric == "DCGM_FI_PROF_DRAM_ACTIVE")].iloc[0]
    assert saved["identified"] == 1 and saved["unit"] == "ratio"
    assert saved["estimate"] == row["metrics"]["dram_active"]["value"]
    assert saved["overlap_mean"] == row["metrics"]["dram_active"]["blend"]
    blend = types[(types.layer_type == "EmbeddingBag") & (types.direction == "backward")].iloc[0]
    assert blend["dram_active_ratio"] == row["metrics"]["dram_active"]["blend"]


def test_emulate_reads_the_run_folder_as_layer_events_does(runs, tmp_path, monkeypatch):
    """Links that loop back, a folder and a named pipe called *.jsonl: --emulate reads the run's
    event files as analyze does (a folder was read as a file, Errno 21, and a loop walked without
    end); a file it cannot read is said as such, not as its copy that it could not write."""
    work, paths, _ = runs
    calls = {}
    for name in ("plain", "run"):
        (tmp_path / name).mkdir()
        shutil.copy(paths["a"]["events"], tmp_path / name / "events-node-1.jsonl")
    run = tmp_path / "run"
    (run / "loop").symlink_to(".")
    (run / "back").symlink_to(".")
    (run / "folder.jsonl").mkdir()
    os.mkfifo(run / "pipe.jsonl")
    for name in ("plain", "run"):
        result = precisionprobe("analyze", tmp_path / name, "--emulate", "dlrm", "--format", "json", timeout=300)
        (job,) = json.loads(result.stdout)["jobs"]
        calls[name] = {(r["name"], r["direction"]): r["calls"] for r in job["layer_types"]}
    assert calls["run"] == calls["plain"] and any(calls["run"].values())
    from precisionprobe.analysis import emulate

    def unreadable(path, skipped):  # (as root, no mode makes a file unreadable)
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(emulate, "read_event_file", unreadable)
    with pytest.raises(ValueError, match=r"cannot open '.*events-node-1.jsonl': Permission denied"):
        emulate._streams(run)


def test_emulate_warns_of_a_subfolder_it_cannot_read_as_layer_events_does(runs, tmp_path, monkeypatch):
    """A folder of the run that cannot be read is left out of the replay with the warning
    layer_events() gives, not in silence."""
    work, paths, _ = runs
    run = tmp_path / "run"
    (run / "secret").mkdir(parents=True)
    for name in ("events-node-1.jsonl", "secret/events-node-2.jsonl"):
        shutil.copy(paths["a"]["events"], run / name)
    from precisionprobe.analysis import emulate
    real_scandir = os.scandir

    def scandir(path="."):  # (as root, no mode makes a folder unreadable)
        if os.path.basename(os.fspath(path)) == "secret":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)
    monkeypatch.setattr(os, "scandir", scandir)
    said = io.StringIO()
    _, files = emulate._streams(run, said)
    assert [path.name for path, _, _ in files] == ["events-node-1.jsonl"]
    assert said.getvalue() == f"precisionprobe: warning: skipped directory '{run / 'secret'}': Permission denied\n"


def test_emulate_replays_a_cpu_run_on_an_emulated_gpu(runs, tmp_path):
    """A run recorded on a machine without a GPU (every event on 'cpu'): --emulate replays its
    layer calls on an emulated GPU, so the report has the profile's values, identified."""
    work, paths, _ = runs
    run = tmp_path / "cpu-run"
    run.mkdir()
    lines = Path(paths["a"]["events"]).read_text().splitlines()
    with open(run / "events-node-1.jsonl", "w") as f:
        for line in lines:
            record = json.loads(line)
            if "layer" in record:
                record["gpu_uuid"], record["gpu"] = "cpu", None
            f.write(json.dumps(record) + "\n")
    result = precisionprobe("analyze", run, "--emulate", "dlrm", "--format", "json")
    (job,) = json.loads(result.stdout)["jobs"]
    assert job["gpus"] == 1
    row = next(r for r in job["layer_types"] if r["name"] == "EmbeddingBag" and r["direction"] == "backward")
    assert row["metrics"]["dram_active"]["kind"] == "estimate"
    assert row["metrics"]["dram_active"]["value"] == pytest.approx(0.86, rel=0.05)
    emulated = tmp_path / "cpu-run.emulated"
    assert (emulated / "precisionprobe.db").is_file() and list((emulated / "events").glob("*.jsonl"))
    # Again: the same files, nothing imported twice.
    again = precisionprobe("analyze", run, "--emulate", "dlrm", "--format", "json")
    assert json.loads(again.stdout)["jobs"][0]["layer_types"][0]["calls"] == job["layer_types"][0]["calls"]
    assert "made anew" not in again.stderr
    # The run grew (analyzed while the job ran): the emulated database is made anew, so no event
    # arrives after its window was folded.
    later = [json.loads(line) for line in (run / "events-node-1.jsonl").read_text().splitlines()]
    with open(run / "events-node-1.jsonl", "a") as f:
        for record in later:
            if "layer" in record:
                f.write(json.dumps(dict(record, t_start_ns=record["t_start_ns"] + 300 * 10**9,
                                        t_end_ns=record["t_end_ns"] + 300 * 10**9)) + "\n")
    grown = precisionprobe("analyze", run, "--emulate", "dlrm", "--format", "json")
    assert "is made anew" in grown.stderr and "arrived after" not in grown.stderr, grown.stderr
    grown_row = next(r for r in json.loads(grown.stdout)["jobs"][0]["layer_types"]
                     if r["name"] == "EmbeddingBag" and r["direction"] == "backward")
    assert grown_row["calls"] == 2 * row["calls"]
    # A profile without the run's layer types says so; an unknown one is a one-line error.
    other = precisionprobe("analyze", run, "--emulate", "resnext", "--emulate-out", tmp_path / "other",
                           "--format", "json")
    assert "profile 'resnext' has no values for layer types EmbeddingBag" in other.stderr
    unknown = precisionprobe("analyze", run, "--emulate", "nosuch", check=False)
    assert unknown.returncode == 1 and "--emulate: no profile 'nosuch' (shipped: dlrm" in unknown.stderr
    # Its copies kept inside the run would be read back by the next analyze; compare of the run
    # points at the emulated database.
    inside = precisionprobe("analyze", run, "--emulate", "dlrm", "--emulate-out", run / "emu", check=False)
    assert inside.returncode == 1 and "--emulate-out: " in inside.stderr and "is inside RUN_DIR" in inside.stderr
    assert not (run / "emu").exists()
    hint = precisionprobe("compare", run, run, check=False)
    assert hint.returncode == 1 and "(analyze --emulate wrote '" in hint.stderr
    # A folder that holds both the run and its emulated copy would count every call twice.
    both = precisionprobe("analyze", tmp_path, check=False)
    assert both.returncode == 1 and "and an emulator's copy of them" in both.stderr, both.stderr
    # The copy analyzed with --emulate again would be an emulation of the emulation.
    again = precisionprobe("analyze", f"{run}.emulated", "--emulate", "dlrm", check=False)
    assert again.returncode == 1 and "holds an emulator's copy of a run's events" in again.stderr, again.stderr
    assert not Path(f"{run}.emulated.emulated").exists()


def test_names_from_event_files_are_shown_safely():
    """Job ids and layer names come from event files: a terminal escape is shown, not obeyed, a
    '|' does not break a Markdown table, and ids that differ only in odd characters get figures
    of their own."""
    from precisionprobe.analysis.compare import compare_jobs, render_comparison
    from precisionprobe.analysis.html_report import _file_name
    from precisionprobe.analysis.findings import complete
    from precisionprobe.analysis.render import as_markdown, as_table
    from precisionprobe.analysis.report import JobReport, METRICS, Row, Value

    metrics = {short: Value("blend", 0.5) for _, short, _ in METRICS}
    rows = [Row("\x1b]0;owned\x07layer|x", "Linear", "forward", 3, 1.0, 1.0, 0.5, metrics)]
    job = JobReport("job|\x1b[2J", 1, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, rows)
    text = as_table([job])
    assert "\x1b" not in text and "\\x1b]0;owned\\x07layer|x" in text
    # The findings name the layer too (the largest share, what is not resolved).
    complete(job)
    assert any("owned" in s for s in job.findings) and any("owned" in s for s in job.unresolved)
    # (Markdown writes a backslash as '\\' and a ']' as '\]', which it shows as '\' and ']'.)
    for shown_text, name in ((as_table([job]), "\\x1b]0;owned\\x07layer|x"),
                             (as_markdown([job]), "\\\\x1b\\]0;owned\\\\x07layer|x")):
        assert "\x1b" not in shown_text and "\x07" not in shown_text
        assert f"The largest share of GPU time is {name} forward" in shown_text
    markdown = render_comparison(job, job, compare_jobs(job, job), "markdown")
    assert "\x1b" not in markdown and "A job\\|\\\\x1b\\[2J" in markdown
    assert all(line.count("|") - line.count("\\|") == 8 for line in markdown.splitlines())
    assert _file_name("a b") != _file_name("a_b") and _file_name("a_b") == "a_b"
    # Markdown passes inline HTML through: names are text there, not markup.
    rows = [Row("<img src=x onerror=alert(2)>", "Linear", "forward", 3, 1.0, 1.0, 0.5, metrics)]
    tagged = JobReport("<script>alert(1)</script>", 1, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, rows)
    complete(tagged)
    for markdown in (as_markdown([tagged]), render_comparison(tagged, tagged, compare_jobs(tagged, tagged), "markdown")):
        assert "<script" not in markdown and "<img" not in markdown, markdown
    assert "## Job &lt;script&gt;alert(1)&lt;/script&gt;" in as_markdown([tagged])
    # Nor are they links, images, code or emphasis: the image would be fetched when shown.
    rows = [Row("![](https://host/beacon)", "Linear", "forward", 3, 1.0, 1.0, 0.5, metrics)]
    linked = JobReport("[job](javascript:x) *a* _b_ `c` top_l.0", 1, 10, 1, 100, 1, None, None, 0, None,
                       None, {}, rows, rows)
    complete(linked)
    for markdown in (as_markdown([linked]), render_comparison(linked, linked, compare_jobs(linked, linked), "markdown")):
        assert "![](" not in markdown and "[job](" not in markdown and "`c`" not in markdown, markdown
        assert "!\\[\\](https://host/beacon)" in markdown
    assert "## Job \\[job\\](javascript:x) \\*a\\* \\_b\\_ \\`c\\` top_l.0" in as_markdown([linked])


def test_figures_draw_names_with_control_characters_and_dollars_as_written(tmp_path):
    """matplotlib reads text between two '$' as math and fails on what it cannot parse, and has no
    glyph for a control character (a warning naming its own files): the figures show such names
    written out instead."""
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (scripts/setup.sh installs it)")
    import warnings
    from precisionprobe.analysis.figures import metrics_figure, share_figure
    from precisionprobe.analysis.report import JobReport, METRICS, Row, Value

    metrics = {short: Value("blend", 0.5) for _, short, _ in METRICS}
    rows = [Row("cost$\\undefined$", "Linear", "forward", 3, 1.0, 1.0, 0.5, metrics),
            Row("esc\x1b[2J", "ReLU", "backward", 3, 1.0, 1.0, 0.5, metrics)]
    job = JobReport("run-$A-$B\x1b", 1, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        share_figure(job, tmp_path / "share.png")
        metrics_figure(job, tmp_path / "metrics.png")
    for png in ("share.png", "metrics.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_writes_a_self_contained_page(runs, report_a, tmp_path):
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (scripts/setup.sh installs it)")
    work, _, _ = runs
    result = precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh", "--no-layers",
                            "--html", tmp_path / "report")
    page = (tmp_path / "report" / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2 and "<h3>What this says</h3>" in page
    assert "EmbeddingBag" in page and "<h3>Per layer</h3>" not in page
    for png in ("emulated-dlrm-share.png", "emulated-dlrm-metrics.png"):
        assert (tmp_path / "report" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"report page {tmp_path / 'report' / 'index.html'}" in result.stderr
    onto_a_file = precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh",
                                 "--html", tmp_path / "report" / "index.html", check=False)
    assert onto_a_file.returncode == 1 and onto_a_file.stdout == ""
    assert "--html: '" in onto_a_file.stderr and "is a file; give a folder" in onto_a_file.stderr


def test_html_without_matplotlib_is_refused_before_any_work(runs, report_a, tmp_path):
    # Before, the whole report printed first (after the refresh, which can take minutes), then the
    # command failed with "--html: --html needs matplotlib".
    work, _, _ = runs
    hidden = tmp_path / "no-matplotlib" / "matplotlib"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError(\"No module named 'matplotlib'\")\n")
    result = subprocess.run(
        [sys.executable, "-m", "precisionprobe", "analyze", str(work / "a" / "events"), "--db", str(work / "a.db"),
         "--no-refresh", "--html", str(tmp_path / "report")], text=True, capture_output=True, timeout=300,
        env=dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path(),
                 PYTHONPATH=os.pathsep.join([str(hidden.parent), os.environ.get("PYTHONPATH", "")])))
    assert result.returncode == 1 and result.stdout == "" and not (tmp_path / "report").exists()
    assert result.stderr == ("python3 -m precisionprobe analyze: --html: needs matplotlib (Debian: apt install "
                             "python3-matplotlib; pip install matplotlib)\n")


def test_html_that_cannot_be_written_whole_leaves_the_page_before(runs, report_a, tmp_path):
    """The page and each figure go through a temporary file renamed over the old one: a write that
    fails (a file-size limit here, a full disk alike, or the command killed) leaves the page written
    before, never part of one, and no temporary file; the error names the file. The page was
    written in place: the limit left the first 100 KB of a 430 KB page where the whole one had been."""
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (scripts/setup.sh installs it)")
    work, _, _ = runs
    report = tmp_path / "report"
    analyze = ["analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh", "--no-layers", "--html", report]
    precisionprobe(*analyze)
    before = {path.name: path.read_bytes() for path in report.iterdir()}
    largest_figure = max(len(data) for name, data in before.items() if name.endswith(".png"))
    limit = largest_figure + 65536  # the figures fit under it, the page (with them embedded) does not
    assert len(before["index.html"]) > limit

    def file_size_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # (Python ignores SIGXFSZ: writes fail, EFBIG)

    limited = subprocess.run([sys.executable, "-m", "precisionprobe", *map(str, analyze)], text=True,
                             capture_output=True, timeout=300, preexec_fn=file_size_limit,
                             env=dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path()))
    assert limited.returncode == 1
    assert limited.stderr.endswith(f"--html: cannot write '{report / 'index.html'}': File too large\n"), limited.stderr
    assert (report / "index.html").read_bytes() == before["index.html"]
    assert sorted(path.name for path in report.iterdir()) == sorted(before)  # no temporary file left


def test_html_in_a_shared_folder_follows_no_link_left_under_a_temporary_name(tmp_path, monkeypatch):
    """In a folder others can write, links left where the temporary files would go (names once
    made of the process id alone, so easy to guess) are not followed: the file they name stays as
    it was, and the page and its figures are files of their own."""
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (scripts/setup.sh installs it)")
    from precisionprobe.analysis.html_report import write_html
    from precisionprobe.analysis.report import JobReport, METRICS, Row, Value

    metrics = {short: Value("blend", 0.5) for _, short, _ in METRICS}
    rows = [Row("emb", "EmbeddingBag", "forward", 3, 1.0, 1.0, 0.5, metrics)]
    job = JobReport("shared-job", 1, 10, 1, 100, 1, None, None, 0, None, None, {}, rows, rows)
    job.findings, job.unresolved = [], []
    shared, victim = tmp_path / "shared", tmp_path / "victim.txt"
    shared.mkdir()
    victim.write_text("not for the report\n")
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    for stem, suffix in (("index", ".html"), ("shared-job-share", ".png"), ("shared-job-metrics", ".png")):
        (shared / f".{stem}.4242.tmp{suffix}").symlink_to(victim)
    write_html([job], shared)
    assert victim.read_text() == "not for the report\n"
    for name in ("index.html", "shared-job-share.png", "shared-job-metrics.png"):
        assert (shared / name).is_file() and not (shared / name).is_symlink(), name


def test_html_onto_a_device_or_named_pipe_writes_the_page_there(runs, report_a, tmp_path):
    """As export's --openmetrics: /dev/stdout, a named pipe or a null device gets the page alone
    (its figures embedded), written in place, nothing made beside it. The device is a private
    null device made here, never /dev/null."""
    pytest.importorskip("matplotlib", reason="--html draws with matplotlib (scripts/setup.sh installs it)")
    work, _, _ = runs
    analyze = ("analyze", work / "a" / "events", "--db", work / "a.db", "--no-refresh", "--no-layers", "--html")
    to_stdout = precisionprobe(*analyze, "/dev/stdout")
    table, page = to_stdout.stdout.split("<!DOCTYPE html>")  # the report, then the page, in that order
    assert "EmbeddingBag" in table and page.count('src="data:image/png;base64,') == 2 and page.endswith("</html>\n")
    places = tmp_path / "places"
    places.mkdir()
    os.mkfifo(places / "pipe")
    read = {}
    reader = threading.Thread(target=lambda: read.update(page=(places / "pipe").read_text()))
    reader.start()
    to_pipe = precisionprobe(*analyze, places / "pipe", check=False, timeout=120)
    reader.join(timeout=10)
    assert to_pipe.returncode == 0, to_pipe.stderr
    assert read["page"].startswith("<!DOCTYPE html>") and read["page"].count('src="data:image/png;base64,') == 2
    assert f"report page {places / 'pipe'}" in to_pipe.stderr
    try:
        os.mknod(places / "device", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        return  # (not root)
    to_device = precisionprobe(*analyze, places / "device", check=False)
    assert to_device.returncode == 0, to_device.stderr
    assert sorted(os.listdir(places)) == ["device", "pipe"] and stat.S_ISCHR(os.stat(places / "device").st_mode)

DOC = Path(__file__).resolve().parents[2] / "docs" / "analyze.md"


def check_doc_block(name, output):
    """docs/analyze.md's block after `<!-- NAME output: generated by ... -->` is output as this
    test makes it (PP_WRITE_DOCS=1 rewrites it)."""
    block = re.compile(rf"(<!-- {name} output: generated by python/tests/test_analyze.py -->\n```text\n)(.*?)(```\n)",
                       re.S)
    text = DOC.read_text()
    match = block.search(text)
    assert match, f"docs/analyze.md lacks its generated {name} output block"
    if os.environ.get("PP_WRITE_DOCS"):
        DOC.write_text(text[:match.start(2)] + output + text[match.end(2):])
    else:
        assert match.group(2) == output, f"docs/analyze.md's {name} output is out of date: rerun with PP_WRITE_DOCS=1"


def test_the_docs_show_this_report(runs, report_a):
    work, _, _ = runs
    check_doc_block("analyze", precisionprobe("analyze", work / "a" / "events", "--db", work / "a.db",
                                              "--no-refresh", "--no-layers").stdout)


def test_reading_commands_leave_the_database_as_it_is(runs, report_a, tmp_path):
    """compare, analyze --no-refresh and export --no-refresh read a results database without
    changing a byte of it, also one whose saved estimates are missing (a database only pp_refresh
    wrote): they are then computed for the command alone."""
    work, _, _ = runs
    database = tmp_path / "archived.db"
    shutil.copy(work / "a.db", database)
    with sqlite3.connect(database) as conn:
        conn.execute("DELETE FROM report_estimates")
    before = database.read_bytes()
    rows = json.loads(precisionprobe("compare", database, database, "--format", "json").stdout)["rows"]
    assert {"estimate", "interval"} & {r["a_kind"] for r in rows}
    (job,) = json.loads(precisionprobe("analyze", work / "a" / "events", "--db", database, "--no-refresh",
                                       "--format", "json").stdout)["jobs"]
    assert any(m["kind"] == "estimate" for r in job["layer_types"] for m in r["metrics"].values())
    exposition = precisionprobe("export", work / "a" / "events", "--db", database, "--no-refresh",
                                "--openmetrics", "-").stdout
    assert "precisionprobe_job_gpus" in exposition
    assert database.read_bytes() == before


def test_a_database_of_an_earlier_version_is_read_through_an_upgraded_copy(runs, report_a, tmp_path):
    """A read-only command on a database an earlier version wrote (here: views as an earlier
    version stored them) reads an upgraded copy in memory, says so, and answers as this version
    does; the file keeps every byte."""
    work, _, _ = runs
    database = tmp_path / "earlier.db"
    shutil.copy(work / "a.db", database)
    with sqlite3.connect(database) as conn:
        (view,) = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'job_overview'").fetchone()
        conn.execute("DROP VIEW job_overview")
        conn.execute(view.replace(" AS SELECT ", " AS SELECT 'earlier' AS version, ", 1))
        conn.execute("UPDATE pp_meta SET value = 'earlier' WHERE key = 'views'")
    before = database.read_bytes()
    result = precisionprobe("compare", database, work / "a.db", "--format", "json")
    assert (f"precisionprobe: {database} was written by another version of precisionprobe: reading a copy in "
            "memory with this version's tables and views (the file is not changed") in result.stderr, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert rows == json.loads(precisionprobe("compare", work / "a.db", work / "a.db", "--format", "json").stdout)["rows"]
    assert database.read_bytes() == before


def test_a_database_with_tables_this_version_does_not_know_is_not_read(runs, report_a, tmp_path):
    """A table that is not as precisionprobe creates it (a later version's column, or a view in
    its place that would run when read): the reading commands refuse it, and nothing is written."""
    work, _, _ = runs
    for name, change in [("later.db", "ALTER TABLE pp_metrics ADD COLUMN unit TEXT"),
                         ("altered.db", "PRAGMA legacy_alter_table = ON; ALTER TABLE report_jobs RENAME TO "
                                        "report_jobs_kept; CREATE VIEW report_jobs AS SELECT * FROM report_jobs_kept"),
                         ("indexed.db", 'CREATE INDEX "by\njob" ON report_jobs(job_id)')]:
        database = tmp_path / name
        shutil.copy(work / "a.db", database)
        with sqlite3.connect(database) as conn:
            conn.executescript(change)
        before = database.read_bytes()
        for command in (["compare", database, work / "a.db"],
                        ["analyze", work / "a" / "events", "--db", database, "--no-refresh"],
                        ["analyze", work / "a" / "events", "--db", database]):
            refused = precisionprobe(*command, check=False)
            assert refused.returncode == 1 and "is not as precisionprobe creates it" in refused.stderr, refused.stderr
            assert ("is made again from its run's event files: precisionprobe analyze RUN_DIR --db NEW_FILE" in
                    refused.stderr or "refresh the run's event files into a fresh database" in refused.stderr), \
                refused.stderr  # the fix, for a file this version cannot read
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr  # a name with a newline too
        assert database.read_bytes() == before


def test_runs_replayed_into_one_database_keep_their_own_gpus(runs, tmp_path):
    """Two CPU runs on one host at the same time (--emulate, one --db): each process's emulated
    GPU is its own, so neither run reads as sharing a GPU with the other, and both keep their
    estimates."""
    work, paths, _ = runs
    lines = Path(paths["a"]["events"]).read_text().splitlines()
    for job in ("first", "second"):
        (tmp_path / job).mkdir()
        with open(tmp_path / job / "events-node-1.jsonl", "w") as f:
            for line in lines:
                record = dict(json.loads(line), job_id=job)
                if "layer" in record:
                    record["gpu_uuid"], record["gpu"] = "cpu", None
                f.write(json.dumps(record) + "\n")
    database = tmp_path / "shared.db"
    for job in ("first", "second"):
        result = precisionprobe("analyze", tmp_path / job, "--emulate", "dlrm", "--db", database, "--format", "json")
        assert "was shared by jobs" not in result.stderr and "arrived after" not in result.stderr, result.stderr
    reports = json.loads(precisionprobe("analyze", tmp_path / "first", "--db", database, "--no-refresh",
                                        "--format", "json").stdout)["jobs"]
    assert sorted(j["job_id"] for j in reports) == ["first", "second"]
    for job in reports:
        row = next(r for r in job["layer_types"] if r["name"] == "EmbeddingBag" and r["direction"] == "backward")
        assert row["metrics"]["dram_active"]["kind"] == "estimate", job["job_id"]
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(DISTINCT gpu_uuid) FROM pp_events_blocks").fetchone() == (2,)


def test_an_unusable_prometheus_url_in_the_environment_names_the_option_to_give(runs, tmp_path, monkeypatch):
    """The extension reads PRECISIONPROBE_PROMETHEUS_URL where no URL is set; a mistyped one is
    refused before the results database is made, with the fix a command line has (--prometheus),
    and --prometheus given instead is used as it is."""
    work, _, url = runs
    monkeypatch.setenv("PRECISIONPROBE_PROMETHEUS_URL", "prometheus:9090")
    refused = precisionprobe("analyze", work / "a" / "events", "--db", tmp_path / "env.db", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "python3 -m precisionprobe analyze: environment variable PRECISIONPROBE_PROMETHEUS_URL is not usable "
        "(setting 'prometheus_url' needs an http:// or https:// URL such as http://prometheus:9090): correct it, "
        "or give --prometheus URL"), refused.stderr
    assert not (tmp_path / "env.db").exists()
    precisionprobe("analyze", work / "a" / "events", "--db", tmp_path / "env.db", "--prometheus", url, "--no-layers")


def test_a_folder_is_refused_only_with_the_events_an_emulated_copy_copies(tmp_path):
    """An emulated copy counts twice only beside its own events: a folder with run A and the copy
    of run B made elsewhere is analyzed as it is; with A's own copy, it is refused."""
    from precisionprobe import _emulated_copy
    runs = tmp_path / "runs"
    for folder in (runs / "a", runs / "a.emulated", runs / "b.emulated", tmp_path / "elsewhere" / "b"):
        folder.mkdir(parents=True)
        (folder / "events-node-1.jsonl").write_text("{}\n")
    _emulated_copy.mark(runs / "b.emulated", tmp_path / "elsewhere" / "b")
    assert _emulated_copy.copies_inside(runs) == []
    _emulated_copy.mark(runs / "a.emulated", runs / "a")
    assert _emulated_copy.copies_inside(runs) == [(runs / "a.emulated").resolve()]
    assert _emulated_copy.copies_inside(runs / "a.emulated") == []  # the copy alone is what to analyze


def test_a_moved_or_copied_run_with_its_emulated_copy_is_still_refused(tmp_path):
    """The mark names its source relative to the copy as well: moving or copying the folder that
    holds a run and its copy keeps the pair recognised, where its absolute path would name the
    old place (or the original, still beside it)."""
    from precisionprobe import _emulated_copy
    first = tmp_path / "first"
    for folder in (first / "events", first / "emulated"):
        folder.mkdir(parents=True)
        (folder / "events-node-1.jsonl").write_text("{}\n")
    _emulated_copy.mark(first / "emulated", first / "events")
    copied = tmp_path / "copied"
    shutil.copytree(first, copied)
    assert _emulated_copy.copies_inside(copied) == [(copied / "emulated").resolve()]
    moved = tmp_path / "moved"
    first.rename(moved)
    assert _emulated_copy.copies_inside(moved) == [(moved / "emulated").resolve()]
    # A mark of an earlier version names the absolute path only, which is gone after the move:
    # the copy beside other event files is refused, as with a mark that cannot be read.
    (moved / "emulated" / _emulated_copy.MARK).write_text(f"{first}\nevent files of that folder\n")
    assert _emulated_copy.copies_inside(moved) == [(moved / "emulated").resolve()]
    refused = precisionprobe("analyze", moved, check=False)
    assert refused.returncode == 1 and "whose run is not where the copy's mark says (moved, or removed)" in \
        refused.stderr, refused.stderr


def test_a_value_of_another_type_in_the_report_tables_is_one_line(runs, report_a, tmp_path):
    """SQLite keeps text in a REAL column: the reading commands name the table, column and job
    instead of failing half-way with a traceback."""
    work, _, _ = runs
    database = tmp_path / "typed.db"
    shutil.copy(work / "a.db", database)
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE report_jobs SET refreshed_at = 'x'")
    for command in (["compare", database, database], ["analyze", work / "a" / "events", "--db", database, "--no-refresh"]):
        result = precisionprobe(*command, check=False)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert (f"'{database}': report_jobs.refreshed_at of job '{offline.JOB_ID}' holds 'x', not a number"
                in result.stderr), result.stderr
    # A long value is cut short in the message.
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE report_jobs SET refreshed_at = 1")
        conn.execute("UPDATE report_layers SET gpu_util_percent = zeroblob(3000)")
    result = precisionprobe("compare", database, database, check=False)
    assert result.returncode == 1 and "report_layers.gpu_util_percent of job" in result.stderr, result.stderr
    assert "...'" in result.stderr and len(result.stderr) < 700, result.stderr  # not the 3,000 bytes


