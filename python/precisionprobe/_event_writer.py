"""The background writer: the training thread appends tuples to a deque and never touches disk.

Every `flush_interval` seconds (and at close) the writer thread drains the deque, formats the
events (JSON Lines or the compact format: the formatter decides) and appends them to the process's file with whole-line writes: when a
write fails part-way (disk full), the file is truncated back to the end of the last whole line,
so every event written before the failure stays intact. The first failure (directory that cannot
be created, permission, disk full) prints ONE warning to stderr; from then on events are only
counted as dropped, and close() returns the counts for the summary line.

A file that is removed while open (rm -rf of the output directory) still accepts writes on
Linux, into an inode no path names. So before each write and at close the writer checks that
its path still names the file it holds; if not, it warns, counts the events in that file as
dropped (nobody can read them), and goes on in a new file at the same path, job header first.
A file cut short in place (logrotate's copytruncate) is appended to where it now ends: its next
write starts again with the job header (and the compact format's definitions), as a new file
does, so that the lines after the cut decode on their own.

Queue items are tuples: (ModuleInfo, forward, batch, epoch, t_start, t_end, device) for events,
where t_start/t_end are unix ns ints or, on CUDA, events that the resolver converts once the GPU
has passed them; (HEADER, text) for the job header line.
"""
import collections
import os
import sys
import threading
import time

from ._path_kind import kind_of

HEADER = object()  # first element of a header item
REANCHOR_INTERVAL_S = 10.0


