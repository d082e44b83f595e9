"""ResNeXt and GPT-2 under the launcher: every module call the model made is an event.

The expected counts come from the model itself: plain forward hooks count each leaf module's
calls in one training step run in this process, with the same flags as the launched job.
"""
import sys
from collections import Counter

import pytest
import torch

from conftest import read_records, run_launched
from precisionprobe.workloads import gpt2, resnext

ITERATIONS = 2
WORKLOADS = {
    "resnext": (resnext, ["--batch-size", "4", "--image-size", "16", "--cardinality", "4",
                          "--base-width", "2"]),
    "gpt2": (gpt2, ["--batch-size", "2", "--seq-len", "8", "--vocab", "64", "--embd", "32",
                    "--heads", "2", "--layers", "2"]),
}


def calls_per_step(workload, flags):
    """{layer: calls} for one training step, counted with ordinary forward hooks."""
    args = workload.argument_parser().parse_args([*flags, "--iterations", "1"])
    workload.setup(args)  # seeds, as in the launched job
    model, optimizer = workload.build(args, torch.device("cpu"))
    names = {module: name for name, module in model.named_modules() if not list(module.children())}
    calls = Counter()
    handles = [module.register_forward_hook(lambda m, i, o: calls.update([names[m]]))
               for module in names]
    workload.training_step(model, optimizer)(workload.make_batches(args)[0])
    for handle in handles:
        handle.remove()
    return calls


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_events_match_the_module_calls_of_each_step(tmp_path, name):
    workload, flags = WORKLOADS[name]
    result = run_launched(tmp_path, [sys.executable, "-m", f"precisionprobe.workloads.{name}",
                                     *flags, "--iterations", str(ITERATIONS), "--quiet"])
    assert result.returncode == 0, result.stderr
    headers, events = read_records(tmp_path)
    assert [h["model"] for h in headers] == [{"resnext": "ResNeXt", "gpt2": "GPT2"}[name]]
    expected = calls_per_step(workload, flags)
    for batch in range(ITERATIONS):
        for forward in (True, False):
            seen = Counter(e["layer"] for e in events if e["batch"] == batch and e["forward"] is forward)
            # Every leaf here has weights or an input that needs grad, so backward matches forward.
            assert seen == expected, (batch, forward)


def test_resnext_reuses_one_relu_module_three_times_per_block():
    calls = calls_per_step(*WORKLOADS["resnext"])
    assert calls["stages.0.0.relu"] == 3
    assert calls["stages.0.0.conv2"] == 1
