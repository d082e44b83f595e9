"""`precisionprobe analyze` and `compare` as a user runs them: the offline emulator's recordings
(realistic dcgm-exporter timing) backfilled into a real Prometheus (conftest's `runs`), the
commands run as subprocesses, their output read back in each format."""
import csv
import io
import json
import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from conftest import run_cli as precisionprobe
from precisionprobe.emulator import offline
from precisionprobe.harness.ports import free_port

SHORT = {"DCGM_FI_DEV_GPU_UTIL": "gpu_util", "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
         "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy", "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
         "DCGM_FI_PROF_PIPE_FP32_ACTIVE": "fp32_active"}


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
    assert "is memory-bound: backward DRAM 0.84 vs FP32 0.09, SM occupancy 0.30 (identified estimates)" in text, text
    # The blend is named as one, and left out of the verdict (it would read as compute-leaning).
    assert text.endswith("; forward not resolved (its sample windows blend DRAM ~0.22, FP32 ~0.37 of its "
                         "neighbours), left out."), text
    # The same two directions with the shares swapped: the forward decides, and it is not; known
    # only as a blend, it is said to be only indicative.
    text = verdict(row("backward", 0.001, 0.84, 0.09, "estimate"), row("forward", 0.579, 0.22, 0.37, "blend"))
    assert "is not memory-bound by this measure" in text and "forward DRAM 0.22 vs FP32 0.37" in text, text
    assert "only indicative" in text, text
    # A direction known by a blend of DRAM and an interval of FP32 (0 to 0.137) is named by both
    # blends (its overlap means), not the interval's middle.
    forward = row("forward", 0.001, 0.242, 0.445, "blend")
    forward.metrics["fp32_active"] = Value("interval", None, 0.0, 0.137, 0.445, "not identified", 1.0)
    text = verdict(row("backward", 0.579, 0.84, 0.09, "estimate"), forward)
    assert text.endswith("; forward not resolved (its sample windows blend DRAM ~0.24, FP32 ~0.45 of its "
                         "neighbours), left out."), text


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
    exported = precisionprobe("export", empty, "--prometheus", "http://127.0.0.1:9", "--openmetrics", "-",
                              check=False)
    assert exported.returncode == 1 and "no layer events in" in exported.stderr
    assert list(empty.iterdir()) == []  # export's neither
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
    assert several.returncode == 1 and several.stderr.endswith(
        f"RUN_B: '{tmp_path / 'none.db'}' does not exist (give a run directory or a results database file)\n")
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
        given = precisionprobe("compare", tmp_path, work / "a.db", "--db-a", tmp_path / name, check=False)
        assert given.returncode == 1 and f"--db-a: '{tmp_path / name}' {why}" in given.stderr, given.stderr
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




def test_a_running_jobs_last_events_are_said_to_wait_for_their_samples(tmp_path):
    """analyze during a job's first minute: nothing is attributed yet because a refresh leaves
    a running job's last attribution_margin_seconds for samples still to come, which the error
    says first, rather than sending the user to check --prometheus and the UUID labels."""
    import time

    from conftest import extension_path
    from precisionprobe.analysis.command_error import CommandError
    from precisionprobe.analysis.run_database import read_reports

    conn = sqlite3.connect(tmp_path / "results.db")
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")

    def insert_event(ended_s_ago):
        end = time.time() - ended_s_ago
        conn.execute("INSERT INTO pp_events(job_id, gpu_uuid, layer, layer_type, forward, t_start_ns, t_end_ns, "
                     "t_start, t_end, source_file, line) VALUES ('j', 'GPU-x', 'fc', 'Linear', 1, ?, ?, ?, ?, 'f', 1)",
                     (int((end - 0.001) * 1e9), int(end * 1e9), end - 0.001, end))

    insert_event(ended_s_ago=86400)
    with pytest.raises(CommandError) as error:
        read_reports(conn, None, "'run'")
    assert "their GPUs have no DCGM samples" in str(error.value)
    conn.execute("DELETE FROM pp_events")
    insert_event(ended_s_ago=5)
    with pytest.raises(CommandError) as error:
        read_reports(conn, None, "'run'")
    assert re.fullmatch(r"none of the 1 layer events of 'run' is attributed yet: the newest ended [4-9] s ago, and a "
                        r"refresh leaves a running job's last 60 s \(attribution_margin_seconds\) for samples still "
                        r"to come: analyze again once the job has ended, with --final", str(error.value)), error.value


def test_the_results_database_analyze_makes_is_in_wal_mode(report_a, runs, tmp_path):
    """A scheduler reads the results while refreshes write them: in SQLite's default rollback
    journal a reader's open transaction failed a refresh ('database is locked'), and a writer
    killed mid-refresh left a journal that read-only readers could not open. analyze makes the
    file in WAL mode; a file that exists keeps its own mode."""
    from conftest import extension_path

    work, _, url = runs
    with closing(sqlite3.connect(work / "a.db")) as conn:  # (closed: other tests copy the file alone)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    existing = tmp_path / "mine.db"
    conn = sqlite3.connect(existing)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.execute("SELECT pp_install_views()")
    conn.close()
    precisionprobe("analyze", work / "a" / "events", "--db", existing, "--prometheus", url, "--final")
    with closing(sqlite3.connect(existing)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert conn.execute("SELECT count(*) FROM report_jobs").fetchone()[0] == 1
