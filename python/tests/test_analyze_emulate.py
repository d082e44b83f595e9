"""`precisionprobe analyze --emulate PROFILE`: a run recorded without a GPU replayed on emulated
GPUs, its event folder read as layer_events reads it, and its emulated copy kept apart from the
run so that no call is counted twice. The recordings are conftest's `runs`."""
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import extension_path, run_cli as precisionprobe, wait_for


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
    # A folder of files no replay wrote (another run's results, say) is not the replay's to
    # overwrite: its database and events stay as they were.
    victim = tmp_path / "victim"
    (victim / "events").mkdir(parents=True)
    (victim / "precisionprobe.db").write_bytes(b"another run's results")
    taken = precisionprobe("analyze", run, "--emulate", "dlrm", "--emulate-out", victim, check=False)
    assert taken.returncode == 1 and "--emulate-out: " in taken.stderr, taken.stderr
    assert "holds files that no --emulate wrote" in taken.stderr
    assert (victim / "precisionprobe.db").read_bytes() == b"another run's results"
    assert not any((victim / "events").iterdir())
    shutil.rmtree(victim)
    hint = precisionprobe("compare", run, run, check=False)
    assert hint.returncode == 1 and "(analyze --emulate wrote '" in hint.stderr
    # A folder that holds both the run and its emulated copy would count every call twice.
    both = precisionprobe("analyze", tmp_path, check=False)
    assert both.returncode == 1 and "and an emulator's copy of them" in both.stderr, both.stderr
    # With --emulate, it is named as a folder of runs and their copies (the copy's own hint,
    # "analyze it without --emulate", would be refused as above).
    both = precisionprobe("analyze", tmp_path, "--emulate", "dlrm", check=False)
    assert both.returncode == 1 and f"--emulate: '{tmp_path}' holds emulated copies of runs (" in both.stderr and \
        "beside event files: --emulate one run's own folder (its copy is made beside it)" in both.stderr, both.stderr
    # The copy analyzed with --emulate again would be an emulation of the emulation.
    again = precisionprobe("analyze", f"{run}.emulated", "--emulate", "dlrm", check=False)
    assert again.returncode == 1 and "holds an emulator's copy of a run's events" in again.stderr, again.stderr
    assert not Path(f"{run}.emulated.emulated").exists()


def test_sigterm_stops_the_emulators_prometheus(runs, tmp_path):
    """`kill` of analyze --emulate (a scheduler ending it) ends the command as Ctrl-C does: its
    Prometheus is stopped and its temporary folder removed, where they were left behind."""
    work, paths, _ = runs
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(paths["a"]["events"], run / "events-node-1.jsonl")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path(), TMPDIR=str(temporary))
    command = subprocess.Popen([sys.executable, "-m", "precisionprobe", "analyze", run, "--emulate", "dlrm"],
                               env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: any(temporary.glob("precisionprobe-emulate-*/prometheus.yml")), timeout=120,
                 what="the emulator's Prometheus to start")
    finally:
        command.send_signal(signal.SIGTERM)
        _, stderr = command.communicate(timeout=120)
    assert command.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.endswith("analyze: terminated (SIGTERM); the database keeps what its last complete refresh "
                           "wrote\n"), stderr

    def prometheus_left():
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if str(temporary).encode() in cmdline.read_bytes():
                    return True
            except OSError:
                pass  # (a process that ended meanwhile)
        return False
    assert not prometheus_left() and not any(temporary.iterdir())


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


def test_a_folder_is_refused_only_with_the_events_an_emulated_copy_copies(tmp_path):
    """An emulated copy counts twice only beside its own events: a folder with run A and the copy
    of run B made elsewhere is analyzed as it is; with A's own copy, it is refused."""
    from precisionprobe import _emulated_copy
    runs = tmp_path / "runs"
    for folder in (runs / "a", runs / "a.emulated", runs / "b.emulated", tmp_path / "elsewhere" / "b"):
        folder.mkdir(parents=True)
        (folder / "events-node-1.jsonl").write_text("{}\n")
    _emulated_copy.mark(runs / "b.emulated", tmp_path / "elsewhere" / "b", "dlrm")
    assert _emulated_copy.copies_inside(runs) == []
    _emulated_copy.mark(runs / "a.emulated", runs / "a", "dlrm")
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
    _emulated_copy.mark(first / "emulated", first / "events", "dlrm")
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


