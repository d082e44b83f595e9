"""What the three workloads share: common flags, device choice, and the timed training loop."""
import argparse
import collections.abc
import time

import torch


def common_arguments(description, batch_size):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--iterations", type=int, default=10, help="training steps per epoch")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto: cuda when available")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary line")
    parser.add_argument("--seconds", type=float, default=0,
                        help="stop after the step that passes this many seconds of training "
                             "(0: run every iteration of every epoch)")
    return parser


def setup(args):
    """Seeds, threads, device: call before building the model."""
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(args.device)


class CycledBatches(collections.abc.Sequence):
    """`length` batches that repeat `distinct` in order, without a list of `length` references:
    `--iterations 1000000000 --seconds 60` (run for a time, not a step count) costs nothing."""

    def __init__(self, distinct, length):
        if not distinct and length:
            raise ValueError("CycledBatches: no distinct batches to repeat")
        self._distinct, self._length = list(distinct), length

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("CycledBatches: index out of range")
        return self._distinct[index % len(self._distinct)]


def batch_loader(batches):
    """A DataLoader over ready-made batches (so epochs are real DataLoader restarts)."""
    return torch.utils.data.DataLoader(_Batches(batches), batch_size=None, shuffle=False)


class _Batches(torch.utils.data.Dataset):
    def __init__(self, batches):
        self._batches = batches

    def __len__(self):
        return len(self._batches)

    def __getitem__(self, index):
        return self._batches[index]


def train(step, loader, epochs, device, name, quiet=False, seconds=0):
    """Runs step(batch) -> loss tensor for every batch of every epoch; returns the losses.

    With seconds > 0 it stops after the first step that ends past that much training time, so a
    run takes about as long on a fast machine as on a slow one. Prints one line per step
    (unless quiet) and a summary line with the median step time.
    """
    losses, step_times = [], []
    deadline = time.perf_counter() + seconds if seconds > 0 else None
    for epoch in range(epochs):
        if deadline is not None and time.perf_counter() > deadline:
            break
        for index, batch in enumerate(loader):
            if deadline is not None and time.perf_counter() > deadline:
                break
            batch = _to_device(batch, device)
            started = time.perf_counter()
            loss = step(batch)
            value = loss.item()  # waits for the GPU: the step time includes its work
            step_times.append(time.perf_counter() - started)
            losses.append(value)
            if not quiet:
                print(f"{name}: epoch {epoch} step {index} loss {value:.6f} "
                      f"time {step_times[-1] * 1e3:.1f} ms", flush=True)
    median = sorted(step_times)[len(step_times) // 2] if step_times else 0.0
    print(f"{name}: {len(losses)} steps on {device}, median step {median * 1e3:.1f} ms, "
          f"last loss {losses[-1] if losses else float('nan'):.6f}", flush=True)
    return losses


def _to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(item, device) for item in batch)
    return batch
