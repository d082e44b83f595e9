"""precisionprobe DCGM emulator: a dcgm-exporter stand-in whose counters have a KNOWN ground truth.

NOT a source of real GPU measurements. It publishes what a GPU would report if each layer had
exactly the counter values of a profile (emulator/profiles/*.json, see profile.py) and the GPU were
idle between layers, so that attribution methods can be checked against the truth:

  * the six DCGM fields of the paper's Table I, with dcgm-exporter's series names, label set and
    number formats (exposition.py); the emulation is stated in every family's HELP text, in the
    modelName ("Emulated ...") and DCGM_FI_DRIVER_VERSION ("emulated") labels;
  * each value is the average over its collection interval ending at the sample time, of the
    ground-truth signal (truth.py), optionally with seeded multiplicative noise and multiplexing
    zeros (noise.py).

Two drivers:

  python3 -m precisionprobe.emulator live --events DIR --profile NAME|FILE --port P [--interval-ms 100]
      follows the events a running job writes (a CPU run too) and serves /metrics on loopback for
      a real Prometheus to scrape (live.py);
  python3 -m precisionprobe.emulator offline --out DIR --minutes 10 --interval-ms 100 --noise 0.005
      generates a DLRM-like timeline (timeline.py) and writes OpenMetrics for promtool backfill,
      the matching events and the ground truth (offline.py).
"""
from .exposition import EMULATOR_NAME
from .profile import METRICS, Profile

__all__ = ["EMULATOR_NAME", "METRICS", "Profile"]
