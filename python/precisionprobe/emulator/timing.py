"""When a stored sample was taken and which GPU time it describes: the real data path's timing.

A DCGM value reaches Prometheus through four components, each with its own clock. The emulator
reproduces all four by default (mode 'realistic'); the table in the package doc (__init__.py)
lists each behaviour with its component, parameter and default. Along the data path:

  DCGM        The hostengine polls a watched field when its update period (dcgm-exporter's -c,
              floor 100 ms for profiling fields) has elapsed, stamps the value with the poll time
              in microseconds and re-bases the next poll on that actual time, so the period is
              the nominal one plus a little and the grid's phase drifts late. A DCGM_FI_PROF_*
              value is the average over the window between two polls, ending at the poll:
                  window k = (g[k-1], g[k]],
                  g[k] = origin + dcgm_phase_ms + k * dcgm_period_ms * (1 + dcgm_drift_ppm * 1e-6)
                         + wander(k) + jitter(k)
              (the scheduler's lateness varies: a slow wander of up to dcgm_wander_ms over 300 to
              4100 polls, and each poll's own Gaussian dcgm_poll_jitter_ms),
              rounded to whole microseconds. Window 0 is the first poll, which has no baseline
              and no value; windows 1, 2, ... have values.
  driver      DCGM_FI_DEV_GPU_UTIL is what NVML returns at the poll: the percent of time over
              the driver's own past sample period (1/6 s to 1 s, by product) in which a kernel
              ran. The driver's periods lie on a grid of their own (no drift modelled):
                  u[j] = origin + util_phase_ms + j * util_period_ms   (whole microseconds),
              and the value read at poll time g is the average over (u[j-1], u[j]] for the
              newest u[j] <= g. Two polls in one driver period read the same value.
              DCGM_FI_DEV_FB_USED is a snapshot of memory in use at the poll: the value of the
              layer running at the instant g (idle if none).
  exporter    dcgm-exporter prints no timestamps. 'on-scrape' (4.0.0 and later): each scrape
              reads DCGM's latest cached values; 'cached' (up to the 3.x series): a ticker every
              exporter_period_ms (its -c) collects them and scrapes get the newest collection.
              Either way the window served is the newest whose end g satisfies
                  g <= read time - (exporter_latency_ms + exporter_jitter_ms * z),  z ~ N(0, 1),
              the read time being the scrape's start (on-scrape) or the collection tick (cached).
  restart     dcgm-exporter restarted mid-job (a pod rescheduled, a crash loop, an upgrade; in
              its default embedded mode it runs DCGM's host engine itself): from
              exporter_restart_s after the origin it serves nothing for exporter_down_s, and the
              new host engine polls on a grid of its own, at the phase exporter_restart_phase_ms
              (drawn from the seed by default) after it came back:
                  g[k] = up + exporter_restart_phase_ms + (k - K) * period + wander(k) + jitter(k)
              for k >= K, K being one past the last window polled before the restart; window K
              is the new engine's first poll (no baseline, no value). Scrapes from the restart
              until a window of the new engine is served store nothing (Prometheus records the
              target down). The driver's grid and the clocks' drift are the GPU's: unchanged.
              A cached exporter's ticker keeps its phase (not modelled: its restart would move
              the offset once more, by as little or as much). None (the default): no restart.
  Prometheus  Scrapes every scrape_interval_ms at a fixed phase (its offset is a hash of the
              target, modulo the interval); each scrape starts a little late (timer latency,
              |N(0, scrape_jitter_ms)|), and its start, truncated to whole ms, is the stored
              time. When the lateness is at most the tolerance, the stored time snaps back to
              the ideal tick (scrape_tolerance_ms, default 2 ms, clamped to 1% of the interval as in
              Prometheus 2.51 and later; 0 models 2.22-2.50 at intervals of 200 ms or less).

Consequences the tests check: the stored time is the scrape's, some 30 ms to one DCGM period
after the window's end, and that offset moves as the grids drift; scraping at the DCGM period
stores some windows twice (a repeat: the same values, since the exporter serves the same DCGM
sample) and skips others, at a rate that follows the drift; scraping at 1 s keeps one 100 ms
window in ten.

Two IDEALISED modes keep the old behaviour for callers that need exact windows:
  'exact'   every window once, window k = (start + k*I - I, start + k*I], stamped with its end
            (an explicit timestamp), GPU_UTIL and FB_USED averaged over the DCGM window too;
  'offset'  the same windows and values, stamped end + offset_ms.
subms_phase puts their grid at a sub-millisecond phase (drawn from the seed), so that stamping
truncates each window's end to the millisecond: what millisecond rounding alone does. In
'realistic' the phases are microsecond values anyway (subms_phase is implied).

Phases given as None are drawn from the recording's seed (noise.uniform), as are the jitters
(noise.normal, keyed by scrape or collection index), so an offline recording is reproducible.
The functions below are pure: a resolved Timing (resolve()), an origin in ns (the offline
recording's start; the live emulator's start, whole seconds) and times or indices in, times or
indices out.
"""
import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Optional

