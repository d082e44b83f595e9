"""GPU-side timestamps: CUDA events recorded at the hooks, turned into unix nanoseconds later.

GPU work is asynchronous, so the CPU clock at a hook tells when a kernel was launched, not when it
ran. The hooks therefore record a `torch.cuda.Event(enable_timing=True)` on the current stream and
never wait for it. The writer thread later asks each event `query()` (done yet?) and converts it
with `anchor.elapsed_time(event)` relative to an anchor event whose wall-clock time is known:

    wall_ns(event) = anchor_wall_ns + round(anchor.elapsed_time(event) * 1e6)

An anchor is made off the training path (at attach, then every few seconds by the writer thread):
record it, wait for it on that thread only, read time.time_ns(). Re-anchoring bounds the error that
`elapsed_time`'s float32 milliseconds and GPU/CPU clock drift would add over a long job.
`CudaTimestampResolver` holds this logic and works on any objects with `query()` and
`elapsed_time()`, so it is tested with fake events; `CudaClock` supplies the real ones.
"""
import time


class CudaTimestampResolver:
    """Converts completed CUDA events to unix nanoseconds, relative to one anchor per device."""

    def __init__(self):
        self._anchors = {}  # device index -> (anchor event, wall-clock ns when it completed)

    def set_anchor(self, device, event, wall_ns):
        self._anchors[device] = (event, wall_ns)

    def has_anchor(self, device):
        return device in self._anchors

    def is_ready(self, event):
        """True once the GPU has passed the point where the event was recorded."""
        return event.query()

    def wall_ns(self, device, event):
        """Unix time of a completed event. The event may precede the anchor (negative offset)."""
        anchor, anchor_wall_ns = self._anchors[device]
        return anchor_wall_ns + round(anchor.elapsed_time(event) * 1_000_000)


class CudaClock:
    """Records timing events on the training path and anchors them off it (needs torch.cuda)."""

    def __init__(self, torch_module):
        self._torch = torch_module
        self._cuda = torch_module.cuda
        self.resolver = CudaTimestampResolver()

    def stamp(self, device):
        """Records an event on the device's current stream; never waits for the GPU."""
        event = self._cuda.Event(enable_timing=True)
        event.record(self._cuda.current_stream(device))
        return event

    def anchor(self, device):
        """Records an anchor and waits for it; call only from the writer thread or at attach."""
        event = self._cuda.Event(enable_timing=True)
        event.record(self._cuda.current_stream(device))
        event.synchronize()
        self.resolver.set_anchor(device, event, time.time_ns())

    def synchronize(self):
        """Used at detach only, so that every recorded event can be resolved."""
        for device in range(self._cuda.device_count()):
            if self._cuda.is_initialized():
                self._cuda.synchronize(device)
