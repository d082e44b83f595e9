"""What the launcher sets up for the command: defaults, lazy attach, the shadowed sitecustomize."""
import collections
import re
import sys

import subprocess

from conftest import child_environment, read_records, run_launched

TRAIN_ONE_STEP = "import torch; m = torch.nn.Linear(2, 1); m(torch.ones(1, 2)).sum().backward()"


def test_torch_is_not_imported_for_processes_that_do_not_use_it(tmp_path):
    result = run_launched(tmp_path, [sys.executable, "-c",
                                     "import sys; print('torch' in sys.modules)"])
    assert result.stdout.strip() == "False"


def test_attaches_when_torch_is_imported_late(tmp_path):
    script = "import json, time; time.sleep(0.1); " + TRAIN_ONE_STEP
    result = run_launched(tmp_path, [sys.executable, "-c", script])
    assert result.returncode == 0, result.stderr
    _, events = read_records(tmp_path)
    assert [(e["layer"], e["forward"]) for e in events] == [("Linear", True), ("Linear", False)]


def test_sitecustomize_that_the_bootstrap_shadows_still_runs(tmp_path):
    user_site = tmp_path / "user-site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text(  # the launcher, a Python process too, runs it as well
        "import sys\nif sys.orig_argv[1:2] == ['-c']: print('user sitecustomize ran in the command')\n")
    env = child_environment()
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{user_site}"
    result = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--out", str(tmp_path / "out"),
                             "--", sys.executable, "-c", TRAIN_ONE_STEP],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("user sitecustomize ran in the command") == 1
    assert len(read_records(tmp_path / "out")[1]) == 2