import numpy as np

from . import noise as _noise

MODES = ("realistic", "exact", "offset")
IDEALISED_MODES = ("exact", "offset")
EXPORTERS = ("on-scrape", "cached")
DCGM_FLOOR_MS = 100
OFFLINE_EXPORTER_LATENCY_MS = 30.0   # chosen: the sources do not measure it (see __init__.py)
LIVE_EXPORTER_LATENCY_MS = 300.0     # live realistic: events must have arrived (live.py)
LIVE_IDEALISED_LAG_MS = 500.0        # live exact/offset: the old --lag-ms default
MAX_TOLERANCE_MS = 2.0               # Prometheus' --scrape.timestamp-tolerance default
# The periods their components take in whole ms: the rest may be fractions (the driver's 1/6 s).
WHOLE_MS = {"dcgm_period_ms": "dcgm-exporter's -c", "exporter_period_ms": "dcgm-exporter's -c",
            "scrape_interval_ms": "Prometheus' scrape_interval"}
MAX_MS = 3_600_000.0                 # ceiling of every period, latency, jitter and offset: an hour
MAX_RESTART_S = 7 * 24 * 3600.0      # a restart's time and down time: at most a week (--minutes' limit)
_SECONDS = ("exporter_restart_s", "exporter_down_s")

# Streams of seeded numbers (noise.uniform / noise.normal), one per use.
_DCGM_PHASE, _UTIL_PHASE, _EXPORTER_PHASE, _SCRAPE_PHASE, _SUBMS_PHASE = 1, 2, 3, 4, 5
_SCRAPE_LATENESS, _EXPORTER_LATENCY = 6, 7
_WANDER, _POLL_JITTER = 8, 9
_RESTART_PHASE = 10

# Command-line flag of each field, for error messages that the CLI and Python callers share.
FLAGS = {"mode": "--timing", "dcgm_period_ms": "-c/--interval-ms", "exporter": "--exporter"}


def flag(name):
    return FLAGS.get(name, "--" + name.replace("_", "-"))


