"""The probe: global module hooks that time every leaf-module call, forward and backward.

Hot path (runs on the training thread for every module call):
  pre-hook:  one dict lookup for the module's cached ModuleInfo, a per-thread stack push, a
             timestamp, and, when grad is on, the inputs' grad_fn (the backward end markers).
  post-hook: a timestamp, one tuple appended to the writer's deque, and for outputs that need
             grad one autograd node pre-hook for the backward start, plus end markers on input
             nodes that the previous layer did not make (see _backward_spans.py).
No dict building, JSON or I/O happens there: the writer thread formats and writes.

Containers (modules with children) are only tracked for nesting depth once a call of theirs has
called a module on its thread; until then they are timed as layers, and one whose children never
run as modules (nn.MultiheadAttention, a TorchScript module) stays one. A call made when nothing
else is on this thread's stack is a top-level call, which drives batch detection (_batch_tracker.py).
"""
import atexit
import os
import signal
import sys
import threading
import time
import weakref

from ._version import __version__
from . import _terminating_signals as terminating_signals
from ._backward_spans import BackwardSpan, BackwardTimeline
from ._batch_tracker import BatchTracker
from ._cuda_clock import CudaClock
from ._epoch_tracker import EpochTracker
from ._compact_format import CompactFormatter
from ._event_format import EventFormatter, chosen_event_format, job_header
from ._event_writer import HEADER, EventWriter
from ._gpu_identity import GpuDirectory
from ._job_identity import JobIdentity
from ._layer_names import LayerRegistry, class_name, is_parametrization

# Signals whose default action ends the process without running atexit (so without a flush).
FLUSHED_SIGNALS = (signal.SIGTERM,)


def default_out_dir(job_id):
    return os.path.join("runs", job_id)


def default_out_dir_problem(job_id):
    """Why runs/<job id> is no folder of the job's own inside runs/ (an absolute job id, '..'
    among its parts, '.'), or None: a job id is a name, and the default --out must not take it
    for a path to somewhere else."""
    path = os.path.normpath(default_out_dir(job_id))
    if os.path.isabs(job_id) or path == "runs" or not path.startswith("runs" + os.sep):
        return f"the default output directory runs/<job id> would be {path}, not a folder inside runs/"
    return None


def event_file_name(identity):
    # One name for both formats: directory scans, globs and tools find the files as before, and
    # the first line tells the formats apart.
    return f"events-{identity.host_name}-{identity.pid}.jsonl"


def _write_at_multiprocessing_exit(probe):
    sys.modules["multiprocessing.util"].Finalize(None, probe._close_at_exit, exitpriority=-100)


