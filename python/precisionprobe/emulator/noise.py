"""Measurement noise and multiplexing zeros, reproducible per (seed, GPU, metric, window).

Each sample's random numbers come from a counter-based hash (splitmix64) of its coordinates, not
from a stream. The coordinate in time is the index of the window the value describes: the DCGM
window for the DCGM_FI_PROF_* fields and FB_USED, the driver's utilization window for GPU_UTIL
(timing.py). So a window that Prometheus stores twice (a repeat) has identical values, as a real
repeat has, the live emulator gives the same value however often a window is scraped, and the
offline generator gives the same values whatever it generates first. The timing model draws its
own seeded numbers (phases, jitter) from the same hash on streams of their own (uniform, normal).

  measured = truth * (1 + noise * z),  z ~ N(0, 1)          (multiplicative; noise 0.005 = 0.5%)
  a DCGM_FI_PROF_* sample reads 0 with probability mux_zero  (profiling counters multiplexed)
then ratios are clipped to [0, 1] and GPU_UTIL (to [0, 100]) and FB_USED are rounded to integers,
as dcgm-exporter prints them.
"""
import numpy as np

from .profile import GPU_UTIL, INTEGER_METRICS, METRICS, PROF_METRICS, UPPER_BOUNDS

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x):
    """splitmix64's finalizer on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = (np.asarray(x, dtype=np.uint64) + _GOLDEN) & _M64
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform(h):
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def sample_hash(seed, gpu, metric_index, ticks):
    """One 64-bit hash per tick (ticks: integer tick numbers, e.g. ms // interval)."""
    ticks = np.asarray(ticks, dtype=np.int64).astype(np.uint64)
    key = _mix(_mix(_mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF)) ^ np.uint64(gpu)) ^ np.uint64(metric_index))
    with np.errstate(over="ignore"):
        return _mix(key ^ (ticks * np.uint64(0xD1B54A32D192ED03)))


def _normal_from(h):
    """One standard normal per hash (Box-Muller on two uniforms derived from it)."""
    u1 = _uniform(_mix(h ^ np.uint64(1)))
    u2 = _uniform(_mix(h ^ np.uint64(2)))
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


_STREAM_BASE = 1 << 32  # stream keys take the place of the GPU index, above any GPU's


def uniform(seed, stream, index):
    """Uniform numbers in [0, 1), one per index, reproducible per (seed, stream, index)."""
    return _uniform(sample_hash(seed, _STREAM_BASE + stream, 0, np.atleast_1d(index)))


def normal(seed, stream, index):
    """Standard normal numbers, one per index, reproducible per (seed, stream, index)."""
    return _normal_from(sample_hash(seed, _STREAM_BASE + stream, 0, np.atleast_1d(index)))


def measure(truth, gpu, ticks, noise=0.0, mux_zero=0.0, seed=0, util_ticks=None):
    """What the emulated exporter publishes for truth (k x 6, METRICS order).

    ticks: the index of the window each row describes, keying the noise of every metric;
    util_ticks (optional): the index of GPU_UTIL's own window per row, keying GPU_UTIL's noise
    instead (the driver's utilization window, timing.py)."""
    truth = np.atleast_2d(np.asarray(truth, dtype=np.float64))
    out = truth.copy()
    for m, metric in enumerate(METRICS):
        keys = util_ticks if (util_ticks is not None and metric == GPU_UTIL) else ticks
        h = sample_hash(seed, gpu, m, keys)
        if noise > 0:
            out[:, m] *= 1.0 + noise * _normal_from(h)
        if mux_zero > 0 and metric in PROF_METRICS:
            out[_uniform(_mix(h ^ np.uint64(3))) < mux_zero, m] = 0.0
        upper = UPPER_BOUNDS.get(metric, np.inf)
        out[:, m] = np.clip(out[:, m], 0.0, upper)
        if metric in INTEGER_METRICS:
            out[:, m] = np.rint(out[:, m])
    return out