@dataclass(frozen=True)
class Timing:
    """The timing model's parameters (module doc). None: derived when resolve()d.

    mode                'realistic' (default); IDEALISED: 'exact', 'offset'
    dcgm_period_ms      DCGM's update period = the collection interval; None: the recording's
                        interval (record()'s interval_ms, the CLI's -c/--interval-ms); floor 100
    dcgm_phase_ms       end of DCGM window 0 after the origin; None: from the seed (microseconds)
    dcgm_drift_ppm      DCGM's period runs this much longer than nominal (15 ppm: the phase moves
                        54 ms an hour)
    dcgm_wander_ms      how far DCGM's polls stray from that straight grid, slowly (its
                        scheduler's lateness varies with load): up to this many ms, over
                        periods of 30 s to 7 min of polls
    dcgm_poll_jitter_ms standard deviation of each poll's own lateness (independent per poll);
                        dcgm_wander_ms + 3 x this below a tenth of the period (polls keep their order)
    Every period, latency, jitter and offset is at most MAX_MS (an hour).
    util_period_ms      the driver's GPU_UTIL sample period (1000/6: NVML's shortest)
    util_phase_ms       end of the driver's window 0 after the origin; None: from the seed
    exporter            'on-scrape' (dcgm-exporter 4.x, default) or 'cached' (2.x and 3.x)
    exporter_period_ms  'cached': the exporter's collection ticker (its -c: whole ms); None: dcgm_period_ms
    exporter_phase_ms   'cached': the ticker's phase; None: from the seed
    exporter_latency_ms from the read (scrape or collection tick) back to the newest window end
                        that can be served; None: 30 offline, 300 live (live.py), and in the
                        idealised live modes 500 (the lag of --lag-ms)
    exporter_jitter_ms  standard deviation of that latency (Gaussian; clipped at 0 latency)
    scrape_interval_ms  Prometheus' scrape_interval; None: dcgm_period_ms; whole ms, at least 1
    scrape_phase_ms     when scrapes happen, modulo the interval; None: from the seed
    scrape_jitter_ms    scale of each scrape's lateness (half-normal: never early); below a third
                        of the interval (a target's scrapes run one after another on a ticker)
    scrape_tolerance_ms Prometheus' --scrape.timestamp-tolerance: a scrape this late or less is
                        stored at its ideal tick, at most 1% of the interval as Prometheus clamps
                        it (resolved: min(scrape_interval_ms / 100, this)); None: 2; 0: never
    exporter_restart_s  dcgm-exporter restarts this many seconds after the origin (the recording's
                        start, the live emulator's); None: never (module doc, "restart")
    exporter_down_s     how long it serves nothing then, s (default 5: a pod restarted in place)
    exporter_restart_phase_ms  end of the restarted DCGM's first poll after it came back; None:
                        from the seed (the new grid's phase against the old is anywhere in a period)
    offset_ms           'offset' mode: stamp = window end + offset_ms
    subms_phase         idealised modes: the window grid at a sub-millisecond phase
    poll_seed           set by resolve(): the seed of the polls' wander and jitter
    Realistic-only parameters may not differ from their defaults in the idealised modes, nor
    offset_ms outside 'offset'; the live emulator takes no scrape_* (its Prometheus decides).
    """
    mode: str = "realistic"
    dcgm_period_ms: Optional[float] = None
    dcgm_phase_ms: Optional[float] = None
    dcgm_drift_ppm: float = 15.0
    dcgm_wander_ms: float = 0.2
    dcgm_poll_jitter_ms: float = 0.02
    util_period_ms: float = 1000.0 / 6
    util_phase_ms: Optional[float] = None
    exporter: str = "on-scrape"
    exporter_period_ms: Optional[float] = None
    exporter_phase_ms: Optional[float] = None
    exporter_latency_ms: Optional[float] = None
    exporter_jitter_ms: float = 2.0
    scrape_interval_ms: Optional[float] = None
    scrape_phase_ms: Optional[float] = None
    scrape_jitter_ms: float = 1.0
    scrape_tolerance_ms: Optional[float] = None
    exporter_restart_s: Optional[float] = None
    exporter_down_s: float = 5.0
    exporter_restart_phase_ms: Optional[float] = None
    offset_ms: float = 20.0
    subms_phase: bool = False
    poll_seed: Optional[int] = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"{flag('mode')} {self.mode!r}: use one of {', '.join(MODES)}")
        if self.exporter not in EXPORTERS and not (self.exporter is None and self.idealised):
            raise ValueError(f"{flag('exporter')} {self.exporter!r}: use one of {', '.join(EXPORTERS)}")
        minimum = {"dcgm_period_ms": DCGM_FLOOR_MS, "util_period_ms": 1, "exporter_period_ms": 1,
                   "scrape_interval_ms": 1}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("mode", "exporter", "subms_phase", "poll_seed") or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise ValueError(f"{f.name} ({flag(f.name)}): not a finite number: {value!r}")
            if f.name in _SECONDS:
                if value < 0 or value > MAX_RESTART_S:
                    raise ValueError(f"{f.name} ({flag(f.name)}) must be from 0 to {MAX_RESTART_S:.0f} s "
                                     f"(a week), got {value:g}")
                if f.name == "exporter_down_s" and value <= 0:
                    raise ValueError(f"exporter_down_s ({flag(f.name)}) must be above 0 s: a restart takes "
                                     f"time, got {value:g}")
                continue
            if f.name != "dcgm_drift_ppm" and abs(value) > MAX_MS:
                within = "within +-" if f.name == "offset_ms" else "at most "
                raise ValueError(f"{f.name} ({flag(f.name)}) must be {within}{MAX_MS:.0f} ms (an hour), "
                                 f"got {value:g}")
            if f.name in minimum and value < minimum[f.name]:
                why = " (DCGM's floor for profiling fields)" if f.name == "dcgm_period_ms" else ""
                raise ValueError(f"{f.name} ({flag(f.name)}) must be at least {minimum[f.name]} ms{why}, "
                                 f"got {value:g}")
            if f.name in WHOLE_MS and value != int(value):
                raise ValueError(f"{f.name} ({flag(f.name)}) must be a whole number of ms, got {value:g}: "
                                 f"{WHOLE_MS[f.name]} takes whole milliseconds")
            if f.name == "dcgm_drift_ppm" and abs(value) > 1e5:
                raise ValueError(f"dcgm_drift_ppm ({flag(f.name)}) must be within +-100000 ppm (10%), "
                                 f"got {value:g}")
            if f.name not in ("dcgm_drift_ppm", "offset_ms") and value < 0:
                raise ValueError(f"{f.name} ({flag(f.name)}) must not be negative, got {value:g}")

    @property
    def idealised(self):
        return self.mode in IDEALISED_MODES