def test_default_job_id_and_output_directory(tmp_path):
    env = child_environment()
    env.pop("PRECISIONPROBE_JOB_ID", None)
    result = subprocess.run([sys.executable, "-m", "precisionprobe", "run", "--",
                             sys.executable, "-c", TRAIN_ONE_STEP],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (job_dir,) = (tmp_path / "runs").iterdir()
    assert re.fullmatch(r"job-\d{8}-\d{6}-\d+", job_dir.name)
    headers, events = read_records(job_dir)
    assert {r["job_id"] for r in headers + events} == {job_dir.name}


def test_a_command_that_wrote_no_events_is_told_so(tmp_path):
    # Not a Python program, and a Python program that never ran a PyTorch module: the run ends
    # with the command's status and a warning saying why nothing was recorded.
    for command in (["true"], [sys.executable, "-c", "print('no model here')"]):
        result = run_launched(tmp_path / command[0].rsplit("/", 1)[-1], command)
        assert result.returncode == 0
        assert f"precisionprobe: warning: {command[0]} wrote no layer events to" in result.stderr
        assert "is it a Python program, with torch importable, that ran a model?" in result.stderr
    trained = run_launched(tmp_path / "trained", [sys.executable, "-c", TRAIN_ONE_STEP])
    assert trained.returncode == 0 and "wrote no layer events" not in trained.stderr


def test_children_that_multiprocessing_forks_write_every_event(tmp_path):
    # A multiprocessing child ends with os._exit() (no atexit): its last events are written
    # all the same, each child in a file of its own (Hogwild-style training).
    script = ("import torch, torch.multiprocessing as mp\n"
              "def train(m, steps):\n"
              "    for _ in range(steps): m(torch.ones(4, 2)).sum().backward()\n"
              "if __name__ == '__main__':\n"
              "    mp.set_start_method('fork')\n"
              "    m = torch.nn.Linear(2, 1)\n"
              "    children = [mp.Process(target=train, args=(m, 500)) for _ in range(2)]\n"
              "    [c.start() for c in children]; [c.join() for c in children]\n"
              "    assert all(c.exitcode == 0 for c in children)\n")
    (tmp_path / "hogwild.py").write_text(script)
    result = run_launched(tmp_path / "out", [sys.executable, str(tmp_path / "hogwild.py")])
    assert result.returncode == 0, result.stderr
    per_pid = collections.Counter(e["pid"] for e in read_records(tmp_path / "out")[1])
    assert sorted(per_pid.values()) == [1000, 1000], per_pid  # 500 steps, forward and backward


def test_children_that_a_forkserver_starts_write_every_event(tmp_path):
    """A forkserver's child imports the script again while it is prepared (attaching there) and
    ends with os._exit(): its events are written by a multiprocessing finalizer all the same,
    also those of a child that lives less than a write interval."""
    script = ("import torch, multiprocessing as mp\n"
              "def train(steps):\n"
              "    m = torch.nn.Linear(2, 1)\n"
              "    for _ in range(steps): m(torch.ones(4, 2))\n"
              "if __name__ == '__main__':\n"
              "    ctx = mp.get_context('forkserver')\n"
              "    children = [ctx.Process(target=train, args=(5,)) for _ in range(2)]\n"
              "    [c.start() for c in children]; [c.join() for c in children]\n"
              "    assert all(c.exitcode == 0 for c in children)\n")
    (tmp_path / "served.py").write_text(script)
    result = run_launched(tmp_path / "out", [sys.executable, str(tmp_path / "served.py")])
    assert result.returncode == 0, result.stderr
    per_pid = collections.Counter(e["pid"] for e in read_records(tmp_path / "out")[1])
    assert sorted(per_pid.values()) == [5, 5], (per_pid, result.stderr)


def test_dataloader_workers_that_record_nothing_say_nothing(tmp_path):
    # DataLoader workers are forked children too: without layer calls of their own they print no
    # summary line, however many epochs start them again; the training process prints its own.
    script = ("import torch\n"
              "from torch.utils.data import DataLoader, TensorDataset\n"
              "if __name__ == '__main__':\n"
              "    m = torch.nn.Linear(2, 1)\n"
              "    data = DataLoader(TensorDataset(torch.ones(8, 2)), batch_size=4, num_workers=2)\n"
              "    for epoch in range(2):\n"
              "        for (x,) in data: m(x).sum().backward()\n")
    (tmp_path / "loader.py").write_text(script)
    result = run_launched(tmp_path / "out", [sys.executable, str(tmp_path / "loader.py")])
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("precisionprobe: wrote ") == 1, result.stderr
    assert "precisionprobe: wrote 8 events" in result.stderr


def test_a_second_run_of_a_job_into_its_folder_is_told_so(tmp_path):
    """The same --job-id into the same --out joins the earlier run's events as one job: said
    before the command runs; another job id in that folder is not."""
    first = run_launched(tmp_path, [sys.executable, "-c", TRAIN_ONE_STEP])
    assert first.returncode == 0 and "already holds" not in first.stderr, first.stderr
    again = run_launched(tmp_path, [sys.executable, "-c", TRAIN_ONE_STEP])
    assert again.returncode == 0
    assert (f"precisionprobe: warning: {tmp_path} already holds 1 event file(s) of job test-job from an earlier "
            "run: this run's events join them as one job") in again.stderr, again.stderr
    other = run_launched(tmp_path, [sys.executable, "-c", TRAIN_ONE_STEP], job_id="other-job")
    assert "already holds" not in other.stderr


def test_a_run_of_the_job_in_a_subfolder_counts_too(tmp_path):
    """layer_events reads a folder with its subfolders, so a run of the job kept in a subfolder
    of --out joins this one too, and is counted."""
    first = run_launched(tmp_path / "monday", [sys.executable, "-c", TRAIN_ONE_STEP])
    assert first.returncode == 0, first.stderr
    again = run_launched(tmp_path, [sys.executable, "-c", TRAIN_ONE_STEP])
    assert (f"precisionprobe: warning: {tmp_path} already holds 1 event file(s) of job test-job from an earlier "
            "run") in again.stderr, again.stderr


def test_links_that_loop_in_the_output_folder_are_not_followed(tmp_path):
    """Links to directories are not followed, as layer_events does not follow them: two links
    back to the folder made the count of earlier files walk paths without end (and the command
    never ran); a run of the job behind a link is not counted (nor read)."""
    (tmp_path / "out").mkdir()
    for name in ("a", "b"):
        (tmp_path / "out" / name).symlink_to(".")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "events-earlier.jsonl").write_text('{"record": "job", "job_id": "test-job"}\n')
    (tmp_path / "out" / "linked").symlink_to(elsewhere)
    result = run_launched(tmp_path / "out", [sys.executable, "-c", TRAIN_ONE_STEP], timeout=60)
    assert result.returncode == 0, result.stderr
    assert "already holds" not in result.stderr, result.stderr


SPAWNED_RANKS = """
import sys, torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(rank, world, port):
    # No RANK or WORLD_SIZE in the environment: the process group alone knows them.
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.randn(2, 4)).sum().backward()
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(worker, args=(2, int(sys.argv[1])), nprocs=2)
"""


def test_ranks_that_torch_multiprocessing_spawns_are_recorded_as_the_process_group_has_them(tmp_path):
    """torch.multiprocessing.spawn sets no RANK: each process's rank and world size are read
    from its process group at its first model call, for its header and events."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "spawned.py").write_text(SPAWNED_RANKS)
    result = run_launched(tmp_path / "out", [sys.executable, str(tmp_path / "spawned.py"), str(port)])
    assert result.returncode == 0, result.stderr
    headers, events = read_records(tmp_path / "out")
    assert sorted((h["rank"], h["world_size"]) for h in headers) == [(0, 2), (1, 2)]
    ranks = {h["pid"]: h["rank"] for h in headers}
    assert events and all(e["rank"] == ranks[e["pid"]] and e["world_size"] == 2 for e in events)
