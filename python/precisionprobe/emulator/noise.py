"""Measurement noise and multiplexing zeros, reproducible per (seed, GPU, metric, tick).

Each sample's random numbers come from a counter-based hash (splitmix64) of its coordinates, not
from a stream, so the live emulator gives the same value however often a window is scraped,
and the offline generator gives the same values whatever it generates first.

  measured = truth * (1 + noise * z),  z ~ N(0, 1)          (multiplicative; noise 0.005 = 0.5%)
  a DCGM_FI_PROF_* sample reads 0 with probability mux_zero  (profiling counters multiplexed)
then ratios are clipped to [0, 1] and GPU_UTIL (to [0, 100]) and FB_USED are rounded to integers,
as dcgm-exporter prints them.
"""
import numpy as np

from .profile import INTEGER_METRICS, METRICS, PROF_METRICS, UPPER_BOUNDS

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


def measure(truth, gpu, ticks, noise=0.0, mux_zero=0.0, seed=0):
    """What the emulated exporter publishes for truth (k x 6, METRICS order) at tick numbers ticks."""
    truth = np.atleast_2d(np.asarray(truth, dtype=np.float64))
    out = truth.copy()
    for m, metric in enumerate(METRICS):
        h = sample_hash(seed, gpu, m, ticks)
        if noise > 0:
            u1 = _uniform(_mix(h ^ np.uint64(1)))
            u2 = _uniform(_mix(h ^ np.uint64(2)))
            z = np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
            out[:, m] *= 1.0 + noise * z
        if mux_zero > 0 and metric in PROF_METRICS:
            out[_uniform(_mix(h ^ np.uint64(3))) < mux_zero, m] = 0.0
        upper = UPPER_BOUNDS.get(metric, np.inf)
        out[:, m] = np.clip(out[:, m], 0.0, upper)
        if metric in INTEGER_METRICS:
            out[:, m] = np.rint(out[:, m])
    return out