_DEFAULT = Timing()
_REALISTIC_ONLY = ("dcgm_phase_ms", "dcgm_drift_ppm", "dcgm_wander_ms", "dcgm_poll_jitter_ms", "util_period_ms", "util_phase_ms", "exporter", "exporter_period_ms",
                   "exporter_phase_ms", "exporter_jitter_ms", "scrape_interval_ms", "scrape_phase_ms",
                   "scrape_jitter_ms", "scrape_tolerance_ms", "exporter_restart_s", "exporter_down_s",
                   "exporter_restart_phase_ms")
_SCRAPE = ("scrape_interval_ms", "scrape_phase_ms", "scrape_jitter_ms", "scrape_tolerance_ms")


def _given(timing, name):
    return getattr(timing, name) != getattr(_DEFAULT, name)


def _seeded_ms(seed, stream, span_ms, resolution_ms):
    """A phase in [0, span_ms) drawn from the seed, a whole multiple of resolution_ms."""
    steps = max(1, int(round(span_ms / resolution_ms)))
    return int(_noise.uniform(seed, stream, 0)[0] * steps) % steps * resolution_ms


def collection_interval(interval_ms):
    """interval_ms (dcgm-exporter's -c) checked as Timing checks dcgm_period_ms: a whole number of
    ms from DCGM's floor to an hour; returned as an int. ValueError names the flag."""
    if isinstance(interval_ms, bool) or not isinstance(interval_ms, (int, float, np.integer, np.floating)) \
            or not math.isfinite(interval_ms):
        raise ValueError(f"interval_ms ({flag('dcgm_period_ms')}): not a finite number: {interval_ms!r}")
    Timing(dcgm_period_ms=float(interval_ms))  # its checks, messages naming the flag
    return int(interval_ms)


