"""precisionprobe DCGM emulator: a dcgm-exporter stand-in whose counters have a KNOWN ground truth.

NOT a source of real GPU measurements. It publishes what a GPU would report if each layer had
exactly the counter values of a profile (emulator/profiles/*.json, see profile.py) and the GPU were
idle between layers, so that attribution methods can be checked against the truth:

  * the six DCGM fields of the paper's Table I, with dcgm-exporter's series names, label set and
    number formats (exposition.py); the emulation is stated in every family's HELP text, in the
    modelName ("Emulated ...") and DCGM_FI_DRIVER_VERSION ("emulated") labels;
  * each value is what its field describes on a real GPU, computed from the ground-truth signal
    (truth.py): a DCGM_FI_PROF_* value the average over its DCGM window, GPU_UTIL the average
    over the driver's utilization period, FB_USED the value at the poll's instant; optionally
    with seeded multiplicative noise and multiplexing zeros (noise.py), keyed by the window, so
    that a window stored twice has the same values;
  * stored at the times a real cluster stores them (timing.py), below.

Timing: by default ('realistic') the emulator reproduces when a real cluster stores a sample and
which GPU time it describes (timing.py). A stored time is Prometheus' scrape time, not the end of
the window. Each parameter is a field of timing.Timing and a flag (dcgm_drift_ppm:
--dcgm-drift-ppm; the DCGM period is -c/--interval-ms); [c]: chosen, the sources leave it open.

  behaviour                                  | real component          | parameter            | default
  -------------------------------------------|-------------------------|----------------------|-----------------
  PROF_* = average over (previous poll, poll]| DCGM hostengine         | dcgm_period_ms (-c)  | CLI 1000, >= 100
  the polls' phase; the first has no value   | DCGM                    | dcgm_phase_ms        | seed (in us)
  polls stamped in us, never sent onward     | DCGM                    | -                    | -
  period a little long: the phase drifts late| DCGM scheduler (re-bases| dcgm_drift_ppm       | 15 ppm [c]
                                             | on the actual poll time)|                      |
  the polls stray from that straight grid:   | DCGM scheduler          | dcgm_wander_ms,      | 0.2 ms,
  slowly (load), and each by a little        |                         | dcgm_poll_jitter_ms  | 0.02 ms [c]
  GPU_UTIL = busy % of the driver's period   | GPU driver (NVML), read | util_period_ms       | 1000/6 ms
  (1/6 s to 1 s by product), on its own grid | by DCGM at the poll     | util_phase_ms        | seed [c]
  FB_USED = memory in use at the poll        | NVML, read by DCGM      | -                    | -
  no timestamps; a scrape reads DCGM's latest| dcgm-exporter >= 4.0.0  | exporter on-scrape   | on-scrape
  values ...                                 |                         |                      |
  ... or gets its own ticker's last reading  | dcgm-exporter 2.x, 3.x  | exporter cached,     | -c, seed
                                             |                         | exporter_period_ms,  |
                                             |                         | exporter_phase_ms    |
  newest window served ends this long before | DCGM making a polled    | exporter_latency_ms, | 30 ms offline,
  the read, less the request's delivery      | value available; the    | exporter_jitter_ms   | 300 ms live [c];
  (1.3-2.7 ms measured on loopback)          | request's way           | (Gaussian)           | 2 ms
  scrapes at a fixed phase per target        | Prometheus (hash of the | scrape_interval_ms,  | -c, seed
                                             | target mod interval)    | scrape_phase_ms      |
  each scrape starts a little late           | Go timer latency        | scrape_jitter_ms     | 1 ms
  (before the next tick: jitter < 1/3 of it | (one scrape at a time)  |                      |
  stored time = scrape start, whole ms       | Prometheus              | -                    | -
  (truncated; taken before the request)      |                         |                      |
  stored time snaps back to the ideal tick   | Prometheus >= 2.51;     | scrape_tolerance_ms  | min(1% of the
  when the scrape is at most this late       | 2.22-2.50 only over     |                      | interval, 2 ms);
  (a given tolerance is clamped to 1% of the | 200 ms intervals (2 ms) |                      | 0: never
  interval, as Prometheus does)              |                         |                      |
  a window stored twice has the same values  | dcgm-exporter serving   | (noise keyed by the  | -
                                             | the same DCGM sample    | window index)        |
  after a job: the GPU idles (the profile's  | dcgm-exporter and       | tail_seconds()       | 5 s, or the path's
  idle values, FB_USED the job's memory),    | Prometheus: neither     | (TAIL_SECONDS)       | delay where longer
  DCGM's windows go on and are stored; the   | stops with a job (DCGM  |                      | [c]
  sample of the last events is among them    | polls the idle GPU)     |                      |
  a restart mid-job: nothing served (stored)| dcgm-exporter restarted | exporter_restart_s,  | never,
  for a few seconds, then DCGM's polls on a  | (pod rescheduled, crash | exporter_down_s,     | 5 s [c],
  new grid whose phase is anywhere in a      | loop, upgrade) with the | exporter_restart_    | seed
  period: the offset steps, it does not drift| host engine it embeds   | phase_ms             |

The offline driver needs the scrape schedule (scrape_*); the live one leaves it to the real
Prometheus that scrapes it. The behaviours come from DCGM's cache manager and GPM manager, NVML's
header, the exporter's code (its 2.x/3.x pipeline, its 4.x server and collector) and Prometheus'
scrape loop, read for this model; the request's delivery was measured with Debian's Prometheus
2.42 on loopback. On-scrape is the default because it is what current exporters (4.x) do. Left
open by those sources, so chosen here: the size of DCGM's drift and of its polls' irregularity, how long a polled value takes
to become servable (30 ms offline; users report lags of up to about 300 ms), where the driver's
utilization period lies relative to DCGM's polls, and how older GPUs' closed profiling module
aligns its windows (modelled as on the GPM path). Live, the default latency is 300 ms, the upper
end of those reports, because the hook client flushes events every 0.2 s and the emulator reads
them every 50 ms: a window's events must have arrived before it is served (live.py). Not modelled:
VictoriaMetrics, which stores synthetic times on an exact grid instead of scrape times.

Consequences: a stored sample at T describes a window that ended 30 ms to about one period (plus
the cache's age, with a cached exporter) before T, and that offset moves as DCGM's phase drifts;
scraping at the DCGM period stores some windows twice and skips others; scraping at 1 s keeps one
100 ms window in ten.

After a job, in every mode, offline and live: real dcgm-exporter and Prometheus do not stop when a
job does, so the sample describing its last events is stored up to the exporter's latency, two
DCGM periods and a scrape interval later, and idle windows follow. The offline recordings go on
for timing.tail_seconds() after their end (5 s, or the path's own delay where longer: timing.py
says why not the minute pp_refresh asks for), and the live emulator serves that long after the
latest event before --duration stops it. The idle GPU reads the profile's idle values, FB_USED
the job's memory still allocated (offline.py says why), so a final pp_refresh finds the sample
of every event.

IDEALISED modes, for callers that need exact windows (Timing(mode=...), --timing):
  exact   every window once, stamped with its end: a sample at T is the average over
          (T - interval, T] for all six fields (the emulator's behaviour before the timing
          model, reproduced bit for bit); live, as an explicit timestamp in the exposition, the
          newest window that ended --lag-ms (default 500) ago;
  offset  the same windows and values, stamped end + --offset-ms (default 20);
  --subms-phase (both): the window grid at a sub-millisecond phase, so the stamps truncate window
          ends to the millisecond: what millisecond rounding alone does.

Two drivers:

  python3 -m precisionprobe.emulator live --events DIR --profile NAME|FILE --port P [--interval-ms 100]
      follows the events a running job writes (a CPU run too) and serves /metrics on loopback for
      a real Prometheus to scrape (live.py); /served says what each scrape was served (test support);
  python3 -m precisionprobe.emulator offline --out DIR --minutes 10 --interval-ms 100 --noise 0.005
      generates a DLRM-like timeline (timeline.py) and writes OpenMetrics for promtool backfill,
      the matching events, the ground truth and per stored sample what it describes (offline.py);
      with --mig 4g.40gb,3g.40gb, one GPU split into MIG instances, each running its own job with
      its own truth, labelled as dcgm-exporter labels GPU instances (mig.py has its table);
      with --jobs N (2 or more) and --sharing time-sliced|concurrent, N jobs share the one
      emulated GPU: taking turns (GPU time-slicing) or overlapping (MPS), one event file and one
      truth per job (colocation.py, whose table says which behaviour models which component and
      what is assumed: summed counters clipped at their bound, the union of busy times, memory
      of every process added up).
"""
from .exposition import EMULATOR_NAME
from .profile import METRICS, Profile
from .timing import Timing

__all__ = ["EMULATOR_NAME", "METRICS", "Profile", "Timing"]
