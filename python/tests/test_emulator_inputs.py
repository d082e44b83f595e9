"""What the emulator is given that it cannot use: a profile path that is no profile file, a run
whose calls span months, an --events, --gpu-uuid, --mirror or --out that cannot be. Each is one
line naming the option and what was wrong, before anything is read without bound, allocated or
written; never a traceback, a hang or a run that follows nothing and says it succeeded."""
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import child_environment, run_cli
from precisionprobe.analysis import emulate
from precisionprobe.emulator import __main__ as emulator_cli
from precisionprobe.emulator.offline import MAX_SECONDS
from precisionprobe.emulator.profile import MAX_PROFILE_BYTES, Profile, ProfileError

T0 = 1_714_000_000 * 10**9
DAY_NS = 86_400 * 10**9


def emulator(*argv, timeout=60):
    """`python3 -m precisionprobe.emulator ARGV...`, its output captured."""
    return subprocess.run([sys.executable, "-m", "precisionprobe.emulator", *map(str, argv)],
                          env=child_environment(), capture_output=True, text=True, timeout=timeout)


def refused(result, message):
    """Whether a command failed with status 2 and one error line holding message."""
    lines = result.stderr.strip().splitlines()
    return result.returncode == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def write_run(run, *calls):
    """A run folder with one JSON Lines event file of calls (layer, t_start_ns, t_end_ns) on GPU-1."""
    run.mkdir()
    header = {"record": "job", "job_id": "j", "host_name": "node", "ip": None, "pod": None, "namespace": None,
              "rank": 0, "local_rank": 0, "world_size": 1, "pid": 7, "cpu_num": 1.0}
    lines = [json.dumps(header)]
    for layer, start, end in calls:
        lines.append(json.dumps({k: v for k, v in header.items() if k != "record"} | {
            "gpu_uuid": "GPU-1", "gpu": 0, "epoch": 0, "batch": 0, "layer": layer, "layer_type": "Linear",
            "forward": True, "t_start_ns": start, "t_end_ns": end}))
    (run / "events-node-1.jsonl").write_text("\n".join(lines) + "\n")
    return run / "events-node-1.jsonl"


def test_a_profile_path_must_be_a_small_regular_file_of_utf8_json(tmp_path):
    """A device is never read to its end, a named pipe never waited on, and a file that is not
    UTF-8 is named: each refused by Profile.named, as analyze --emulate and the emulator load it."""
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "latin1.json").write_bytes(b'{"description": "caf\xe9"}')
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate(MAX_PROFILE_BYTES + 1)  # (sparse: no disk used)
    for path, message in (("/dev/zero", "cannot read profile /dev/zero: it is a character device, not a file"),
                          (tmp_path / "fifo.json", f"cannot read profile {tmp_path / 'fifo.json'}: it is a named "
                                                   "pipe, not a file"),
                          (tmp_path, f"cannot read profile {tmp_path}: it is a directory, not a file"),
                          (tmp_path / "latin1.json", f"{tmp_path / 'latin1.json'}: not UTF-8 text (byte 0xe9 at "
                                                     "offset 20)"),
                          (tmp_path / "huge.json", f"cannot read profile {tmp_path / 'huge.json'}: larger than "
                                                   "16 MiB, which no profile is")):
        with pytest.raises(ProfileError) as error:
            Profile.named(str(path))
        assert str(error.value) == message
    assert Profile.named("dlrm").types  # the shipped profiles still load


def test_analyze_and_the_emulator_refuse_a_profile_that_is_a_device_or_a_pipe(tmp_path):
    """`analyze --emulate /dev/zero` was a MemoryError traceback and a named pipe a hang."""
    write_run(tmp_path / "run", ("fc", T0, T0 + 1000))
    os.mkfifo(tmp_path / "fifo.json")
    for profile, kind in (("/dev/zero", "a character device"), (tmp_path / "fifo.json", "a named pipe")):
        result = run_cli("analyze", tmp_path / "run", "--emulate", profile, check=False, timeout=60)
        assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
        assert f"--emulate: cannot read profile {profile}: it is {kind}, not a file" in result.stderr
        assert refused(emulator("offline", "--out", tmp_path / "o", "--profile", profile),
                       f"error: cannot read profile {profile}: it is {kind}, not a file")
    assert not (tmp_path / "o").exists()


