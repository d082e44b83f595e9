"""The ground-truth signal of one emulated GPU, its averages over windows and its instant values.

While a layer runs, each counter reads the layer's profile value; between layers it reads the
profile's idle value. A DCGM_FI_PROF_* value is the AVERAGE over a window (b, e], GPU_UTIL the
average over the driver's utilization window, FB_USED the value at one instant (timing.py says
which window and which instant):

    mean over (b, e] = idle + (1 / (e - b)) * sum over layers l of overlap((b, e], l) * (value_l - idle)

which means() (any windows) and window_means() (windows of one length ending at given times)
compute exactly from a running integral of the signal (float64 on offsets from the first event:
well below a nanosecond of error over days); value_at() gives the instant values. Events on one GPU do not
overlap in what one training process writes; if they do, an event is cut where the next one
starts (the later-starting layer owns the shared time).
"""
import numpy as np


class Timeline:
    """Layer intervals of one GPU with their values: starts/ends in unix ns, values (n x 6)."""

    def __init__(self, starts_ns, ends_ns, values, idle):
        starts = np.asarray(starts_ns, dtype=np.int64)
        ends = np.asarray(ends_ns, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64).reshape(len(starts), -1)
        order = np.argsort(starts, kind="stable")
        starts, ends, values = starts[order], ends[order], values[order]
        if len(starts) > 1:
            ends = np.minimum(ends, np.append(starts[1:], ends[-1]))
        ends = np.maximum(ends, starts)
        self.idle = np.asarray(idle, dtype=np.float64)
        self.base_ns = int(starts[0]) if len(starts) else 0
        self.starts = (starts - self.base_ns).astype(np.float64)
        self.durations = (ends - starts).astype(np.float64)
        self.excess = values - self.idle  # what each layer adds over idle while it runs
        cumulative = np.cumsum(self.excess * self.durations[:, None], axis=0)
        self.cumulative = np.vstack([np.zeros((1, self.excess.shape[1])), cumulative])

    def integral(self, t_ns):
        """For each time t: integral from -inf to t of (signal - idle), in value x ns."""
        t = np.asarray(t_ns, dtype=np.int64)
        if not len(self.starts):
            return np.zeros(t.shape + (len(self.idle),))
        rel = (t - self.base_ns).astype(np.float64)
        i = np.searchsorted(self.starts, rel, side="left")  # events starting before t
        last = np.maximum(i - 1, 0)
        inside = np.clip(rel - self.starts[last], 0.0, self.durations[last]) * (i > 0)
        return self.cumulative[last] + self.excess[last] * inside[..., None]

    def means(self, begins_ns, ends_ns):
        """Average of the signal over (b, e] for each pair of window bounds (ns); (k x 6)."""
        begins = np.asarray(begins_ns, dtype=np.int64)
        ends = np.asarray(ends_ns, dtype=np.int64)
        delta = self.integral(ends) - self.integral(begins)
        return self.idle + delta / (ends - begins).astype(np.float64)[..., None]

    def value_at(self, t_ns):
        """The signal at each instant t (ns): the values of the layer running then (it runs over
        [start, end)), else idle; (k x 6)."""
        t = np.asarray(t_ns, dtype=np.int64)
        if not len(self.starts):
            return np.broadcast_to(self.idle, t.shape + self.idle.shape).copy()
        rel = (t - self.base_ns).astype(np.float64)
        i = np.searchsorted(self.starts, rel, side="right") - 1  # the last event started at or before t
        last = np.maximum(i, 0)
        running = (i >= 0) & (rel < self.starts[last] + self.durations[last])
        return self.idle + self.excess[last] * running[..., None]

    def window_means(self, tick_ends_ns, interval_ns):
        """Average of the signal over (T - interval, T] for each tick end T; (k x 6)."""
        ends = np.asarray(tick_ends_ns, dtype=np.int64)
        delta = self.integral(ends) - self.integral(ends - int(interval_ns))
        return self.idle + delta / float(interval_ns)
