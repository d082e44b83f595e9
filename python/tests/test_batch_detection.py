"""Batch and epoch detection rules (_batch_tracker.py, _epoch_tracker.py) on typical loops."""
import torch

from precisionprobe._batch_tracker import BatchTracker
from precisionprobe._epoch_tracker import EpochTracker


class Module:  # stands for any nn.Module: only identity matters
    pass


model, loss_fn = Module(), Module()


def test_training_loop_one_batch_per_forward_backward():
    tracker = BatchTracker()
    seen = []
    for _ in range(3):
        tracker.on_top_level_call(model, grad_enabled=True)
        tracker.on_top_level_call(loss_fn, grad_enabled=True)  # same batch: no backward yet
        seen.append(tracker.batch)
        tracker.on_backward()
    assert seen == [0, 1, 2]


def test_inference_loop_one_batch_per_call_of_the_root():
    tracker = BatchTracker()
    assert [tracker.on_top_level_call(model, grad_enabled=False) for _ in range(3)] == [True] * 3
    assert tracker.batch == 2


def test_inference_with_grad_enabled_but_no_backward_ever():
    tracker = BatchTracker()
    for _ in range(3):
        tracker.on_top_level_call(model, grad_enabled=True)
    assert tracker.batch == 2


def test_validation_between_training_steps():
    tracker = BatchTracker()
    tracker.on_top_level_call(model, grad_enabled=True)   # train: batch 0
    tracker.on_backward()
    tracker.on_top_level_call(model, grad_enabled=False)  # validate: 1
    tracker.on_top_level_call(model, grad_enabled=False)  # validate: 2
    tracker.on_top_level_call(model, grad_enabled=True)   # train again: 3 (grad mode changed)
    tracker.on_top_level_call(loss_fn, grad_enabled=True)
    assert tracker.batch == 3


def test_gradient_accumulation_counts_micro_batches():
    tracker = BatchTracker()
    for _ in range(2):  # two micro-batches, then one optimizer step
        tracker.on_top_level_call(model, grad_enabled=True)
        tracker.on_backward()
    assert tracker.batch == 1


def test_known_miss_root_called_twice_before_the_first_backward():
    """Siamese step model(a), model(b), backward: the very first step counts as two batches."""
    tracker = BatchTracker()
    steps = []
    for _ in range(3):
        tracker.on_top_level_call(model, grad_enabled=True)
        tracker.on_top_level_call(model, grad_enabled=True)
        steps.append(tracker.batch)
        tracker.on_backward()
    assert steps == [1, 2, 3]


def test_epoch_advances_when_the_training_loader_restarts(monkeypatch):
    train_loader = torch.utils.data.DataLoader(list(range(4)), batch_size=2)
    validation_loader = torch.utils.data.DataLoader(list(range(2)), batch_size=2)
    tracker = EpochTracker()
    original_iter = torch.utils.data.DataLoader.__iter__
    tracker.install(torch.utils.data.DataLoader)
    try:
        epochs = []
        for _ in range(3):
            for _batch in train_loader:
                epochs.append(tracker.epoch)
            for _batch in validation_loader:  # does not count
                pass
    finally:
        tracker.uninstall()
    assert epochs == [0, 0, 1, 1, 2, 2]
    assert torch.utils.data.DataLoader.__iter__ is original_iter
