"""When nothing is recorded, or the output cannot be written, training must go on unharmed."""
import errno
import io
import json
import os
import sys

from conftest import SMALL_DLRM, run_launched, wait_for
from precisionprobe._event_writer import HEADER, EventWriter
from precisionprobe._event_format import EventFormatter
from precisionprobe._job_identity import JobIdentity
from precisionprobe._layer_names import ModuleInfo

DLRM_LEAVES = 21  # 4 bottom + 8 embedding + 8 top layers + loss_fn, with SMALL_DLRM


def test_a_job_that_calls_no_module_writes_no_file(tmp_path):
    out = tmp_path / "out"
    result = run_launched(out, [sys.executable, "-c", "import torch; print('no model here')"])
    assert result.returncode == 0, result.stderr
    assert "no model here" in result.stdout
    assert not out.exists()
    assert "precisionprobe: wrote 0 events, dropped 0 (no file written)" in result.stderr


def test_a_job_without_torch_is_only_launched(tmp_path):
    result = run_launched(tmp_path / "out", [sys.executable, "-c", "raise SystemExit(7)"])
    assert result.returncode == 7
    assert "events, dropped" not in result.stderr  # no probe attached, so no summary
    assert "raise SystemExit(7)" not in result.stderr
    # It failed: said, where the warning asked whether it was a Python program that ran a model.
    assert f"warning: {sys.executable} exited with status 7 and wrote no layer events to {tmp_path / 'out'} (its " \
           "own output above says why it failed)" in result.stderr, result.stderr


def test_unwritable_output_directory_warns_once_and_counts_every_dropped_event(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("a regular file where the output directory should go\n")
    iterations = 3
    result = run_launched(blocker / "events", [sys.executable, "-m", "precisionprobe.workloads.dlrm",
                                               *SMALL_DLRM, "--iterations", str(iterations)])
    assert result.returncode == 0, result.stderr
    assert "dlrm: 3 steps" in result.stdout
    # The launcher says so before the job runs (and the job runs all the same), the writer once.
    early = (f"precisionprobe: warning: layer events cannot be written to {blocker / 'events'}: {blocker} is a "
             "file, not a directory; the command runs unrecorded")
    assert result.stderr.splitlines()[1].startswith(early), result.stderr
    warnings = [line for line in result.stderr.splitlines()
                if "precisionprobe: warning" in line and "wrote no layer events" not in line and line != early
                and not line.startswith(early)]
    assert len(warnings) == 1
    assert str(blocker / "events") in warnings[0]
    # The launcher adds that nothing was written, pointing at the first warning.
    assert "wrote no layer events to " + str(blocker / "events") + " (see the first warning)" in result.stderr
    dropped = 2 * DLRM_LEAVES * iterations
    assert f"precisionprobe: wrote 0 events, dropped {dropped}" in result.stderr


def test_an_output_directory_that_is_a_named_pipe_is_called_one(tmp_path):
    """--out naming a named pipe (or /dev/null) is not "a file": the warning says what it is."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    result = run_launched(pipe, [sys.executable, "-c", "pass"])
    assert result.returncode == 0, result.stderr
    assert (f"precisionprobe: warning: layer events cannot be written to {pipe}: {pipe} is a named pipe, not a "
            "directory; the command runs unrecorded") in result.stderr, result.stderr


class _DiskThatFills:
    """Stands in for the os module inside event_writer: writes go through until `full` is set,
    then one write stores only a few bytes and the next fails with ENOSPC, as a full disk does."""

    def __init__(self):
        self.full = False
        self._partial_done = False

    def write(self, fd, data):
        if not self.full:
            return os.write(fd, data)
        if not self._partial_done:
            self._partial_done = True
            return os.write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(os, name)


def test_disk_full_keeps_every_line_written_before_it_whole(tmp_path, monkeypatch):
    import precisionprobe._event_writer as event_writer
    disk = _DiskThatFills()
    monkeypatch.setattr(event_writer, "os", disk)
    identity = JobIdentity("job", "host", "10.0.0.1", "pod", "ns", 0, 0, 1, 42, 2.0)
    stderr = io.StringIO()
    writer = EventWriter(str(tmp_path), "events.jsonl", EventFormatter(identity),
                         flush_interval=0.01, stderr=stderr).start()
    layer = ModuleInfo("top_l.0", "Linear", is_leaf=True)
    writer.put((HEADER, '{"record":"job"}\n'))
    for i in range(100):
        writer.put((layer, True, i, 0, 1000 + i, 2000 + i, None))
    wait_for(lambda: writer.written == 100, 10.0, "100 events written")

    disk.full = True
    for i in range(100, 250):
        writer.put((layer, True, i, 0, 1000 + i, 2000 + i, None))
    written, dropped = writer.close()

    assert (written, dropped) == (100, 150)
    text = (tmp_path / "events.jsonl").read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert [json.loads(line)["batch"] for line in lines[1:]] == list(range(100))
    assert stderr.getvalue().count("warning") == 1
    assert "No space left on device" in stderr.getvalue()


def test_an_error_while_formatting_counts_every_event_it_loses_as_dropped(tmp_path):
    """An event the formatter cannot take (a bug, not the disk) stops the writer with a warning;
    the events it had formatted into the chunk, and the one it failed on, count as dropped with
    those still queued: written + dropped is every event put (the chunk's were lost uncounted)."""
    class Breaks(EventFormatter):
        def line(self, *item):
            if item[2] == 7:
                raise ValueError("cannot format batch 7")
            return super().line(*item)

    identity = JobIdentity("job", "host", "10.0.0.1", "pod", "ns", 0, 0, 1, 42, 2.0)
    stderr = io.StringIO()
    writer = EventWriter(str(tmp_path), "events.jsonl", Breaks(identity), flush_interval=3600, stderr=stderr)
    layer = ModuleInfo("top_l.0", "Linear", is_leaf=True)
    writer.put((HEADER, '{"record":"job"}\n'))
    for i in range(20):
        writer.put((layer, True, i, 0, 1000 + i, 2000 + i, None))
    written, dropped = writer.start().close()
    assert (written, dropped) == (0, 20)
    assert "internal error while formatting events: ValueError('cannot format batch 7')" in stderr.getvalue()


def test_missing_directory_is_created_on_first_write(tmp_path):
    identity = JobIdentity("job", "host", "10.0.0.1", "pod", "ns", 0, 0, 1, 42, 2.0)
    out = tmp_path / "runs" / "job"
    writer = EventWriter(str(out), "events.jsonl", EventFormatter(identity)).start()
    writer.put((ModuleInfo("fc", "Linear", True), False, 0, 0, 5, 9, None))
    assert writer.close() == (1, 0)
    event = json.loads((out / "events.jsonl").read_text())
    assert (event["layer"], event["forward"], event["t_start_ns"], event["t_end_ns"]) == ("fc", False, 5, 9)