def test_a_profile_of_the_wrong_shape_is_named_by_its_key_before_anything_is_written(tmp_path):
    """A list where an object of names belongs, a model name that is no string, memory that is
    infinite or past any GPU's: each was a traceback (or a NaN error, or overflow warnings) after
    the replay had begun writing its folder; now one line naming the key, and no folder."""
    write_run(tmp_path / "run", ("fc", T0, T0 + 1000))
    dlrm = Profile.named("dlrm").data
    infinite = json.loads(json.dumps(dlrm))
    infinite["idle"]["DCGM_FI_DEV_FB_USED"] = float("inf")
    for name, data, message in (
            ("types", dict(dlrm, layer_types=[1, 2]), '"layer_types": expected an object of names, not list [1, 2]'),
            ("layers", dict(dlrm, layers=[]), '"layers": expected an object of names, not list []'),
            ("model", dict(dlrm, model_name=12), '"model_name": expected a string, not int 12'),
            ("line", dict(dlrm, model_name="V100\nbad"), '"model_name": "V100\\nbad" is not a name of one printable '
                                                         'line (it is the modelName label of every series)'),
            ("infinite", infinite, "idle.DCGM_FI_DEV_FB_USED: inf outside [0, 16777216]")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        with pytest.raises(ProfileError) as error:
            Profile.named(str(path))
        assert str(error.value).endswith(message), str(error.value)
        result = run_cli("analyze", tmp_path / "run", "--emulate", path, "--emulate-out", tmp_path / name,
                         check=False, timeout=60)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.strip().endswith(message), result.stderr
        assert not (tmp_path / name).exists()


def test_a_profile_name_the_package_does_not_ship_is_named_with_those_it_does(tmp_path):
    """A typo (`--profile dlrmm`) said only that the package's dlrmm.json could not be read."""
    assert refused(emulator("offline", "--out", tmp_path / "o", "--profile", "dlrmm"),
                   "error: no profile 'dlrmm' (shipped: dlrm, gpt2, resnext; or a path to a profile file)")
    assert not (tmp_path / "o").exists()


def test_a_busy_port_is_named_and_leaves_no_mirror_behind(tmp_path):
    """Another exporter (or a second emulator) on --port: the error said only 'Address already in
    use', and the mirror folder was made all the same."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = emulator("live", "--events", tmp_path / "events", "--port", port, "--profile", "dlrm")
    assert refused(result, f"error: --port {port}: cannot listen on 127.0.0.1:{port}: Address already in use "
                           "(another exporter or emulator listens there: stop it, or give another --port)")
    assert not (tmp_path / "events.emulated").exists()


def test_a_replay_spanning_more_than_a_week_is_refused_before_it_allocates(tmp_path):
    """One call of 116 days (a wrong time) made analyze --emulate allocate gigabytes and die
    of a numpy MemoryError; it is refused, naming the call and its file, with the emulator's
    own limit (its --minutes at most a week). So are calls of one GPU months apart."""
    events = write_run(tmp_path / "run", ("fc", T0, T0 + 10**16))
    with pytest.raises(ValueError) as error:
        emulate.replay(tmp_path / "run", tmp_path / "out", "dlrm")
    assert str(error.value) == (f"one call on GPU GPU-1 spans 115.7 days, more than the emulator replays (7 days): "
                                f"layer 'fc' of job 'j' in '{events}' (t_start_ns {T0}, t_end_ns {T0 + 10**16})")
    assert not (tmp_path / "out").exists()

    write_run(tmp_path / "apart", ("fc", T0, T0 + 1000), ("relu", T0 + 30 * DAY_NS, T0 + 30 * DAY_NS + 1000))
    with pytest.raises(ValueError, match=r"^the calls on GPU GPU-1 span 30\.0 days, more than the emulator "
                                         r"replays \(7 days\): from layer 'fc' of job 'j' in '.*' to layer 'relu'"):
        emulate.replay(tmp_path / "apart", tmp_path / "out", "dlrm")

    result = run_cli("analyze", tmp_path / "run", "--emulate", "dlrm", check=False, timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "--emulate: one call on GPU GPU-1 spans 115.7 days" in result.stderr
    assert MAX_SECONDS == emulator_cli.MAX_MINUTES * 60  # one limit, the emulator's


def test_calls_just_inside_a_week_pass_the_check(tmp_path):
    """The limit is the emulator's own: calls a second short of a week apart pass (the check
    alone: replaying a week here would take minutes)."""
    events = [{"t_start_ns": T0, "t_end_ns": T0 + 1000, "layer": "fc", "job_id": "j"},
              {"t_start_ns": T0 + MAX_SECONDS * 10**9 - 10**9, "t_end_ns": T0 + MAX_SECONDS * 10**9,
               "layer": "fc", "job_id": "j"}]
    emulate._check_span(("gpu", "GPU-1"), events, [(tmp_path / "f.jsonl", [], events)])


def test_live_refuses_an_events_path_that_can_hold_no_event_files(tmp_path):
    """--events is the folder the job writes: a file (the training script, say), a device, or a
    path below a file ran, followed 0 events and exited 0 beside a new FILE.emulated folder."""
    script = tmp_path / "train.py"
    script.write_text("print('training')\n")
    for events, message in ((script, f"error: --events: '{script}' is a file, not a folder"),
                            ("/dev/null", "error: --events: '/dev/null' is a character device, not a folder"),
                            (script / "out", f"error: --events: '{script / 'out'}' cannot appear: '{script}' is a "
                                             "file, not a folder")):
        assert refused(emulator("live", "--events", events, "--profile", "dlrm", "--port", "0", "--duration", "1"),
                       message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_live_follows_an_events_folder_made_later_and_fails_if_none_appeared(tmp_path):
    """The emulator may start before the job that makes --events; if the folder never appears,
    it says so and exits 1, leaving no mirror of nothing behind."""
    result = emulator("live", "--events", tmp_path / "run", "--profile", "dlrm", "--port", "0", "--duration", "0.3")
    assert f"following {tmp_path / 'run'} (not there yet)" in result.stdout
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(
        f"error: --events: '{tmp_path / 'run'}' never appeared: no job wrote there (give the folder the job "
        "writes: --out of precisionprobe run)")
    assert list(tmp_path.iterdir()) == []


def test_live_refuses_an_empty_or_repeated_gpu_uuid(tmp_path):
    """An empty --gpu-uuid was served as the GPU's UUID, which no event can name."""
    (tmp_path / "run").mkdir()
    live = ("live", "--events", tmp_path / "run", "--profile", "dlrm", "--port", "0", "--duration", "1")
    assert refused(emulator(*live, "--gpu-uuid", ""),
                   "error: --gpu-uuid: value 1 is empty: give the emulated GPU's UUID")
    assert refused(emulator(*live, "--gpus", "3", "--gpu-uuid", "GPU-a", "--gpu-uuid", "GPU-b", "--gpu-uuid", "GPU-a"),
                   "error: --gpu-uuid: 'GPU-a' is given twice: each emulated GPU needs its own")


def test_a_mirror_or_out_folder_that_cannot_be_made_is_named_by_its_option(tmp_path):
    """`[Errno 20] Not a directory: ...` named no option."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    (tmp_path / "run").mkdir()
    assert refused(emulator("live", "--events", tmp_path / "run", "--profile", "dlrm", "--port", "0",
                            "--duration", "1", "--mirror", a_file / "mirror"),
                   f"error: --mirror: cannot write '{a_file / 'mirror'}': Not a directory")
    assert refused(emulator("offline", "--out", a_file / "out", "--minutes", "0.05"),
                   f"error: --out: cannot write '{a_file / 'out'}")
