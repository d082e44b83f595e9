"""The command line as a whole, whatever the command: its own options, and its output."""
import os
import shutil
import subprocess
import sys

from conftest import ROOT, child_environment, extension_path, run_cli as precisionprobe
from precisionprobe import __version__


def test_version_is_printed_as_other_tools_print_it():
    # Before, --version was answered "the following arguments are required: command" (status 2).
    result = precisionprobe("--version")
    assert result.stdout == f"python3 -m precisionprobe {__version__}\n" and result.stderr == ""


def test_a_reader_that_goes_away_is_no_traceback(tmp_path):
    # `precisionprobe analyze RUN | head -3`: head exits after its lines, and the rest of the report
    # meets a closed pipe. Before, that was a BrokenPipeError traceback (status 1).
    shutil.copy(ROOT / "tests" / "data" / "events" / "cpu.jsonl", tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # (the reader gone before the first write: what head does, at once)
    try:
        result = subprocess.run([sys.executable, "-m", "precisionprobe", "analyze", str(tmp_path), "--prometheus",
                                 "http://127.0.0.1:1"], stdout=write_end, stderr=subprocess.PIPE, text=True,
                                timeout=120, env=dict(os.environ, PRECISIONPROBE_EXTENSION=extension_path()))
    finally:
        os.close(write_end)
    assert result.returncode == 1 and result.stderr == ""


def test_an_empty_option_value_is_refused_not_taken_as_left_out(tmp_path):
    """`--db "$DB"` with DB unset must not read the default database, `--html ""` write no page, or
    `--emulate ""` run without emulating, each silently: the option is named instead."""
    for command, option, left_out in [("analyze", "--db", "the default"), ("analyze", "--html", "no page"),
                                      ("analyze", "--emulate", "no emulation"), ("export", "--prometheus", "the default"),
                                      ("serve", "--emulate-out", "the default"), ("analyze", "--job", "every job")]:
        extra = {"export": ["--openmetrics", str(tmp_path / "out.prom")], "serve": ["--port", "0"]}.get(command, [])
        result = precisionprobe(command, tmp_path, *extra, option, "", check=False)
        assert (result.returncode, result.stderr) == (
            1, f"python3 -m precisionprobe {command}: {option}: must not be empty (leave it out for {left_out})\n")
    compared = precisionprobe("compare", tmp_path, tmp_path, "--db-a", "", check=False)
    assert compared.stderr == "python3 -m precisionprobe compare: --db-a: must not be empty (leave it out for the default)\n"
    assert not (tmp_path / "precisionprobe.db").exists() and not (tmp_path / "out.prom").exists()


def test_options_a_command_would_leave_unused_are_refused(tmp_path):
    """--no-refresh reads the database as it is: a --prometheus, --final or --emulate-out beside
    it was silently unused, the answer looking as if it had been used. A serve that refreshes
    every S seconds with --final would fold the windows of a job still running each time."""
    for command, extra, option in [("analyze", ["--prometheus", "http://127.0.0.1:1"], "--prometheus"),
                                   ("analyze", ["--final"], "--final"),
                                   ("export", ["--emulate-out", str(tmp_path / "emu"), "--openmetrics", "-"],
                                    "--emulate-out")]:
        result = precisionprobe(command, tmp_path, "--no-refresh", *extra, check=False)
        assert (result.returncode, result.stderr) == (
            1, f"python3 -m precisionprobe {command}: --no-refresh: reads the results database as it is, so it takes "
               f"no {option} (which the refresh it leaves out would use)\n")
    served = precisionprobe("serve", tmp_path, "--final", "--refresh-seconds", "60", "--port", "0", check=False)
    assert served.returncode == 1 and served.stderr.startswith(
        "python3 -m precisionprobe serve: --final: folds every sample window, as once a job has ended"), served.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_extension_path_that_is_no_library_or_no_file_is_said_so(tmp_path):
    """$PRECISIONPROBE_EXTENSION (analyze's load_file) naming a script or nothing: SQLite reports
    its second try, PATH.so, as a missing shared object, and the hint was to install libcurl."""
    import sqlite3
    from precisionprobe import ExtensionLoadError, _loadable
    script = tmp_path / "train.py"
    script.write_text("print('not a library')\n")
    conn = sqlite3.connect(":memory:")
    for path, said in [(script, f"loading {script} failed: it is not a shared library, so not a loadable SQLite "
                                "extension"),
                       (tmp_path / "none", f"there is no file {tmp_path / 'none'} or {tmp_path / 'none'}.so")]:
        try:
            _loadable.load_file(conn, str(path))
        except ExtensionLoadError as e:
            assert said in str(e) and "libcurl" not in str(e), str(e)
        else:
            raise AssertionError(f"{path} loaded")
    _loadable.load_file(conn, extension_path())  # the real one still loads
    assert conn.execute("SELECT pp_version()").fetchone()[0]


def test_a_path_whose_name_is_not_utf8_is_refused_before_anything_is_made(tmp_path):
    """A run folder named in another encoding (a Latin-1 byte): analyze was a UnicodeEncodeError
    traceback that left an empty database inside it, and --emulate a cryptic line and a copy."""
    run = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")
    os.mkdir(run)
    shutil.copy(ROOT / "tests" / "data" / "events" / "cpu.jsonl", run)
    message = "RUN_DIR: b'" + str(tmp_path) + "/caf\\xe9' is not a UTF-8 file name, which SQLite (and the events' " \
              "paths it stores) cannot hold: rename it (convmv, or mv to a UTF-8 name)\n"
    for command, extra in (("analyze", []), ("analyze", ["--emulate", "dlrm"]), ("export", ["--openmetrics", "-"])):
        result = precisionprobe(command, run, *extra, check=False)
        assert (result.returncode, result.stderr) == (1, f"python3 -m precisionprobe {command}: {message}")
    compared = precisionprobe("compare", run, run, check=False)
    assert compared.stderr == f"python3 -m precisionprobe compare: {message.replace('RUN_DIR', 'RUN_A')}"
    assert os.listdir(run) == ["cpu.jsonl"] and sorted(os.listdir(tmp_path)) == [os.path.basename(run)]
    # Named relatively from inside such a folder (or through a link into one): the same.
    inside = subprocess.run([sys.executable, "-m", "precisionprobe", "analyze", ".", "--emulate", "dlrm"], cwd=run,
                            capture_output=True, text=True, timeout=120, env=child_environment())
    assert (inside.returncode, inside.stderr) == (1, "python3 -m precisionprobe analyze: RUN_DIR: '.' (which is b'"
                                                     + str(tmp_path) + "/caf\\xe9') is not a UTF-8 file name, which "
                                                     "SQLite (and the events' paths it stores) cannot hold: rename it "
                                                     "(convmv, or mv to a UTF-8 name)\n")
    assert os.listdir(run) == ["cpu.jsonl"] and sorted(os.listdir(tmp_path)) == [os.path.basename(run)]


def test_a_results_database_named_like_an_event_file_inside_the_run_is_refused(tmp_path):
    """--db RUN_DIR/results.jsonl: the database was read back as events at the next refresh
    ("skipped 532 malformed lines")."""
    shutil.copy(ROOT / "tests" / "data" / "events" / "cpu.jsonl", tmp_path)
    result = precisionprobe("analyze", tmp_path, "--db", tmp_path / "results.jsonl", check=False)
    assert (result.returncode, result.stderr) == (
        1, f"python3 -m precisionprobe analyze: --db: '{tmp_path / 'results.jsonl'}' ends in .jsonl inside RUN_DIR "
           f"'{tmp_path}', where every *.jsonl file is read as layer events: give the results database another "
           "name (such as precisionprobe.db)\n")
    assert os.listdir(tmp_path) == ["cpu.jsonl"]
