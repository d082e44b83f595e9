"""In-place modules (ReLU(inplace=True)) train under the probe exactly as without it.

Full backward hooks would raise here ("Output 0 of BackwardHookFunctionBackward is a view and is
being modified inplace"); the probe's autograd-node hooks leave tensors untouched.
"""
import torch
from torch import nn

from conftest import read_records


def inplace_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(inplace=True), nn.Linear(16, 16),
                         nn.ReLU(inplace=True), nn.Linear(16, 1))


def train(model, steps=5):
    torch.manual_seed(123)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(32, 6), torch.randn(32, 1)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_same_losses_with_and_without_hooks(tmp_path, fresh_probe):
    without_hooks = train(inplace_model())
    fresh_probe.attach(out=tmp_path)
    with_hooks = train(inplace_model())
    fresh_probe.detach()
    assert with_hooks == without_hooks
    assert without_hooks[-1] < without_hooks[0]  # it did train


def test_inplace_relu_backward_is_timed_between_its_neighbours(tmp_path, fresh_probe):
    fresh_probe.attach(out=tmp_path)
    train(inplace_model(), steps=2)
    fresh_probe.detach()
    backward = [e for e in read_records(tmp_path)[1] if not e["forward"] and e["batch"] == 1]
    assert [e["layer"] for e in backward] == ["Sequential.4", "Sequential.3", "Sequential.2", "Sequential.1", "Sequential.0"]
    for later, earlier in zip(backward, backward[1:]):
        assert later["t_start_ns"] < later["t_end_ns"] <= earlier["t_start_ns"]