class Probe:
    """Installs the hooks (install()) and removes them, flushing every event (close())."""

    def __init__(self, job_id=None, out=None, clock="auto", flush_interval=0.2, command=None,
                 summary="always", stderr=None, sink=None, event_format=None):
        import torch
        self.event_format = chosen_event_format(event_format)  # "compact" or "json"
        self._torch = torch
        self._stderr = stderr
        self.identity = JobIdentity.from_environment(job_id)
        self.out_dir = os.path.abspath(out or default_out_dir(self.identity.job_id))
        self._command = list(command or getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
        self._start_time_ns = time.time_ns()
        self._summary = summary  # "always"; "auto": only when something was recorded; "never"
        self._flush_interval = flush_interval
        self._sink = sink  # replaces the writer's queue (bench/hook_overhead.py sends events over HTTP)
        use_cuda = clock == "cuda" or (clock == "auto" and torch.cuda.is_available())
        self._cuda_clock = CudaClock(torch) if use_cuda else None
        self._gpu_directory = GpuDirectory(torch) if use_cuda else None
        self._layers = LayerRegistry()
        self._batches = BatchTracker()
        self._epochs = EpochTracker()
        self._handles = []
        self._calls = 0  # module calls begun, on every thread
        self._installed = False
        self._broken = False
        self._signal_handlers = []  # signals this probe handles
        self._new_process_state()

    def _new_process_state(self):
        """Everything that is per process: the writer, its file, and per-thread state."""
        self._formatter = formatter = (CompactFormatter if self.event_format == "compact" else EventFormatter)(
            self.identity, self._gpu_lookup, self._mig_lookup)
        self._writer = EventWriter(self.out_dir, event_file_name(self.identity), formatter,
                                   cuda_clock=self._cuda_clock,
                                   flush_interval=self._flush_interval, stderr=self._stderr)
        self._emit = self._sink or self._writer.put
        self._writer_started = False
        self._header_written = False
        self._header_writing = False
        self._header_lock = threading.RLock()
        self._local = threading.local()
        if self._cuda_clock is None:
            time_ns = time.time_ns
            stamp_span = lambda span: time_ns()  # noqa: E731 - one call less per backward hook
        else:
            stamp_span = self._stamp_span
        self._timeline = BackwardTimeline(self._emit, stamp_span, self._queue_end_of_pass,
                                          self._batches.on_backward)

    def _gpu_lookup(self, device):
        return self._gpu_directory.lookup(device)

    def _mig_lookup(self, device):
        return self._gpu_directory.mig_record(device)

    # -- installing ---------------------------------------------------------------------------

    def install(self):
        torch = self._torch
        module_hooks = torch.nn.modules.module
        self._handles = [module_hooks.register_module_forward_pre_hook(self._pre_hook),
                         module_hooks.register_module_forward_hook(self._post_hook)]
        self._epochs.install(torch.utils.data.DataLoader)
        self._execution_engine = torch.autograd.Variable._execution_engine
        self._call_impl_code = torch.nn.Module._call_impl.__code__  # (calls the hooks)
        self._is_grad_enabled = torch.is_grad_enabled
        self._tensor_type = torch.Tensor
        self._time_ns = time.time_ns
        self._get_info = self._layers.get_by_id
        self._installed = True
        atexit.register(self._close_at_exit)
        self._write_at_exit_of_started_child()
        self._handle_terminating_signals()
        return self

    def _write_at_exit_of_started_child(self):
        """A child that multiprocessing started (spawn, forkserver) and that attaches itself
        (imports torch, or its __main__ does while the child is prepared): one that the
        forkserver forked ends with os._exit() after its finalizers, never running atexit. Its
        bootstrap clears the finalizers after preparing it, then runs the after-fork callbacks."""
        multiprocessing = sys.modules.get("multiprocessing")
        if multiprocessing is None:
            return
        import multiprocessing.util  # noqa: F401 - (a started child has imported it)
        if getattr(multiprocessing.process.current_process(), "_inheriting", False):
            multiprocessing.util.register_after_fork(self, _write_at_multiprocessing_exit)
        elif multiprocessing.parent_process() is not None:
            _write_at_multiprocessing_exit(self)

    def close(self):
        """Removes the hooks, writes every queued event, prints the summary; returns the counts."""
        if not self._installed:
            return self._writer.written, self._writer.dropped
        self._installed = False
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._epochs.uninstall()
        atexit.unregister(self._close_at_exit)
        self._restore_signal_handlers()
        written, dropped = self._writer.close() if self._writer_started else (0, 0)
        if self._summary == "always" or (self._summary == "auto" and (written or dropped)):
            where = self._writer.path if written else "no file written"
            print(f"precisionprobe: wrote {written} events, dropped {dropped} ({where})",
                  file=self._stderr or sys.stderr, flush=True)
        return written, dropped

    def _close_at_exit(self):
        self.close()

    def _handle_terminating_signals(self):
        """Where SIGTERM's action is the default, a handler that closes the probe first, then
        ends the process by the same signal, as it would have ended; the program does not see
        it (_terminating_signals)."""
        if threading.current_thread() is not threading.main_thread():
            return  # signal.signal() works on the main thread only
        self._signal_handlers = terminating_signals.install(self._on_terminating_signal, FLUSHED_SIGNALS)

    def _on_terminating_signal(self, signum, frame):
        terminating_signals.to_default(signum)  # a second signal ends the process at once
        try:
            self.close()
        except Exception:  # noqa: BLE001 - e.g. stderr busy in the interrupted code: still end
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signum,))
        os.kill(os.getpid(), signum)

    def _restore_signal_handlers(self):
        terminating_signals.uninstall(self._on_terminating_signal)
        self._signal_handlers = []

    def after_fork_in_child(self):
        """A forked child (DataLoader worker) gets its own pid, file and writer thread. A child
        that multiprocessing forked ends with os._exit() after its finalizers, never running
        atexit: a finalizer of its own writes what is queued (the last 0.2 s of events)."""
        self.identity = self.identity.for_current_process()
        self._new_process_state()
        if self._summary == "always":  # (a DataLoader worker that recorded nothing says nothing)
            self._summary = "auto"
        multiprocessing_util = sys.modules.get("multiprocessing.util")
        if multiprocessing_util is not None and self._installed:
            # (Its finalizers are cleared after this hook runs: registered from its own.)
            multiprocessing_util.register_after_fork(self, _write_at_multiprocessing_exit)

    # -- timestamps ---------------------------------------------------------------------------

    def _input_device(self, inputs, module, stack):
        """CUDA device index of the first tensor input, None for CPU (CUDA clock only). torch
        1.13's global hooks see positional inputs only: a layer called with keyword arguments
        alone (`self.proj(x=h)`) takes its first parameter's or buffer's device, else its
        caller's (its calls were timed on the CPU clock and recorded on no GPU)."""
        tensor_type = self._tensor_type
        for x in inputs:
            if isinstance(x, tensor_type):
                return x.get_device() if x.is_cuda else None
        for tensors in (module._parameters, module._buffers):
            for x in tensors.values():
                if isinstance(x, tensor_type):
                    return x.get_device() if x.is_cuda else None
        return stack[-1][3] if stack else None

    def _stamp(self, device):
        if device is None:
            return self._time_ns()
        return self._cuda_clock.stamp(device)

    def _stamp_span(self, span):
        return self._stamp(span.device)

    def _queue_end_of_pass(self, callback):
        self._execution_engine.queue_callback(callback)

    # -- hooks --------------------------------------------------------------------------------

    def _pre_hook(self, module, inputs):
        if self._broken:
            return
        try:
            local = self._local
            try:
                stack = local.stack
            except AttributeError:
                stack = local.stack = []
                local.chain_node = None
            info = self._get_info(id(module))
            if info is None and (is_parametrization(module) or (not stack and _called_by_parametrize())):
                self._layers.ignore_parametrization(module)
                return
            if info is not None and info.ignored:
                return  # (a parametrization's call: part of the call of the module it computes for)
            if not stack and any(type(x).__module__ == "torch.fx.proxy" for x in inputs):
                return  # torch.fx.symbolic_trace calls the model with proxies: no call runs
            self._calls = calls = self._calls + 1
            if stack and (info is None or info.called_at_top_level) and self._stack_is_stale(module):
                del stack[:]  # a model called at top level raised: this call starts anew
            if not stack:
                info = self._on_top_level_call(module, info)
            elif stack[-1][4] < 0 or (stack[-1][0] is not None and stack[-1][0].is_leaf):
                # Called by a module without children (one kept in a dict, or made in the
                # forward): part of that layer's call, as its own code is, with no event of its
                # own (two events, one inside the other, counted its time twice).
                stack.append((info, None, None, None, -1))
                return
            elif info is None:
                info = self._layers.describe(module, local.top_level_module())
            # Every call is timed, a module with children's too: whether it is a layer is known
            # at its end (no module call began meanwhile), and a module may call its children in
            # one call and not in the next (nn.TransformerEncoderLayer's fast path in eval).
            input_nodes = None
            if self._is_grad_enabled():
                tensor_type = self._tensor_type
                input_nodes = [x.grad_fn for x in inputs if isinstance(x, tensor_type)]
            device = None if self._cuda_clock is None else self._input_device(inputs, module, stack)
            stack.append((info, self._time_ns() if device is None else self._stamp(device),
                          input_nodes, device, calls))
        except Exception as error:  # noqa: BLE001 - the probe must never break training
            self._break(error)

    def _post_hook(self, module, inputs, output):
        if self._broken:
            return
        t_end = self._time_ns()
        local = self._local
        own = self._get_info(id(module))
        if own is not None and own.ignored:
            return
        try:
            stack = local.stack
            entry = stack.pop()
        except (AttributeError, IndexError):
            return  # hooks installed while this module was already running: no start to pair with
        try:
            if entry[0] is not own:
                entry = self._unwind(stack, module, entry)
                if entry is None:
                    return
            info, t_start, input_nodes, device, calls = entry
            if calls < 0 or (not info.is_leaf and calls != self._calls):
                return  # a module with children whose call called modules (they are the layers), or
                # one while modules ran on another thread (its own? not told apart: left out)
            if device is not None:
                t_end = self._stamp(device)
            batch, epoch = self._batches.batch, self._epochs.epoch
            self._emit((info, True, batch, epoch, t_start, t_end, device))
            if input_nodes is None:  # grad disabled: no backward
                return
            node = (output.grad_fn if isinstance(output, self._tensor_type)
                    else _first_grad_fn(output, self._tensor_type))
            if node is None or node in input_nodes:  # no graph, or input passed through unchanged
                local.chain_node = None
                return
            span = BackwardSpan(self._timeline, info, batch, epoch, device)
            node.register_prehook(span.on_output_grad)
            # End markers. An input made by the previous leaf layer needs none: that layer's start
            # hook sits on the same node and closes this span at the same moment.
            chain_node = local.chain_node
            for input_node in input_nodes:
                if input_node is not None and input_node is not chain_node:
                    input_node.register_prehook(span.on_input_grad)
            local.chain_node = node
        except Exception as error:  # noqa: BLE001
            self._break(error)

    def _unwind(self, stack, module, popped):
        """A forward that raised left entries behind: drop them down to this module's entry.

        Returns None (and leaves the stack as it was) when this module has no entry at all.
        """
        info = self._get_info(id(module))
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][0] is info:
                entry = stack[depth]
                del stack[depth:]
                return entry
        stack.append(popped)
        return None

    def _stack_is_stale(self, module):
        """Whether the call at the bottom of this thread's stack has ended: a model called at top
        level that raised (an out-of-memory retry, a bad batch skipped) runs no post-hook, and
        would leave every later call nested in it, the batch never counted again. Asked where a
        model once called at top level is called inside another call (a wrapped model, a model
        that calls itself, a block recomputed by activation checkpointing), or a module not seen
        yet is: the Python stack is walked up to the bottom call's frame, a few frames away while
        it runs; only a stale stack is walked to the end."""
        top = getattr(self._local, "top_level_module", lambda: None)()
        if top is None:
            return True
        # The hook's own call is the first _call_impl frame: the bottom call's is another one
        # where this call is of that module itself (a model that calls itself).
        needed = 2 if top is module else 1
        frame, calls, current = sys._getframe(1), 0, False
        while frame is not None:
            if frame.f_code is self._call_impl_code:
                current = True
                if frame.f_locals.get("self") is top:
                    calls += 1
                    if calls == needed:
                        return False
            frame = frame.f_back
        # Without a _call_impl frame, this PyTorch calls hooks elsewhere and nothing can be told:
        # the stack stays as it is.
        return current

    def _on_top_level_call(self, module, info):
        if info is None:
            info = self._layers.describe(module, module)
        else:
            self._layers.recheck_pending(module)
        info.called_at_top_level = True
        self._local.top_level_module = weakref.ref(module)
        self._local.chain_node = None  # do not keep last step's graph alive
        if not self._timeline.in_backward_pass():  # activation checkpointing re-runs forwards
            self._batches.on_top_level_call(module, self._is_grad_enabled())
        if not self._header_written:
            self._write_header_once(module)
        return info

    def _write_header_once(self, model):
        """The first top-level call queues the header; a top-level call on another thread waits
        for it (counting a large model's parameters takes a while), as its events must come
        after it. A module called on this thread while the header is made writes none."""
        with self._header_lock:
            if self._header_written or self._header_writing:
                return
            self._header_writing = True
            try:
                self._write_header(model)
            finally:
                self._header_writing = False
            self._header_written = True

    def _write_header(self, model):
        if not self._writer_started:
            self._writer.start()
            self._writer_started = True
        identity = self.identity.with_rank_now(self._torch)
        if identity != self.identity:  # no event is formatted before the header
            self.identity = identity
            self._formatter.use_identity(identity)
        parameters = self._parameter_count(model)
        header = job_header(self.identity, command=self._command,
                            torch_version=self._torch.__version__,
                            start_time_ns=self._start_time_ns, parameters=parameters,
                            model=class_name(model),
                            clock="cpu" if self._cuda_clock is None else "cuda",
                            package_version=__version__)
        self._emit((HEADER, header))

    def _parameter_count(self, model):
        """numel() summed, as an int also while torch.jit.trace runs the model: tracing makes
        sizes tensors and would record the count in the traced graph, so it is off meanwhile."""
        torch_c = self._torch._C
        tracing = getattr(torch_c, "_get_tracing_state", lambda: None)()
        if tracing is not None:
            torch_c._set_tracing_state(None)
        try:
            return sum(p.numel() for p in model.parameters())
        finally:
            if tracing is not None:
                torch_c._set_tracing_state(tracing)

    def _break(self, error):
        self._broken = True
        print(f"precisionprobe: warning: hooks disabled after an internal error: {error!r}",
              file=self._stderr or sys.stderr, flush=True)


_PARAMETRIZE_FILE = os.path.join("torch", "nn", "utils", "parametrize.py")


def _called_by_parametrize():
    """Whether a module not seen yet, called at top level, is called by
    torch.nn.utils.parametrize (registering a second parametrization on a tensor calls it so):
    part of a parametrization, no model. Asked once per such module."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code.co_filename.endswith(_PARAMETRIZE_FILE):
            return True
        frame = frame.f_back
    return False


def _first_grad_fn(output, tensor_type):
    """grad_fn of the module's (first) output tensor, looking into tuples, lists and dicts."""
    if isinstance(output, tensor_type):
        return output.grad_fn
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        for item in output:
            node = _first_grad_fn(item, tensor_type)
            if node is not None:
                return node
    return None