class EventWriter:
    def __init__(self, out_dir, file_name, formatter, cuda_clock=None, flush_interval=0.2,
                 stderr=None):
        self.path = os.path.join(out_dir, file_name)
        self._out_dir = out_dir
        self._formatter = formatter
        self._cuda_clock = cuda_clock
        self._flush_interval = flush_interval
        self._stderr = stderr
        self._queue = collections.deque()
        self.put = self._queue.append  # the only thing the training thread calls
        self._unresolved = collections.deque()  # CUDA items waiting for the GPU, in order
        self._taken = 0  # events of the chunk being drained (see _drain_unsafe)
        self._anchored_at = {}  # device -> monotonic time of its last anchor
        self._fd = None
        self._size = 0
        self._in_file = 0  # events written to the file now open
        self._header = None  # the job header line, to start a new file with
        self._restart_with_header = False
        self._restart_in_place = False  # the file was cut short: its next write starts it again
        self._base_path = self.path
        self._failed = False
        self.written = 0
        self.dropped = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="precisionprobe-writer", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def close(self, timeout=30.0):
        """Stops the thread, writes what is left (waiting for the GPU if needed), closes the file."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._cuda_clock is not None:
            try:
                self._cuda_clock.synchronize()  # detach is off the training path: waiting is fine
            except Exception:  # noqa: BLE001 - a broken CUDA context must not hide the CPU events
                pass
        self._drain(final=True)
        if self._fd is not None:
            self._check_still_there(at_close=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        return self.written, self.dropped

    def _run(self):
        while not self._stop.wait(self._flush_interval):
            self._drain(final=False)

    def _drain(self, final):
        self._taken = 0
        try:
            self._drain_unsafe(final)
        except Exception as error:  # noqa: BLE001 - never let the writer die silently
            self._fail(f"internal error while formatting events: {error!r}")
            # What was taken off the queue and not written goes with what is still queued.
            self.dropped += self._taken + sum(item[0] is not HEADER
                                              for items in (self._unresolved, self._queue) for item in items)
            self._unresolved.clear()
            self._queue.clear()

    def _drain_unsafe(self, final):
        # self._taken: the events taken off the queues for the chunk (the one being formatted
        # too), until _write has counted them written or dropped.
        queue, unresolved = self._queue, self._unresolved
        chunk = []
        self._formatter.new_block()  # each write restates what its lines are relative to
        while queue:
            item = queue.popleft()
            if self._failed:
                self.dropped += item[0] is not HEADER
                continue
            if unresolved or (item[0] is not HEADER
                              and (type(item[4]) is not int or type(item[5]) is not int)):
                unresolved.append(item)
                continue
            self._taken += item[0] is not HEADER
            chunk.append(self._format(item))
            if len(chunk) >= 4096:
                self._write(chunk, self._taken)
                chunk, self._taken = [], 0
                self._formatter.new_block()
        while unresolved and not self._failed:
            item = unresolved[0]
            if item[0] is not HEADER and not self._resolve(item, final):
                break
            unresolved.popleft()
            if item[0] is HEADER:
                self._header = item[1]
                chunk.append(item[1])
            else:
                self._taken += 1
                chunk.append(self._format_resolved(item))
        if self._failed:
            self.dropped += sum(item[0] is not HEADER for item in unresolved)
            unresolved.clear()
        if chunk:
            self._write(chunk, self._taken)
            self._taken = 0

    def _format(self, item):
        if item[0] is HEADER:
            self._header = item[1]
            return item[1]
        return self._formatter.line(*item)

    def _resolve(self, item, final):
        """True when both CUDA timestamps of the item can be read now."""
        start, end, device = item[4], item[5], item[6]
        if type(start) is int and type(end) is int:  # a CPU event queued behind CUDA ones
            return True
        resolver = self._cuda_clock.resolver
        for stamp in (start, end):
            if type(stamp) is not int and not resolver.is_ready(stamp):
                if not final:
                    return False
        now = time.monotonic()
        if not resolver.has_anchor(device) or now - self._anchored_at[device] > REANCHOR_INTERVAL_S:
            self._cuda_clock.anchor(device)
            self._anchored_at[device] = now
        return True

    def _format_resolved(self, item):
        info, forward, batch, epoch, start, end, device = item
        resolver = self._cuda_clock.resolver
        if type(start) is not int:
            start = resolver.wall_ns(device, start)
        if type(end) is not int:
            end = resolver.wall_ns(device, end)
        return self._formatter.line(info, forward, batch, epoch, start, end, device)

    def _write(self, lines, event_count):
        if self._failed:
            self.dropped += event_count
            return
        data = "".join(lines).encode()
        try:
            if self._fd is not None:
                self._check_still_there(at_close=False)
            if self._fd is None:
                self._open()
                # A file after a removed one starts again with the header (and definitions).
                start = self._formatter.file_start(self._header, self._restart_with_header)
                self._restart_with_header = False
                data = start.encode() + data
            elif self._restart_in_place:
                data = self._formatter.file_start(self._header, True).encode() + data
                self._restart_in_place = False
            self._write_whole(data)
        except OSError as error:
            self.dropped += event_count
            if isinstance(error, FileExistsError) and os.path.exists(self._out_dir) and not os.path.isdir(self._out_dir):
                self._fail(f"cannot write layer events to {self.path}: {self._out_dir} is {kind_of(self._out_dir)}, "
                           "not a directory")
            else:
                self._fail(f"cannot write layer events to {self.path}: {error.strerror or error}")
            return
        self.written += event_count
        self._in_file += event_count

    def _check_still_there(self, at_close):
        """If the open file's path no longer names it (removed, replaced), lets it go: its events
        are counted as dropped and the next write starts a new file."""
        try:
            held = os.fstat(self._fd)
            at_path = os.stat(self.path)
            if held.st_nlink > 0 and (at_path.st_dev, at_path.st_ino) == (held.st_dev, held.st_ino):
                if held.st_size < self._size:
                    self._cut_in_place(held.st_size)
                return
        except (FileNotFoundError, NotADirectoryError):
            pass  # gone
        except OSError:
            return  # cannot tell (a transient error on a network filesystem): keep writing
        lost = self._in_file
        self.written -= lost
        self.dropped += lost
        os.close(self._fd)
        self._fd, self._size, self._in_file = None, 0, 0
        self._restart_with_header = self._header is not None
        removed, self.path = self.path, self._base_path
        goes_on = "" if at_close else "; training continues, recording goes on in a new file"
        print(f"precisionprobe: warning: {removed} was removed while being written; its {lost} "
              f"events are counted as dropped{goes_on}", file=self._stderr or sys.stderr,
              flush=True)

    def _cut_in_place(self, size):
        """The file is shorter than what was written to it: cut in place (logrotate's copytruncate
        copies it elsewhere, then truncates it). Appending goes on where it now ends, so the next
        write starts again as a new file does, with the header (and the compact format's
        definitions) that its event lines need."""
        self._size = size
        self._restart_in_place = self._header is not None

    def _open(self):
        os.makedirs(self._out_dir, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        base, ext = os.path.splitext(self.path)
        for attempt in range(100):  # a file from an earlier process with the same pid stays
            path = self.path if attempt == 0 else f"{base}.{attempt}{ext}"
            try:
                self._fd = os.open(path, flags, 0o644)
            except FileExistsError:
                continue
            self.path = path
            return
        raise FileExistsError(f"too many files named {self.path}*")

    def _write_whole(self, data):
        """Writes all of data or, on failure, cuts the file back to where it was."""
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                if written <= 0:
                    raise OSError(28, "No space left on device")
                view = view[written:]
        except OSError:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            raise
        self._size += len(data)

    def _fail(self, message):
        if not self._failed:
            self._failed = True
            stream = self._stderr or sys.stderr
            print(f"precisionprobe: warning: {message}; training continues, "
                  "further layer events are dropped", file=stream, flush=True)
