"""The output directory is removed (rm -rf) while the job trains.

On Linux the writer's open file descriptor keeps working after its file is unlinked: writes
succeed into an inode that no path names and that vanishes at close. A client that only
watched for write errors would report every event as written while none can ever be read.

What the client does instead: before each write (every 0.2 s) and once more at exit it checks
that its path still names the file it holds open. When it does not, it prints a warning, counts
the events that went into the removed file as dropped (they cannot be read any more), recreates
the directory and starts a new file, job header first, and recording goes on.

The test makes the timing exact: the training script pauses after given steps, the test waits
until the writer has flushed every event of those steps, removes the directory, and lets
training continue. Removed twice, the run must end with exactly the events after the second
removal on disk, and the summary must count the rest as dropped.
"""
import io
import shutil
import subprocess
import sys
import textwrap

from conftest import wait_for
from precisionprobe._event_format import EventFormatter
from precisionprobe._event_writer import HEADER, EventWriter
from precisionprobe._job_identity import JobIdentity
from precisionprobe._layer_names import ModuleInfo
from test_faults_support import (DLRM_ARGS, EVENTS_PER_STEP, JOB_ID, PRODUCED, EventFile,
                                 assert_read_back_whole, count_lines, event_key,
                                 fault_environment, megabytes,
                                 only_events_file, reference, report, step_losses, summary,
                                 warnings_in)

# The small DLRM exactly as `python3 -m precisionprobe.workloads.dlrm` trains it (same seed and
# batches), except that it stops after the steps given in argv[1] until a line arrives on stdin.
PAUSING_DLRM = textwrap.dedent("""
    import sys
    from precisionprobe.workloads import dlrm
    from precisionprobe.workloads.training import batch_loader, setup, train

    pauses = [int(n) for n in sys.argv[1].split(",")]
    args = dlrm.parse_args(sys.argv[2:])
    device = setup(args)
    model, optimizer = dlrm.build(args, device)
    step = dlrm.training_step(model, optimizer)
    done = 0

    def step_with_pauses(batch):
        global done
        if done in pauses:
            print(f"paused after {done} steps", flush=True)
            sys.stdin.readline()
        done += 1
        return step(batch)

    train(step_with_pauses, batch_loader(dlrm.make_batches(args)), args.epochs, device, "dlrm")
""")
REMOVE_AFTER_STEPS = (200, 600)


def test_output_directory_removed_twice_mid_run_is_noticed_and_recording_goes_on(tmp_path):
    ref = reference()
    out = tmp_path / "events"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "precisionprobe", "run", "--out", str(out), "--job-id", JOB_ID,
         "--", sys.executable, "-c", PAUSING_DLRM, ",".join(map(str, REMOVE_AFTER_STEPS)),
         *DLRM_ARGS],
        env=fault_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    stdout_lines = []
    try:
        flushed_before = 0  # events that went into files removed earlier
        for steps in REMOVE_AFTER_STEPS:
            line = ""
            while not line.startswith("paused"):
                line = launcher.stdout.readline()
                assert line, "the training process ended before the pause"
                stdout_lines.append(line)
            assert line.strip() == f"paused after {steps} steps"
            # Every event of those steps is on disk (the writer flushes every 0.2 s), header too.
            in_file = steps * EVENTS_PER_STEP - flushed_before
            wait_for(lambda: [p for p in out.glob("*.jsonl") if count_lines(p) == 1 + in_file],
                     what=f"{in_file} events on disk")
            shutil.rmtree(out)
            flushed_before += in_file
            launcher.stdin.write("go\n")
            launcher.stdin.flush()
        stdout, stderr = launcher.communicate(timeout=300)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
    stdout = "".join(stdout_lines) + stdout

    # Training: finished, and the same loss at every step as without hooks.
    assert launcher.returncode == 0, stderr
    assert step_losses(stdout) == ref.losses
    # One warning per removal; the summary counts the removed files' events as dropped.
    warnings = warnings_in(stderr)
    assert len(warnings) == len(REMOVE_AFTER_STEPS), stderr
    removed = REMOVE_AFTER_STEPS[-1] * EVENTS_PER_STEP
    assert all("was removed" in w for w in warnings), warnings
    written, dropped, where = summary(stderr)
    assert (written, dropped) == (PRODUCED - removed, removed)
    # On disk: a new file, job header first, then exactly the events after the last removal.
    path = only_events_file(out)
    assert where == str(path)
    events = EventFile.read(path)
    assert events.torn == b""
    assert len(events.headers) == 1 and events.headers[0]["job_id"] == JOB_ID
    assert [event_key(e) for e in events.events] == ref.keys[removed:]
    assert sum(events.event_bytes) == ref.bytes_of(removed, PRODUCED, events.pid)
    assert_read_back_whole(path, events.events)

    report("output directory removed", faults_injected=len(REMOVE_AFTER_STEPS),
           survived="yes (exit 0, same losses)", events_produced=PRODUCED, written=written,
           dropped=f"{dropped} (in the removed files)", lost_uncounted=PRODUCED - written - dropped,
           torn_lines=0, bytes_kept=megabytes(events.size),
           bytes_lost=megabytes(ref.bytes_of(0, removed, events.pid)),
           reference_file=megabytes(ref.size))


def test_a_file_removed_after_the_last_write_is_counted_at_close(tmp_path):
    """Removed between the last flush and exit: nothing more to write, but the summary must not
    call those events written."""
    identity = JobIdentity("job", "host", "10.0.0.1", "pod", "ns", 0, 0, 1, 42, 2.0)
    stderr = io.StringIO()
    out = tmp_path / "events"
    writer = EventWriter(str(out), "events.jsonl", EventFormatter(identity), flush_interval=0.01,
                         stderr=stderr).start()
    writer.put((HEADER, '{"record":"job"}\n'))
    for i in range(10):
        writer.put((ModuleInfo("fc", "Linear", True), True, i, 0, 5, 9, None))
    wait_for(lambda: writer.written == 10, what="the first flush")
    shutil.rmtree(out)

    assert writer.close() == (0, 10)
    assert not out.exists()  # nothing to write: no new file
    assert stderr.getvalue().count("warning") == 1
    assert "events.jsonl was removed while being written; its 10 events are counted as dropped\n" \
        in stderr.getvalue()
