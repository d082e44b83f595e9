"""The launcher returns the command's exit status and passes on signals sent to it."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import child_environment

WAITING_CHILD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        print("ready", flush=True)  # inside try: a Ctrl-C right after it is still caught
        for _ in range(300):  # 30 s at most
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(5)
    sys.exit(0)
""")


def start_launcher(tmp_path):
    launcher = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path), "--",
         sys.executable, "-c", WAITING_CHILD],
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert launcher.stdout.readline().strip() == "ready"
    return launcher


def test_ctrl_c_sent_to_the_launcher_reaches_the_command(tmp_path):
    launcher = start_launcher(tmp_path)
    launcher.send_signal(signal.SIGINT)
    stdout, _ = launcher.communicate(timeout=30)
    assert "interrupted" in stdout
    assert launcher.returncode == 5


def test_command_killed_by_a_signal_exits_128_plus_the_signal(tmp_path):
    launcher = start_launcher(tmp_path)
    launcher.send_signal(signal.SIGTERM)
    launcher.communicate(timeout=30)
    assert launcher.returncode == 128 + signal.SIGTERM


def test_a_schedulers_usr1_reaches_the_command_and_the_launcher_waits_for_it(tmp_path):
    # Slurm's --signal=USR1@90 (or B:USR1) asks the job to checkpoint before its time limit;
    # before, SIGUSR1 killed the launcher and left the command running without it.
    child = textwrap.dedent("""
        import signal, sys, time
        signal.signal(signal.SIGUSR1, lambda *_: sys.exit(7))
        print("ready", flush=True)
        time.sleep(30)
    """)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path), "--", sys.executable, "-c", child],
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert launcher.stdout.readline().strip() == "ready"
    launcher.send_signal(signal.SIGUSR1)
    launcher.communicate(timeout=30)
    assert launcher.returncode == 7  # the command's own status: it got the signal, and the launcher waited


def test_job_paused_and_resumed_runs_on_and_nothing_is_forwarded(tmp_path):
    # A scheduler (or Ctrl-Z and fg) stops and continues the whole job, for longer than any
    # poll interval of the launcher's wait: the command runs to its end and exits 0.
    child = "import time; print('ready', flush=True); time.sleep(3)"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path), "--",
         sys.executable, "-c", child],
        env=child_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    assert launcher.stdout.readline().strip() == "ready"
    for _ in range(4):
        os.killpg(launcher.pid, signal.SIGSTOP)
        time.sleep(0.8)
        os.killpg(launcher.pid, signal.SIGCONT)
        time.sleep(0.1)
    _, stderr = launcher.communicate(timeout=30)
    assert "Traceback" not in stderr
    assert launcher.returncode == 0


def test_missing_command_exits_127(tmp_path):
    result = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path),
                             "--", str(tmp_path / "no-such-program")],
                            env=child_environment(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 127
    assert "cannot run" in result.stderr


def test_an_event_format_from_the_environment_that_cannot_be_used_is_refused_before_the_job(tmp_path):
    # Before, the job ran for its whole length unrecorded, after one warning that it could not attach.
    marker = tmp_path / "ran"
    result = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path / "events"), "--",
                             "touch", str(marker)], env={**child_environment(), "PRECISIONPROBE_EVENT_FORMAT": "xml"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and not marker.exists()
    assert result.stderr.splitlines()[-1] == (
        "python3 -m precisionprobe run: error: environment variable PRECISIONPROBE_EVENT_FORMAT is 'xml', not one of "
        "compact, json (unset it for the default, compact)")


def test_run_needs_a_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--"],
                            env=child_environment(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].startswith("usage: python3 -m precisionprobe run [-h]")
    assert result.stderr.splitlines()[-1] == "python3 -m precisionprobe run: error: missing COMMAND (put it after --)"
    empty_id = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--job-id", " ", "--", "true"],
                              env=child_environment(), capture_output=True, text=True, timeout=60)
    assert empty_id.returncode == 2 and "--job-id: must not be empty or only white space" in empty_id.stderr
    # An empty --out was taken as not given, and a job id such as ../escape then wrote outside runs/.
    empty_out = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", "", "--job-id", "../escape",
                                "--", "true"], env=child_environment(), capture_output=True, text=True, timeout=60,
                               cwd=tmp_path)
    assert empty_out.returncode == 2, empty_out.stderr
    assert empty_out.stderr.splitlines()[-1] == ("python3 -m precisionprobe run: error: --out: must not be empty "
                                                 "(leave it out for runs/JOB_ID)")
    # The same rule for the environment variable the launcher falls back on: before, a job
    # named '  ' ran and every table showed it as a blank row.
    blank_env = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--", "true"],
                               env={**child_environment(), "PRECISIONPROBE_JOB_ID": "  "},
                               capture_output=True, text=True, timeout=60)
    assert blank_env.returncode == 2
    # The default --out is runs/<job id>: a job id is a name, not a path out of runs/.
    for job_id, where in (("../../elsewhere", "../elsewhere"), ("/tmp", "/tmp"), ("..", "."), (".", "runs")):
        escaping = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--job-id", job_id, "--", "true"],
                                  env=child_environment(), capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert (escaping.returncode, escaping.stderr.splitlines()[-1]) == (
            2, f"python3 -m precisionprobe run: error: --job-id: {job_id!r}: the default output directory runs/<job id> "
               f"would be {where}, not a folder inside runs/; give --out DIR")
    from_env = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--", "true"],
                              env={**child_environment(), "PRECISIONPROBE_JOB_ID": "../x"},
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert from_env.returncode == 2 and "run: error: environment variable PRECISIONPROBE_JOB_ID: '../x': " in from_env.stderr
    assert ("run: error: environment variable PRECISIONPROBE_JOB_ID holds only white space ('  '); give it a job id, or "
            "unset it for the default") in blank_env.stderr
