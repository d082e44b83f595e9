"""The small DLRM trained under `python3 -m precisionprobe run`: what a user gets on disk."""
import re
import socket
import sys

import pytest
import torch

from conftest import SMALL_DLRM, read_records, run_launched
from precisionprobe._cpu_quota import usable_cpu_count
from precisionprobe._event_format import EVENT_FIELDS
from precisionprobe.workloads import dlrm

ITERATIONS, EPOCHS = 3, 2
DLRM_ARGS = [*SMALL_DLRM, "--iterations", str(ITERATIONS), "--epochs", str(EPOCHS)]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dlrm-run")
    result = run_launched(out, [sys.executable, "-m", "precisionprobe.workloads.dlrm", *DLRM_ARGS],
                          job_id="dlrm-test")
    headers, events = read_records(out)
    return result, out, headers, events


@pytest.fixture(scope="module")
def model():
    """The same model the child built, to know which layers exist and how many parameters."""
    return dlrm.build(dlrm.parse_args(DLRM_ARGS), torch.device("cpu"))[0]


def leaf_names(model):
    return [name for name, m in model.named_modules() if not list(m.children())]


def by_batch(events, forward):
    batches = {}
    for e in events:
        if e["forward"] is forward:
            batches.setdefault(e["batch"], []).append(e)
    return batches


def test_training_finishes_and_summary_counts_every_event(run):
    result, _, _, events = run
    assert result.returncode == 0, result.stderr
    assert "dlrm: 6 steps" in result.stdout
    assert f"precisionprobe: wrote {len(events)} events, dropped 0" in result.stderr


def test_one_file_per_process_named_after_host_and_pid(run):
    _, out, headers, _ = run
    files = list(out.glob("*.jsonl"))
    assert [f.name for f in files] == [f"events-{socket.gethostname()}-{headers[0]['pid']}.jsonl"]


def test_every_leaf_layer_has_one_forward_and_one_backward_event_per_iteration(run, model):
    _, _, _, events = run
    leaves = leaf_names(model)
    assert "top_l.6" in leaves and "emb_l.3" in leaves and "loss_fn" in leaves
    forward, backward = by_batch(events, True), by_batch(events, False)
    assert sorted(forward) == sorted(backward) == list(range(ITERATIONS * EPOCHS))
    for batch in forward:
        # Forward in execution order; backward in exactly the reverse order (autograd runs the
        # nodes created last first, and each layer's nodes were created in one stretch).
        assert [e["layer"] for e in forward[batch]] == leaves
        assert [e["layer"] for e in backward[batch]] == leaves[::-1]


def test_containers_are_not_events(run, model):
    _, _, _, events = run
    containers = {name for name, m in model.named_modules() if list(m.children())}
    assert containers >= {"", "bot_l", "emb_l", "top_l"}
    assert not containers & {e["layer"] for e in events}


def test_layer_types_are_class_names(run):
    _, _, _, events = run
    types = {e["layer"]: e["layer_type"] for e in events}
    assert types["bot_l.0"] == "Linear" and types["bot_l.1"] == "ReLU"
    assert types["emb_l.7"] == "EmbeddingBag" and types["top_l.7"] == "Sigmoid"
    assert types["loss_fn"] == "MSELoss"


def test_intervals_are_positive_and_do_not_overlap(run):
    _, _, headers, events = run
    for e in events:
        assert e["t_start_ns"] < e["t_end_ns"], e
        assert e["t_start_ns"] >= headers[0]["start_time_ns"]
    # On one training thread events follow each other: forward layers, then backward layers,
    # then the next batch. Time no layer owns (the feature interaction) lies between them.
    timeline = sorted(events, key=lambda e: (e["batch"], not e["forward"]))
    for earlier, later in zip(timeline, timeline[1:]):
        assert earlier["t_end_ns"] <= later["t_start_ns"], (earlier, later)


def test_epochs_follow_dataloader_restarts(run):
    _, _, _, events = run
    epochs = {e["batch"]: e["epoch"] for e in events}
    assert epochs == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1}


def test_event_lines_have_exactly_the_documented_fields(run):
    _, _, headers, events = run
    for e in events:
        assert list(e) == list(EVENT_FIELDS)
        assert isinstance(e["forward"], bool)
        assert all(isinstance(e[k], int) and not isinstance(e[k], bool)
                   for k in ("rank", "local_rank", "world_size", "pid", "epoch", "batch",
                             "t_start_ns", "t_end_ns"))
    first = events[0]
    assert first["job_id"] == "dlrm-test"
    assert first["host_name"] == socket.gethostname()
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", first["ip"])
    assert (first["gpu_uuid"], first["gpu"]) == ("cpu", None)
    assert (first["rank"], first["local_rank"], first["world_size"]) == (0, 0, 1)
    assert first["pid"] == headers[0]["pid"]
    assert first["cpu_num"] == usable_cpu_count()


def test_header_follows_the_format_line_and_describes_the_job(run, model):
    _, out, headers, _ = run
    assert len(headers) == 1
    header = headers[0]
    format_line, first_record = next(out.glob("*.jsonl")).read_text().splitlines()[:2]
    assert format_line == "#precisionprobe-events compact 1"  # the default format
    assert '"record":"job"' in first_record
    assert "layer" not in header
    assert header["job_id"] == "dlrm-test"
    assert header["model"] == "DLRM"
    assert header["parameters"] == sum(p.numel() for p in model.parameters())
    assert "precisionprobe.workloads.dlrm" in " ".join(header["command"])
    assert header["torch_version"] == torch.__version__
    assert header["clock"] == "cpu"