def resolve(timing, interval_ms, seed, live=False):
    """The Timing with every None derived (from interval_ms, the seed, offline or live); the
    parameters that do not apply to its mode are None. ValueError names the flag at fault."""
    if not isinstance(timing, Timing):
        raise TypeError(f"timing: expected a Timing, got {type(timing).__name__}")
    period = float(collection_interval(interval_ms))
    if timing.dcgm_period_ms is not None and float(timing.dcgm_period_ms) != period:
        raise ValueError(f"dcgm_period_ms {timing.dcgm_period_ms:g} differs from the collection interval "
                         f"{period:g} ms: the DCGM period is the collection interval ({flag('dcgm_period_ms')})")
    if live:
        given = [name for name in _SCRAPE if _given(timing, name)]
        if given:
            raise ValueError(f"{flag(given[0])}: in live mode the scraping Prometheus' own configuration "
                             "decides when scrapes happen")
    if timing.mode != "offset" and _given(timing, "offset_ms"):
        raise ValueError(f"{flag('offset_ms')} applies to {flag('mode')} offset only")

    if timing.idealised:
        given = [name for name in _REALISTIC_ONLY if _given(timing, name)]
        if given:
            raise ValueError(f"{flag(given[0])} applies to {flag('mode')} realistic only; "
                             f"{timing.mode!r} is an IDEALISED mode")
        if not live and timing.exporter_latency_ms is not None:
            raise ValueError(f"{flag('exporter_latency_ms')}: the idealised offline modes store every "
                             "window once, so no latency applies")
        phase = _seeded_ms(seed, _SUBMS_PHASE, 1.0, 0.001) if timing.subms_phase else 0.0
        if timing.subms_phase and phase == 0.0:
            phase = 0.001
        out = {name: None for name in _REALISTIC_ONLY}  # not part of an idealised mode
        out.update(dcgm_period_ms=period, dcgm_phase_ms=phase, dcgm_drift_ppm=0.0)
        return replace(timing, **out,
                       exporter_latency_ms=(None if not live else float(
                           timing.exporter_latency_ms if timing.exporter_latency_ms is not None
                           else LIVE_IDEALISED_LAG_MS)),
                       offset_ms=float(timing.offset_ms) if timing.mode == "offset" else None)

    def check_phase(name, value, span):
        if value >= span:
            raise ValueError(f"{name} ({flag(name)}) must be below its period ({span:g} ms), got {value:g}")
        return float(value)

    dcgm_phase = (check_phase("dcgm_phase_ms", timing.dcgm_phase_ms, period) if timing.dcgm_phase_ms is not None
                  else _seeded_ms(seed, _DCGM_PHASE, period, 0.001))
    util = float(timing.util_period_ms)
    util_phase = (check_phase("util_phase_ms", timing.util_phase_ms, util) if timing.util_phase_ms is not None
                  else _seeded_ms(seed, _UTIL_PHASE, util, 0.001))
    cached = timing.exporter == "cached"
    exporter_period = float(timing.exporter_period_ms) if timing.exporter_period_ms is not None else period
    if not cached and (timing.exporter_period_ms is not None or timing.exporter_phase_ms is not None):
        name = "exporter_period_ms" if timing.exporter_period_ms is not None else "exporter_phase_ms"
        raise ValueError(f"{flag(name)} applies to {flag('exporter')} cached only")
    exporter_phase = None
    if cached:
        exporter_phase = (check_phase("exporter_phase_ms", timing.exporter_phase_ms, exporter_period)
                          if timing.exporter_phase_ms is not None
                          else _seeded_ms(seed, _EXPORTER_PHASE, exporter_period, 0.001))
    # DCGM's polls and Prometheus' scrapes each run one after another: lateness that would make
    # one overtake the next is not what their schedulers do.
    lateness = float(timing.dcgm_wander_ms) + 3 * float(timing.dcgm_poll_jitter_ms)
    if lateness >= period / 10:
        raise ValueError(f"dcgm_wander_ms + 3 x dcgm_poll_jitter_ms ({flag('dcgm_wander_ms')}, "
                         f"{flag('dcgm_poll_jitter_ms')}) must be below a tenth of the DCGM period "
                         f"({period / 10:g} ms), got {lateness:g}: DCGM's polls keep their order")
    restarts = timing.exporter_restart_s is not None
    if not restarts and (_given(timing, "exporter_down_s") or timing.exporter_restart_phase_ms is not None):
        name = "exporter_down_s" if _given(timing, "exporter_down_s") else "exporter_restart_phase_ms"
        raise ValueError(f"{flag(name)} applies only with {flag('exporter_restart_s')}")
    restart_phase = None
    if restarts:
        restart_phase = (check_phase("exporter_restart_phase_ms", timing.exporter_restart_phase_ms, period)
                         if timing.exporter_restart_phase_ms is not None
                         else _seeded_ms(seed, _RESTART_PHASE, period, 0.001))
    latency = (float(timing.exporter_latency_ms) if timing.exporter_latency_ms is not None
               else LIVE_EXPORTER_LATENCY_MS if live else OFFLINE_EXPORTER_LATENCY_MS)
    out = dict(dcgm_period_ms=period, dcgm_phase_ms=dcgm_phase,
               dcgm_drift_ppm=float(timing.dcgm_drift_ppm), dcgm_wander_ms=float(timing.dcgm_wander_ms),
               dcgm_poll_jitter_ms=float(timing.dcgm_poll_jitter_ms), poll_seed=int(seed),
               util_period_ms=util, util_phase_ms=util_phase, exporter_period_ms=exporter_period if cached else None,
               exporter_phase_ms=exporter_phase, exporter_latency_ms=latency,
               exporter_jitter_ms=float(timing.exporter_jitter_ms), offset_ms=None, subms_phase=True,
               exporter_restart_s=float(timing.exporter_restart_s) if restarts else None,
               exporter_down_s=float(timing.exporter_down_s) if restarts else None,
               exporter_restart_phase_ms=restart_phase)
    if live:
        out.update({name: None for name in _SCRAPE})
    else:
        scrape = float(timing.scrape_interval_ms) if timing.scrape_interval_ms is not None else period
        if 3 * float(timing.scrape_jitter_ms) >= scrape:
            raise ValueError(f"scrape_jitter_ms ({flag('scrape_jitter_ms')}) must be below a third of the "
                             f"scrape interval ({scrape / 3:g} ms), got {float(timing.scrape_jitter_ms):g}: "
                             "Prometheus scrapes a target one scrape after another on a ticker, so a "
                             "scrape starts before the next tick")
        out.update(
            scrape_interval_ms=scrape,
            scrape_phase_ms=(check_phase("scrape_phase_ms", timing.scrape_phase_ms, scrape)
                             if timing.scrape_phase_ms is not None
                             else _seeded_ms(seed, _SCRAPE_PHASE, scrape, 1e-6)),
            scrape_jitter_ms=float(timing.scrape_jitter_ms),
            # Prometheus 2.51 and later clamp --scrape.timestamp-tolerance to 1% of the interval.
            scrape_tolerance_ms=min(scrape / 100.0, float(timing.scrape_tolerance_ms)
                                    if timing.scrape_tolerance_ms is not None else MAX_TOLERANCE_MS))
    return replace(timing, **out)


# --- after the job ------------------------------------------------------------------------------

