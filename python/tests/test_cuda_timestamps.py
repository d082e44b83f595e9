"""CUDA-event timestamps resolved to unix ns later, tested with fake events (no GPU needed)."""
import io
import json
import time

from conftest import wait_for
from precisionprobe._cuda_clock import CudaTimestampResolver
from precisionprobe._event_format import EventFormatter
from precisionprobe._event_writer import HEADER, EventWriter
from precisionprobe._job_identity import JobIdentity
from precisionprobe._layer_names import ModuleInfo

WALL = 1_700_000_000_000_000_000


class FakeGpu:
    """A device whose timer reads `now_ms`; events complete when `completed_ms` passes them."""

    def __init__(self):
        self.now_ms = 0.0
        self.completed_ms = 0.0

    def event_at(self, ms):
        return FakeEvent(self, ms)


class FakeEvent:
    def __init__(self, gpu, ms):
        self.gpu, self.ms = gpu, ms

    def query(self):
        return self.ms <= self.gpu.completed_ms

    def elapsed_time(self, end):
        assert self.query() and end.query(), "CUDA refuses elapsed_time on pending events"
        return end.ms - self.ms


def test_event_time_is_anchor_wall_time_plus_gpu_elapsed_time():
    gpu = FakeGpu()
    gpu.completed_ms = 200.0
    resolver = CudaTimestampResolver()
    resolver.set_anchor(0, gpu.event_at(100.0), WALL)
    assert resolver.wall_ns(0, gpu.event_at(101.5)) == WALL + 1_500_000
    assert resolver.wall_ns(0, gpu.event_at(99.999)) == WALL - 1_000  # before the anchor


def test_pending_event_is_not_ready():
    gpu = FakeGpu()
    resolver = CudaTimestampResolver()
    assert not resolver.is_ready(gpu.event_at(5.0))
    gpu.completed_ms = 5.0
    assert resolver.is_ready(gpu.event_at(5.0))


class FakeCudaClock:
    """What EventWriter needs of CudaClock, on a FakeGpu."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.resolver = CudaTimestampResolver()
        self.anchors = 0

    def anchor(self, device):
        self.anchors += 1
        self.resolver.set_anchor(device, self.gpu.event_at(0.0), WALL)

    def synchronize(self):
        self.gpu.completed_ms = float("inf")


def make_writer(tmp_path, clock):
    identity = JobIdentity("job", "host", "10.0.0.1", "pod", "ns", 0, 0, 1, 42, 8.0)
    formatter = EventFormatter(identity, gpu_lookup=lambda device: (f"GPU-fake-{device}", device + 4))
    return EventWriter(str(tmp_path), "events.jsonl", formatter, cuda_clock=clock,
                       flush_interval=0.01, stderr=io.StringIO())


def test_writer_waits_for_the_gpu_and_keeps_queue_order(tmp_path):
    gpu = FakeGpu()
    clock = FakeCudaClock(gpu)
    writer = make_writer(tmp_path, clock)
    layer = ModuleInfo("emb_l.0", "EmbeddingBag", True)
    writer.put((HEADER, '{"record":"job"}\n'))
    writer.put((layer, True, 0, 0, gpu.event_at(1.0), gpu.event_at(2.0), 0))
    writer.put((layer, False, 0, 0, gpu.event_at(3.0), gpu.event_at(4.5), 0))
    writer.put((layer, True, 1, 0, 10, 20, None))  # a CPU event queued behind them waits too

    gpu.completed_ms = 2.0
    writer.start()
    wait_for(lambda: writer.written == 1, 10.0, "the first write")
    time.sleep(0.05)  # several more flushes: the second event is still running on the GPU
    assert writer.written == 1
    assert len((tmp_path / "events.jsonl").read_text().splitlines()) == 2  # header + 1 event

    written, dropped = writer.close()  # close synchronizes, then resolves the rest
    assert (written, dropped) == (3, 0)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()[1:]]
    assert [(e["t_start_ns"] - WALL, e["t_end_ns"] - WALL) for e in events[:2]] == [
        (1_000_000, 2_000_000), (3_000_000, 4_500_000)]
    assert [(e["gpu_uuid"], e["gpu"]) for e in events] == [("GPU-fake-0", 4), ("GPU-fake-0", 4), ("cpu", None)]
    assert (events[2]["t_start_ns"], events[2]["t_end_ns"]) == (10, 20)
    assert clock.anchors == 1


class FakeCudaTensor:
    """What the probe reads of a tensor to find its device: on CUDA device `device`."""

    def __init__(self, device):
        self.device = device
        self.is_cuda = True

    def get_device(self):
        return self.device


def test_a_layer_called_with_keyword_arguments_alone_is_timed_on_its_device():
    # torch 1.13's global hooks see positional inputs only: `self.proj(x=h)` showed no tensor,
    # so on a GPU its calls were timed on the CPU clock and recorded on no GPU. Its parameters'
    # device is taken, else its caller's.
    from types import SimpleNamespace
    from precisionprobe._probe import Probe
    probe = SimpleNamespace(_tensor_type=FakeCudaTensor)
    with_weight = SimpleNamespace(_parameters={"weight": FakeCudaTensor(1)}, _buffers={})
    without = SimpleNamespace(_parameters={}, _buffers={})
    caller_entry = (None, 0, None, 3, 0)  # (info, t_start, input nodes, device, calls)
    assert Probe._input_device(probe, (FakeCudaTensor(2),), with_weight, []) == 2  # its input's, first
    assert Probe._input_device(probe, (), with_weight, [caller_entry]) == 1
    assert Probe._input_device(probe, ("not a tensor",), without, [caller_entry]) == 3
    assert Probe._input_device(probe, (), without, []) is None  # (nothing to tell: the CPU clock)
