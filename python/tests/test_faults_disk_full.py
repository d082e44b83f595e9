"""Disk full: the events file's filesystem fills up while the real DLRM trains.

Two ways to fill it, the same expectations:
  * tmpfs: a 2 MB tmpfs mounted as the output directory (needs root, as in the dev container;
    skipped with the reason where mount is not permitted): writes fail with ENOSPC;
  * file-size limit: RLIMIT_FSIZE of 2 MB set for the launcher and inherited by the training
    process. Python ignores SIGXFSZ at startup, so the write fails with EFBIG instead of the
    process being killed. Works without root.

2 MB holds the header and any single write of the client (at most 4096 lines, about 1.3 MB),
so the disk always fills part-way through the 13 MB that the run would write.

Expected: training is unharmed (exit 0, the loss of every step as without hooks); one warning;
the summary counts written + dropped = every event the model produced; the file holds exactly
the first `written` events, whole: the write that failed part-way is cut back, so not even a
torn last line is left, and layer_events reads every line without a warning.
"""
import errno
import os
import resource
import subprocess

import pytest

from conftest import run_launched
from test_faults_support import (DLRM_COMMAND, JOB_ID, PRODUCED, STEPS, EventFile,
                                 assert_read_back_whole, event_key, fault_environment, megabytes,
                                 only_events_file, reference, report, step_losses, summary,
                                 warnings_in)

LIMIT = 2 * 1024 * 1024


@pytest.fixture
def full_tmpfs(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={LIMIT}", "tmpfs",
                                  str(disk)], capture_output=True, text=True, timeout=30)
    except OSError as error:
        pytest.skip(f"cannot run mount ({error}); the RLIMIT_FSIZE case covers disk full")
    if mounted.returncode != 0:
        pytest.skip("mounting a size-limited tmpfs is not permitted here "
                    f"({mounted.stderr.strip()}); the RLIMIT_FSIZE case covers disk full")
    yield disk / "events", {}, os.strerror(errno.ENOSPC)
    if subprocess.run(["umount", str(disk)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.fixture
def file_size_limit(tmp_path):
    def limit_file_size():  # runs in the launcher before exec; its children inherit the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
    yield tmp_path / "events", {"preexec_fn": limit_file_size}, os.strerror(errno.EFBIG)


@pytest.mark.parametrize("disk", ["full_tmpfs", "file_size_limit"])
def test_disk_full_training_goes_on_and_every_written_event_stays_whole(disk, request):
    out, launch_options, error_text = request.getfixturevalue(disk)
    ref = reference()

    result = run_launched(out, DLRM_COMMAND, job_id=JOB_ID, env=fault_environment(),
                          **launch_options)

    # Training: finished, and the same loss at every step as without hooks.
    assert result.returncode == 0, result.stderr
    assert step_losses(result.stdout) == ref.losses
    assert f"dlrm: {STEPS} steps" in result.stdout
    # One warning naming the cause; the summary counts every event the model produced.
    warnings = warnings_in(result.stderr)
    assert len(warnings) == 1, result.stderr
    assert error_text in warnings[0] and "training continues" in warnings[0]
    written, dropped, where = summary(result.stderr)
    assert written + dropped == PRODUCED
    assert 0 < written < PRODUCED  # the disk did fill part-way through
    # On disk: the first `written` events of the reference, each a whole line, no torn tail.
    path = only_events_file(out)
    assert where == str(path)
    events = EventFile.read(path)
    assert events.torn == b""
    assert len(events.headers) == 1
    assert [event_key(e) for e in events.events] == ref.keys[:written]
    assert events.size <= LIMIT
    assert sum(events.event_bytes) == ref.bytes_of(0, written, events.pid)
    assert_read_back_whole(path, events.events)

    lost_bytes = ref.bytes_of(written, PRODUCED, events.pid)
    report(f"disk full ({disk})", faults_injected=1, survived="yes (exit 0, same losses)",
           events_produced=PRODUCED, written=written, dropped=dropped,
           lost_uncounted=PRODUCED - written - dropped, torn_lines=0,
           bytes_kept=megabytes(events.size), bytes_lost=megabytes(lost_bytes),
           reference_file=megabytes(ref.size))