# A job's end stops neither dcgm-exporter nor Prometheus: the GPU idles, DCGM's windows go on and
# every scrape stores one more sample. The sample that describes a job's last event is stored up
# to the exporter's latency (and its jitter), two DCGM periods (the window holding the event's end
# and the one the exporter may still be serving) and a scrape interval after the event; pp_refresh
# asks for samples up to a minute past a job's last event (kSamplesAfterLastEventSeconds in
# src/attribution/refresh.hpp). An offline recording stores samples for this long after its end,
# and the live emulator serves at least this long after the latest event it followed before
# --duration stops it. Chosen: 5 s, many times the data path's own delay at the usual 100 ms to
# 1 s periods, and what a refresh a few seconds after a job reads; the engine's full minute would
# double the samples of the tests' one-minute recordings and add alignment stretches of the idle
# GPU alone (sample_alignment status 'no layers'), which no test is about.
TAIL_SECONDS = 5.0


def tail_seconds(resolved):
    """How long after a job's last event the emulated data path goes on storing samples of the
    idle GPU (s): TAIL_SECONDS, or longer where the path's own delay is (long periods)."""
    t = resolved
    delay_ms = 2 * t.dcgm_period_ms + (t.exporter_latency_ms or 0.0) + 3 * (t.exporter_jitter_ms or 0.0) \
        + (t.exporter_period_ms or 0.0) + (t.scrape_interval_ms or 0.0) + 3 * (t.scrape_jitter_ms or 0.0)
    return max(TAIL_SECONDS, math.ceil(delay_ms) / 1000.0)


def describe_restart(t):
    """'; exporter restarted ...' for the CLI's line on the timing where it has a restart, else ''."""
    if t.exporter_restart_s is None:
        return ""
    return (f"; exporter restarted at {t.exporter_restart_s:g} s, down {t.exporter_down_s:g} s, DCGM's grid "
            f"then at phase {t.exporter_restart_phase_ms:g} ms")


def parameters(resolved):
    """The resolved parameters as a JSON-ready dict (truth.json, the live /served endpoint); the
    restart's only where there is one (a recording without keeps the truth.json it had)."""
    out = asdict(resolved)
    if resolved.exporter_restart_s is None:
        for name in ("exporter_restart_s", "exporter_down_s", "exporter_restart_phase_ms"):
            del out[name]
    return out


# --- the grids -------------------------------------------------------------------------------

def _period_us(t):
    return t.dcgm_period_ms * 1000.0 * (1.0 + (t.dcgm_drift_ppm or 0.0) * 1e-6)


# The wander's periods, in polls, and their shares of dcgm_wander_ms (summing to 1).
_WANDER_PERIODS = (300, 1100, 4100)
_WANDER_SHARES = (0.5, 0.3, 0.2)


def _poll_lateness_us(t, k):
    """How far poll k strays from the straight grid, us: the slow wander and its own jitter."""
    wander, jitter = t.dcgm_wander_ms or 0.0, t.dcgm_poll_jitter_ms or 0.0
    if not (wander or jitter):
        return 0.0
    out = np.zeros(k.shape)
    if wander:
        phases = _noise.uniform(t.poll_seed, _WANDER, np.arange(len(_WANDER_PERIODS))) * 2 * np.pi
        for period, share, phase in zip(_WANDER_PERIODS, _WANDER_SHARES, phases):
            out += wander * 1000.0 * share * np.sin(2 * np.pi * k / period + phase)
    if jitter:
        z = _noise.normal(t.poll_seed, _POLL_JITTER, np.mod(k, 2**40)).reshape(k.shape)
        out += jitter * 1000.0 * np.clip(z, -3, 3)
    return out


