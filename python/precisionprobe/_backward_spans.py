"""Backward timing of a leaf module without full backward hooks.

torch 1.13 has no global backward pre-hook, and full backward hooks break modules that work in
place (`ReLU(inplace=True)`), so backward intervals come from autograd graph nodes instead:

* start: a pre-hook on the grad_fn of the module's output, registered by the forward hook. It runs
  when the output's gradient is complete, just before the module's first backward node executes.
* end, the earliest of:
  - a pre-hook on the grad_fn of each of the module's inputs (captured by the forward PRE-hook,
    before an in-place op rewrites the tensor's history): it runs when the next node outside the
    module is about to execute;
  - the start of the next tracked module's backward on the same thread;
  - the end of the backward pass (`queue_callback` of the autograd engine).

Why this is sound: the autograd engine runs ready nodes highest sequence number first, and a
module's nodes were created in one contiguous stretch of the forward pass, so once its first node
runs, its nodes run back to back on that device's thread. Anything after them marks the end, and
every marker above is "after them". The end can be late only by work that no module owns
(functional ops such as DLRM's feature interaction, or a residual add) that runs between a module
and the next marker when the module's input needs no grad or has other consumers still pending.

A module gets no backward event when its output needs no grad, when its output is its input
unchanged (`nn.Identity`), or when its output does not reach the loss.
"""
import threading


def _nothing():
    pass


class BackwardSpan:
    """One module call's backward interval; its bound methods are the autograd hooks."""
    __slots__ = ("info", "batch", "epoch", "device", "t_start", "timeline")

    def __init__(self, timeline, info, batch, epoch, device):
        self.timeline = timeline
        self.info = info
        self.batch = batch
        self.epoch = epoch
        self.device = device
        self.t_start = None

    def on_output_grad(self, grad_outputs):
        self.timeline.start(self)

    def on_input_grad(self, grad_outputs):
        self.timeline.inputs_ready(self)


class _ThreadState:
    __slots__ = ("open_span", "in_pass")

    def __init__(self):
        self.open_span = None
        self.in_pass = False


class BackwardTimeline:
    """Keeps at most one open span per autograd thread and closes it by the rules above.

    put(event tuple) receives every closed interval as (info, False, batch, epoch, t_start,
    t_end, device), the writer's queue format; stamp(span) returns "now" on the span's clock;
    queue_end_of_pass(fn) arranges for fn() to run when the backward pass ends; on_backward()
    tells the batch tracker that a backward pass is under way.
    """

    def __init__(self, put, stamp, queue_end_of_pass, on_backward):
        self._put = put
        self._stamp = stamp
        self._queue_end_of_pass = queue_end_of_pass
        self._on_backward = on_backward
        self._local = threading.local()

    def _state(self):
        try:
            return self._local.state
        except AttributeError:
            state = self._local.state = _ThreadState()
            return state

    def in_backward_pass(self):
        """True while a backward pass that reached a tracked layer runs on this thread.

        A pass that raised never runs its end-of-pass callback; asking the engine to queue a
        (no-op) callback tells: outside a pass it refuses, and the stale state is dropped.
        """
        state = self._state()
        if not state.in_pass:
            return False
        try:
            self._queue_end_of_pass(_nothing)
        except RuntimeError:
            state.in_pass = False
            state.open_span = None  # its end was never reached
            return False
        return True

    def _emit(self, span, t_start, t_end):
        self._put((span.info, False, span.batch, span.epoch, t_start, t_end, span.device))

    def start(self, span):
        state = self._state()
        now = self._stamp(span)
        previous = state.open_span
        if previous is not None:
            self._emit(previous, previous.t_start, now)
        if not state.in_pass:
            state.in_pass = True
            self._on_backward()
            try:
                self._queue_end_of_pass(lambda: self._end_pass(state))
            except RuntimeError:  # not inside a backward pass: the next start closes the span
                state.in_pass = False
        span.t_start = now
        state.open_span = span

    def inputs_ready(self, span):
        state = self._state()
        if state.open_span is span:
            self._emit(span, span.t_start, self._stamp(span))
            state.open_span = None

    def _end_pass(self, state):
        span = state.open_span
        if span is not None:
            self._emit(span, span.t_start, self._stamp(span))
            state.open_span = None
        state.in_pass = False
