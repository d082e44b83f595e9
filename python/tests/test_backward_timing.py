"""How backward intervals are closed (_backward_spans.py), on a fake clock and on real autograd."""
import time

import torch
from torch import nn

from conftest import read_records
from precisionprobe._backward_spans import BackwardSpan, BackwardTimeline


class FakeAutograd:
    """A clock that ticks by 10 per reading, and the end-of-pass callback list of the engine."""

    def __init__(self):
        self.now = 0
        self.end_of_pass = []
        self.emitted = []
        self.backward_passes = 0

    def stamp(self, span):
        self.now += 10
        return self.now

    def timeline(self):
        def on_backward():
            self.backward_passes += 1
        def put(event):
            info, forward, batch, epoch, t_start, t_end, device = event
            assert forward is False
            self.emitted.append((info, t_start, t_end))
        return BackwardTimeline(put, self.stamp, self.end_of_pass.append, on_backward)

    def finish_pass(self):
        callbacks = list(self.end_of_pass)
        self.end_of_pass.clear()
        for callback in callbacks:
            callback()


def span(timeline, name):
    return BackwardSpan(timeline, name, batch=0, epoch=0, device=None)


def test_next_layer_start_closes_the_open_span():
    fake = FakeAutograd()
    timeline = fake.timeline()
    head, body = span(timeline, "head"), span(timeline, "body")
    head.on_output_grad(None)   # t=10
    body.on_output_grad(None)   # t=20: head ends here
    fake.finish_pass()          # t=30: body ends with the pass
    assert fake.emitted == [("head", 10, 20), ("body", 20, 30)]


def test_input_grad_closes_the_span_before_untracked_work():
    fake = FakeAutograd()
    timeline = fake.timeline()
    head, body = span(timeline, "head"), span(timeline, "body")
    head.on_output_grad(None)   # t=10
    head.on_input_grad(None)    # t=20: a functional op starts, head is done
    body.on_output_grad(None)   # t=30
    body.on_input_grad(None)    # t=40
    head.on_input_grad(None)    # a late marker of a closed span changes nothing
    fake.finish_pass()
    assert fake.emitted == [("head", 10, 20), ("body", 30, 40)]


def test_one_end_of_pass_callback_and_one_backward_notice_per_pass():
    fake = FakeAutograd()
    timeline = fake.timeline()
    for _ in range(2):
        spans = [span(timeline, f"layer{i}") for i in range(3)]
        for s in spans:
            s.on_output_grad(None)
        assert len(fake.end_of_pass) == 1
        fake.finish_pass()
    assert fake.backward_passes == 2
    assert len(fake.emitted) == 6


class LayersAroundAFunctionalOp(nn.Module):
    """first -> tanh(x @ w) written as plain code -> second; records when the op's two backward
    nodes (TanhBackward, then MmBackward) finish."""

    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(64, 64), nn.Linear(64, 1)
        self.op_nodes_done = []

    def forward(self, x):
        product = self.first(x) @ torch.randn(64, 64)
        y = product.tanh()
        for node in (y.grad_fn, product.grad_fn):
            node.register_hook(lambda grad_inputs, grad_outputs: self.op_nodes_done.append(time.time_ns()))
        return self.second(y)


def test_backward_of_a_layer_ends_before_the_functional_op_below_it(tmp_path, fresh_probe):
    """The functional op's backward belongs to neither layer: it lies in the gap between them."""
    torch.manual_seed(0)
    model = LayersAroundAFunctionalOp()
    fresh_probe.attach(out=tmp_path)
    model(torch.randn(16, 64)).sum().backward()
    fresh_probe.detach()
    backward = {e["layer"]: e for e in read_records(tmp_path)[1] if not e["forward"]}
    tanh_done, mm_done = model.op_nodes_done
    assert backward["second"]["t_end_ns"] <= tanh_done <= mm_done <= backward["first"]["t_start_ns"]