def _cpu_run(paths, folder, job):
    """Run A's events as a run recorded on a machine without a GPU, as job `job`, in folder."""
    folder.mkdir()
    with open(folder / "events-node-1.jsonl", "w") as f:
        for line in Path(paths["a"]["events"]).read_text().splitlines():
            record = dict(json.loads(line), job_id=job)
            if "layer" in record:
                record["gpu_uuid"], record["gpu"] = "cpu", None
            f.write(json.dumps(record) + "\n")
    return folder


def _dram(report, layer_type="EmbeddingBag", direction="backward"):
    row = next(r for r in report["layer_types"] if r["name"] == layer_type and r["direction"] == direction)
    return row["metrics"]["dram_active"]["value"]


def test_an_emulated_run_says_so_and_is_made_anew_for_another_profile(runs, tmp_path):
    """The report of an emulated run says that its counters are the profile's (table, JSON, and
    compare beside a measured run); analyzing it again with another profile makes its database
    anew, where the old profile's numbers were shown unsaid; and the making anew waits for another
    connection that writes the database, instead of removing the file from under it."""
    work, paths, url = runs
    run = _cpu_run(paths, tmp_path / "run", "cpu-job")
    table = precisionprobe("analyze", run, "--emulate", "dlrm", "--no-layers")
    assert table.stdout.splitlines()[0].endswith("100 ms; counters EMULATED from profile dlrm, not measured "
                                                 "(the layer timings are the run's own)"), table.stdout
    dlrm = json.loads(precisionprobe("analyze", run, "--emulate", "dlrm", "--format", "json").stdout)["jobs"][0]
    assert dlrm["emulated"] == "dlrm" and _dram(dlrm) == pytest.approx(0.86, abs=0.03)
    # Another profile: gpt2 has no EmbeddingBag, whose backward calls then read its default DRAM
    # 0.55, not dlrm's 0.86. Meanwhile another connection writes the database, until a second
    # after the replay: the command waits for it, then makes it anew.
    writer = subprocess.Popen([sys.executable, "-c", "import os, sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN IMMEDIATE'); print('writing', flush=True)\n"
                               "replayed = os.stat(sys.argv[2]).st_mtime_ns\n"
                               "while os.stat(sys.argv[2]).st_mtime_ns == replayed: time.sleep(0.05)\n"
                               "time.sleep(1.5); c.execute('COMMIT')",
                               f"{run}.emulated/precisionprobe.db", f"{run}.emulated/metrics-0.om"],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "writing\n"
    gpt2 = precisionprobe("analyze", run, "--emulate", "gpt2", "--format", "json")
    assert writer.wait(timeout=60) == 0
    assert "the emulated samples changed (another profile, or another version of the emulator) since --emulate " \
           "last replayed the run" in gpt2.stderr and "is made anew" in gpt2.stderr, gpt2.stderr
    assert "is being written by another connection" in gpt2.stderr, gpt2.stderr
    (report,) = json.loads(gpt2.stdout)["jobs"]
    assert report["emulated"] == "gpt2" and _dram(report) == pytest.approx(0.55, abs=0.03)
    exported = precisionprobe("export", run, "--emulate", "gpt2", "--openmetrics", "-").stdout
    assert 'precisionprobe_job_counters_emulated{job_id="cpu-job"} 1\n' in exported
    # Beside a measured run, compare says which side is the profile's.
    precisionprobe("analyze", work / "a" / "events", "--prometheus", url, "--final", "--db", tmp_path / "a.db")
    compared = precisionprobe("compare", f"{run}.emulated", tmp_path / "a.db")
    assert "RUN_A (job cpu-job): counters EMULATED from profile gpt2, not measured (the layer timings are the " \
           "run's own), and the other side's are not known to be" in compared.stderr, compared.stderr
    # Archived elsewhere, away from the folder its mark names: the database still says so.
    archived = tmp_path / "archive" / "run.emulated"
    shutil.move(f"{run}.emulated", archived)
    kept = precisionprobe("analyze", archived, "--no-refresh", "--no-layers")
    assert "counters EMULATED from profile gpt2, not measured" in kept.stdout.splitlines()[0], kept.stdout


def test_a_run_and_its_emulated_copy_are_refused_in_one_database(runs, tmp_path):
    """The same run as recorded and replayed on emulated GPUs into one --db (what the finding on a
    CPU run suggests, with the --db of before) would count every call twice: refused, either way
    round, and nothing is written; --emulate-out naming another run's emulated copy is refused,
    where it made that run's results anew."""
    work, paths, url = runs
    run = _cpu_run(paths, tmp_path / "run", "cpu-job")
    database = tmp_path / "results.db"
    precisionprobe("analyze", run, "--db", database)
    before = database.read_bytes()
    mixed = precisionprobe("analyze", run, "--emulate", "dlrm", "--db", database, check=False)
    assert mixed.returncode == 1 and mixed.stderr.endswith(
        f"--db: '{database}' holds the events of '{run}' as recorded, and this refresh would add their copy on "
        f"emulated GPUs ('{run}.emulated/events'): every call would count twice; give this one a results database "
        "of its own (the default --db, in its folder), or a new file\n"), mixed.stderr
    assert database.read_bytes() == before and not Path(f"{run}.emulated").exists()
    # The other way round: the emulated database, and the run as recorded.
    precisionprobe("analyze", run, "--emulate", "dlrm")
    copied = tmp_path / "copied.db"
    shutil.copy(f"{run}.emulated/precisionprobe.db", copied)
    back = precisionprobe("analyze", run, "--db", copied, check=False)
    assert back.returncode == 1 and f"holds an emulated copy of the events of '{run}' ('{run}.emulated/events'), " \
        "and this refresh would add those events as recorded: every call would count twice" in back.stderr, back.stderr
    # Runs of their own share a database as before; the copy analyzed as it is, too.
    other = _cpu_run(paths, tmp_path / "other", "other-job")
    precisionprobe("analyze", other, "--db", database)
    precisionprobe("analyze", f"{run}.emulated", "--no-layers")
    # Another run's emulated folder as --emulate-out: refused, that run's results kept.
    kept = Path(f"{run}.emulated/precisionprobe.db").read_bytes()
    taken = precisionprobe("analyze", other, "--emulate", "dlrm", "--emulate-out", f"{run}.emulated", check=False)
    assert taken.returncode == 1 and taken.stderr.endswith(
        f"--emulate-out: '{run}.emulated' holds the emulated copy of another run ('{run}'), whose results the "
        "replay would make anew: give a new folder, or none (the default is beside RUN_DIR)\n"), taken.stderr
    assert Path(f"{run}.emulated/precisionprobe.db").read_bytes() == kept


def test_a_database_refreshed_from_another_profile_is_never_shown_under_this_one(runs, tmp_path):
    """Another --db rewrote the shared emulated copy with another profile's samples; the next
    analyze of the default database found the copy unchanged by itself and showed the old
    profile's values under the new profile's name. Each database's last replay is recorded: the
    default one is made anew, and a --db of the old profile is refused, not relabelled."""
    work, paths, _ = runs
    run = _cpu_run(paths, tmp_path / "run", "cpu-job")
    precisionprobe("analyze", run, "--emulate", "dlrm", "--no-layers")
    other = tmp_path / "other.db"
    precisionprobe("analyze", run, "--emulate", "dlrm", "--db", other, "--no-layers")
    precisionprobe("analyze", run, "--emulate", "gpt2", "--db", tmp_path / "gpt2.db", "--no-layers")
    again = precisionprobe("analyze", run, "--emulate", "gpt2", "--format", "json")
    assert "is made anew" in again.stderr, again.stderr
    (report,) = json.loads(again.stdout)["jobs"]
    assert report["emulated"] == "gpt2" and _dram(report) == pytest.approx(0.55, abs=0.03)
    refused = precisionprobe("analyze", run, "--emulate", "gpt2", "--db", other, check=False)
    assert refused.returncode == 1 and refused.stderr.endswith(
        "--db: the emulated samples changed (another profile, or another version of the emulator) since "
        f"'{other}' was refreshed from this run's replay, and its samples are the old ones: remove it to refresh "
        "it from the start, or give another --db\n"), refused.stderr