def _grid_end_ns(t, base_ns, phase_ms, k0, k):
    """End of window k of the DCGM host engine whose window k0 ended phase_ms after base_ns."""
    us = phase_ms * 1000.0 + (k - k0) * _period_us(t) + _poll_lateness_us(t, k)
    return (base_ns // 1000 + np.rint(us).astype(np.int64)) * 1000


def _grid_window_at(t, base_ns, phase_ms, k0, time_ns):
    rel_us = (np.asarray(time_ns, dtype=np.int64) - (base_ns // 1000) * 1000) / 1000.0
    approx = k0 + np.floor((rel_us - phase_ms * 1000.0) / _period_us(t))
    return _newest_at(lambda k: _grid_end_ns(t, base_ns, phase_ms, k0, k), approx, time_ns)


def restart(t, origin_ns):
    """(K, down_ns, up_ns) of the exporter's restart (module doc): the restarted host engine's
    first window index (its first poll, no value), when the exporter went down and came back;
    None without a restart."""
    if t.exporter_restart_s is None:
        return None
    down_ns = origin_ns + int(round(t.exporter_restart_s * 1e9))
    up_ns = down_ns + int(round(t.exporter_down_s * 1e9))
    return int(_grid_window_at(t, origin_ns, t.dcgm_phase_ms, 0, down_ns)) + 1, down_ns, up_ns


def dcgm_end_ns(t, origin_ns, k):
    """End of DCGM window k (ns, a whole microsecond): g[k] (after a restart, the new grid's)."""
    k = np.asarray(k, dtype=np.int64)
    end = _grid_end_ns(t, origin_ns, t.dcgm_phase_ms, 0, k)
    r = restart(t, origin_ns)
    if r is None:
        return end
    return np.where(k >= r[0], _grid_end_ns(t, r[2], t.exporter_restart_phase_ms, r[0], k), end)


def _newest_at(end_ns, approx, time_ns):
    """The largest index i with end_ns(i) <= time_ns, from an estimate within one of it."""
    time_ns = np.asarray(time_ns, dtype=np.int64)
    i = np.asarray(approx, dtype=np.int64)
    i = np.where(end_ns(i + 1) <= time_ns, i + 1, i)
    i = np.where(end_ns(i) > time_ns, i - 1, i)
    return i


def dcgm_window_at(t, origin_ns, time_ns):
    """Index of the newest DCGM window that ended at or before time_ns (may be 0 or negative
    before the first polls; after a restart, K - 1 until the new engine's first poll)."""
    old = _grid_window_at(t, origin_ns, t.dcgm_phase_ms, 0, time_ns)
    r = restart(t, origin_ns)
    if r is None:
        return old
    new = _grid_window_at(t, r[2], t.exporter_restart_phase_ms, r[0], time_ns)
    return np.where(new >= r[0], new, np.minimum(old, r[0] - 1))


def unserved(t, origin_ns, scrape_ns, k):
    """Whether scrapes starting at scrape_ns, to which the model gives window k, are served
    nothing: from the exporter's restart until a window of the new host engine with a value."""
    r = restart(t, origin_ns)
    if r is None:
        return np.zeros(np.shape(scrape_ns), bool)
    return (np.asarray(scrape_ns, dtype=np.int64) > r[1]) & (np.asarray(k) <= r[0])


def util_end_ns(t, origin_ns, j):
    """End of the driver's utilization window j (ns, a whole microsecond): u[j]."""
    j = np.asarray(j, dtype=np.int64)
    return (origin_ns // 1000 + np.rint((t.util_phase_ms + j * t.util_period_ms) * 1000.0)
            .astype(np.int64)) * 1000


def util_window_at(t, origin_ns, time_ns):
    """Index of the newest utilization window that ended at or before time_ns."""
    rel_ms = (np.asarray(time_ns, dtype=np.int64) - (origin_ns // 1000) * 1000) / 1e6
    approx = np.floor((rel_ms - t.util_phase_ms) / t.util_period_ms)
    return _newest_at(lambda j: util_end_ns(t, origin_ns, j), approx, time_ns)


def exporter_tick_ns(t, origin_ns, m):
    """Time of the cached exporter's collection tick m (ns)."""
    m = np.asarray(m, dtype=np.int64)
    return origin_ns + np.rint((t.exporter_phase_ms + m * t.exporter_period_ms) * 1e6).astype(np.int64)


def exporter_tick_at(t, origin_ns, time_ns):
    """Index of the cached exporter's newest collection tick at or before time_ns."""
    rel_ms = (np.asarray(time_ns, dtype=np.int64) - origin_ns) / 1e6
    approx = np.floor((rel_ms - t.exporter_phase_ms) / t.exporter_period_ms)
    return _newest_at(lambda m: exporter_tick_ns(t, origin_ns, m), approx, time_ns)


def latency_ns(t, z):
    """The exporter's latency for standard normal draws z (ns, never negative)."""
    z = np.asarray(z, dtype=np.float64)
    return np.rint(np.maximum(0.0, t.exporter_latency_ms + t.exporter_jitter_ms * z) * 1e6).astype(np.int64)


def exporter_read(t, origin_ns, seed, scrape_ns, z=None):
    """(read time ns, latency ns) of the exporter for scrapes starting at scrape_ns: on-scrape,
    the scrape itself with latency jitter z (one standard normal per scrape); cached, the newest
    collection tick, whose latency is keyed by the tick's index (z unused)."""
    scrape_ns = np.asarray(scrape_ns, dtype=np.int64)
    if t.exporter == "cached":
        m = exporter_tick_at(t, origin_ns, scrape_ns)
        return exporter_tick_ns(t, origin_ns, m), latency_ns(t, _noise.normal(seed, _EXPORTER_LATENCY, m))
    if z is None:
        z = np.zeros(scrape_ns.shape)
    return scrape_ns, latency_ns(t, z)


def served_window(t, origin_ns, seed, scrape_ns, z=None):
    """Index of the DCGM window that the exporter serves to scrapes starting at scrape_ns."""
    read, latency = exporter_read(t, origin_ns, seed, scrape_ns, z)
    return dcgm_window_at(t, origin_ns, read - latency)


# --- an offline recording's stored samples -----------------------------------------------------

@dataclass
class Schedule:
    """Per stored sample (arrays of one length, in time order) what it is and what it describes."""
    ts_ms: np.ndarray            # the stored time (int64 unix ms)
    window: np.ndarray           # index of the DCGM window served (keys the noise)
    window_begin_ns: np.ndarray  # that window: (begin, end]
    window_end_ns: np.ndarray
    util_window: np.ndarray      # index of GPU_UTIL's window (keys GPU_UTIL's noise)
    util_begin_ns: np.ndarray    # that window: (begin, end]
    util_end_ns: np.ndarray
    instant_ns: np.ndarray       # FB_USED's instant (= window_end_ns)
    repeat: np.ndarray           # bool: the same DCGM window as the previous stored sample
    skipped: int                 # DCGM windows between the first and last stored that none stores

    def __len__(self):
        return len(self.ts_ms)

    @property
    def offset_ms(self):
        """ts - window end, in ms (float) per stored sample."""
        return (self.ts_ms * 10**6 - self.window_end_ns) / 1e6


def _schedule_idealised(t, start_ns, seconds):
    period = int(t.dcgm_period_ms)
    k = np.arange(1, int(seconds * 1000) // period + 1, dtype=np.int64)
    end = dcgm_end_ns(t, start_ns, k)
    window = (end // 10**6) // period  # the tick number: the noise keys of the old output
    stamp = end if t.mode == "exact" else end + int(round(t.offset_ms * 1e6))
    return Schedule(ts_ms=stamp // 10**6, window=window, window_begin_ns=end - period * 10**6,
                    window_end_ns=end, util_window=window, util_begin_ns=end - period * 10**6,
                    util_end_ns=end, instant_ns=end.copy(), repeat=np.zeros(len(k), bool), skipped=0)


def schedule(t, start_ns, seconds, seed):
    """The samples Prometheus stores from a recording of `seconds` from start_ns (resolved t).

    realistic: the scrapes whose stored time lies in (start, start + seconds], each with the
    window the exporter served (scrapes before the first DCGM window with a value store nothing,
    nor does one whose stored time is not after the previous one's, as Prometheus keeps one
    sample per time); exact/offset: every window of the interval grid once."""
    if t.idealised:
        return _schedule_idealised(t, start_ns, seconds)
    start_ms = start_ns // 10**6
    end_ms = start_ms + int(seconds * 1000)
    interval_ns = t.scrape_interval_ms * 1e6
    n = np.arange(0, int((end_ms - start_ms) * 1e6 / interval_ns) + 2, dtype=np.int64)
    ideal = start_ns + np.rint(t.scrape_phase_ms * 1e6 + n * interval_ns).astype(np.int64)
    late = np.rint(np.abs(_noise.normal(seed, _SCRAPE_LATENESS, n)) * t.scrape_jitter_ms * 1e6).astype(np.int64)
    actual = ideal + late
    stored = np.where(late <= int(round(t.scrape_tolerance_ms * 1e6)), ideal, actual) // 10**6
    keep = (stored > start_ms) & (stored <= end_ms)
    read, latency = exporter_read(t, start_ns, seed, actual, _noise.normal(seed, _EXPORTER_LATENCY, n))
    k = dcgm_window_at(t, start_ns, read - latency)
    if t.exporter == "cached":
        keep &= read >= start_ns  # no collection yet: nothing to serve
    keep &= (k >= 1) & ~unserved(t, start_ns, actual, k)
    stored, k = stored[keep], k[keep]
    increasing = stored > np.maximum.accumulate(np.concatenate([[start_ms], stored[:-1]]))
    stored, k = stored[increasing], k[increasing]
    end = dcgm_end_ns(t, start_ns, k)
    j = util_window_at(t, start_ns, end)
    repeat = np.concatenate([[False], k[1:] == k[:-1]]) if len(k) else np.zeros(0, bool)
    skipped = int(k[-1] - k[0] + 1 - len(np.unique(k))) if len(k) else 0
    return Schedule(ts_ms=stored, window=k, window_begin_ns=dcgm_end_ns(t, start_ns, k - 1), window_end_ns=end,
                    util_window=j, util_begin_ns=util_end_ns(t, start_ns, j - 1),
                    util_end_ns=util_end_ns(t, start_ns, j), instant_ns=end.copy(), repeat=repeat,
                    skipped=skipped)
