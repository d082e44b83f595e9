"""`precisionprobe analyze --html DIR`: a self-contained page with its figures, written whole or
not at all, onto a folder, a pipe or a device; and figures that draw names from event files as
they are written. The recordings are conftest's `runs` (offline emulator, real Prometheus)."""
import os
import resource
import stat
import subprocess
import sys
import threading

import pytest

from conftest import extension_path, run_cli as precisionprobe


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


def test_figures_of_a_long_job_id_have_names_a_folder_takes(tmp_path):
    """A job id may be longer than a file name may be (255 bytes; `run --job-id` takes it): its
    figures' names keep the start of it and a digest of the whole, as for an id with spaces."""
    from precisionprobe.analysis.html_report import _file_name, _replace
    names = {_file_name(job) for job in ("j" * 300, "j" * 300 + "k", "a b", "a_b", "plain-job.1")}
    assert len(names) == 5 and "plain-job.1" in names
    for name in names:
        for figure in (f"{name}-share.png", f"{name}-metrics.png"):
            _replace(tmp_path / figure, lambda f: f.write(b"png"))
            assert (tmp_path / figure).read_bytes() == b"png"


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
