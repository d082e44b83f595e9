"""Command line of the precisionprobe DCGM emulator (emulated counters, not measurements)."""
import argparse
import contextlib
import os
import sys

from .._path_kind import kind_of
from . import colocation
from .exposition import EMULATOR_NAME
from .offline import MAX_SECONDS
from .profile import Profile, ProfileError
from .timing import DCGM_FLOOR_MS, EXPORTERS, MAX_MS, MODES, Timing

PROFILE_HELP = "a profile JSON file, or the name of one shipped with the package: dlrm, resnext, gpt2"
DESCRIPTION = (f"{EMULATOR_NAME}: a dcgm-exporter stand-in for EMULATED GPUs. Its counters are "
               "window averages of a ground-truth profile, not measurements of any GPU; use it "
               "to test and benchmark attribution.")


def interval(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of ms: {text!r}") from None
    if value < DCGM_FLOOR_MS:
        raise argparse.ArgumentTypeError("the floor for DCGM profiling fields is 100 ms")
    if value > MAX_MS:
        raise argparse.ArgumentTypeError(f"at most {MAX_MS:.0f} ms (an hour), not {value}")
    return value


def fraction(text):
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("expected a fraction in [0, 1)")
    return value


MAX_MINUTES = MAX_SECONDS // 60  # an offline recording: a week (millions of events a day)
MAX_START_S = 4_102_444_800  # 2100-01-01T00:00:00Z: times in ns stay far inside int64


def number(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_number(text):
    value = number(text)
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, not {text!r}")
    return value


def at_most(high, what):
    """A positive number up to high, as argparse's type; what says what high is."""
    def parse(text):
        value = positive_number(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"at most {high:g} ({what}), not {text!r}")
        return value
    return parse


def whole_number(low, high):
    """An integer in [low, high], as argparse's type."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, not {value}")
        return value
    return parse


# Timing fields and their flags (timing.py documents each; Timing() validates the values).
TIMING_FLAGS = [
    ("dcgm_phase_ms", "end of DCGM window 0 after the start, ms (default: from --seed)"),
    ("dcgm_drift_ppm", "DCGM's period runs this much longer than nominal (default 15)"),
    ("dcgm_wander_ms", "DCGM's polls stray up to this far from a straight grid, slowly, ms (default 0.2)"),
    ("dcgm_poll_jitter_ms", "standard deviation of each DCGM poll's own lateness, ms (default 0.02)"),
    ("util_period_ms", "the driver's GPU_UTIL sample period, ms (default 166.67 = 1/6 s)"),
    ("util_phase_ms", "end of the driver's window 0 after the start, ms (default: from --seed)"),
    ("exporter_period_ms", "--exporter cached: its collection ticker, whole ms (default: -c)"),
    ("exporter_phase_ms", "--exporter cached: the ticker's phase, ms (default: from --seed)"),
    ("exporter_latency_ms", "the newest window served ended at least this long before the read, ms "
                            "(default 30 offline, 300 live; live exact/offset: as --lag-ms)"),
    ("exporter_jitter_ms", "standard deviation of that latency, ms (default 2)"),
    ("scrape_interval_ms", "offline: Prometheus' scrape_interval, whole ms (default: -c; at least 1)"),
    ("scrape_phase_ms", "offline: when scrapes happen modulo the interval, ms (default: from --seed)"),
    ("scrape_jitter_ms", "offline: scale of each scrape's lateness, ms (default 1; below a third "
                         "of the scrape interval)"),
    ("scrape_tolerance_ms", "offline: Prometheus' --scrape.timestamp-tolerance: a scrape this late or "
                            "less is stored at its ideal tick, clamped to 1%% of the interval as Prometheus "
                            "does, ms (default 2; 0: never)"),
    ("exporter_restart_s", "dcgm-exporter (and the DCGM host engine it embeds) restarts this long after "
                           "the start, s: nothing is served while it is down, then DCGM's windows lie on a "
                           "new grid (default: never)"),
    ("exporter_down_s", "with --exporter-restart-s: how long it is down, s (default 5)"),
    ("exporter_restart_phase_ms", "with --exporter-restart-s: the restarted DCGM's first poll after it came "
                                  "back, ms (default: from --seed)"),
    ("offset_ms", "--timing offset: stamp = window end + this, ms (default 20)"),
]


def timing_from(args):
    """The Timing the flags give (only those given; Timing and timing.resolve validate)."""
    given = {name: getattr(args, name) for name, _ in TIMING_FLAGS if getattr(args, name) is not None}
    if args.exporter is not None:
        given["exporter"] = args.exporter
    return Timing(mode=args.timing, subms_phase=args.subms_phase, **given)


def parser():
    p = argparse.ArgumentParser(prog="python3 -m precisionprobe.emulator", description=DESCRIPTION)
    commands = p.add_subparsers(dest="command", required=True)

    def common(sub):
        sub.add_argument("-c", "--interval-ms", type=interval, default=1000,
                         help="collection interval in whole ms, as dcgm-exporter's -c (default 1000, floor 100, "
                              "at most an hour; dcgm-exporter's own default is 30000)")
        sub.add_argument("--noise", type=fraction, default=0.0,
                         help="multiplicative noise, std as a fraction (0.005 = 0.5%%; default 0)")
        sub.add_argument("--mux-zero", type=fraction, default=0.0,
                         help="probability that a DCGM_FI_PROF_* sample reads 0 (multiplexing; default 0)")
        sub.add_argument("--seed", type=whole_number(0, 2**63 - 1), default=0,
                         help="seed of noise, of the timing model's phases and jitter (and offline timeline)")
        timing = sub.add_argument_group(
            "timing", "when samples are stored and which GPU time they describe (default realistic: "
            "as DCGM, the driver, dcgm-exporter and Prometheus do; exact and offset are IDEALISED)")
        timing.add_argument("--timing", choices=MODES, default="realistic",
                            help="realistic (default); exact: every window once, stamped with its end "
                                 "(IDEALISED); offset: stamped end + --offset-ms (IDEALISED)")
        timing.add_argument("--exporter", choices=EXPORTERS, default=None,
                            help="on-scrape: reads DCGM when scraped (dcgm-exporter 4.x, default); "
                                 "cached: its own ticker (2.x, 3.x)")
        for name, text in TIMING_FLAGS:
            timing.add_argument("--" + name.replace("_", "-"), dest=name, type=number, default=None,
                                help=text, metavar="PPM" if name.endswith("_ppm") else "S" if name.endswith("_s") else "MS")
        timing.add_argument("--subms-phase", action="store_true",
                            help="exact/offset: window grid at a sub-millisecond phase, so stamps truncate "
                                 "window ends to ms (implied by realistic)")

    live = commands.add_parser(
        "live", help="follow a running job's layer events and serve emulated /metrics",
        description=DESCRIPTION + " live: follows the JSON Lines a running job writes and serves "
        "/metrics on 127.0.0.1 for Prometheus to scrape (realistic: without timestamps, so "
        "Prometheus stores its scrape time); events rewritten to name the emulated "
        "GPUs go to --mirror, which is what pp_refresh should read.")
    live.add_argument("--events", required=True, help="directory the hook client writes (--out of precisionprobe run)")
    live.add_argument("--profile", required=True, help=PROFILE_HELP)
    live.add_argument("--port", type=whole_number(0, 65535), default=9400,
                      help="loopback port (default 9400; 0: any free)")
    live.add_argument("--gpus", type=whole_number(1, 1024), default=1, help="emulated GPUs (default 1)")
    live.add_argument("--gpu-uuid", action="append", default=[],
                      help="UUID of emulated GPU i, in order (repeat; default: generated per host and index)")
    live.add_argument("--cpu-gpu", type=int, default=0,
                      help="emulated GPU that runs the events of CPU runs (gpu_uuid \"cpu\"; default 0)")
    live.add_argument("--mirror", help="where rewritten events go (default: EVENTS.emulated)")
    live.add_argument("--lag-ms", type=number, default=None,
                      help="exact/offset: publish windows that ended this long ago (events arrive late; "
                           "default 500); the same parameter as --exporter-latency-ms")
    live.add_argument("--poll-ms", type=whole_number(1, 60000), default=50,
                      help="how often to read new events (default 50)")
    live.add_argument("--hostname", help="Hostname label (default: this host's name)")
    live.add_argument("--pod", default="", help="pod label")
    live.add_argument("--namespace", default="", help="namespace label")
    live.add_argument("--container", default="", help="container label")
    live.add_argument("--duration", type=positive_number,
                      help="stop after this many seconds, or once the idle tail after the latest event has been "
                           "served (5 s, or the data path's delay where longer), whichever is later "
                           "(default: until SIGINT/SIGTERM)")
    common(live)

    offline = commands.add_parser(
        "offline", help="generate a DLRM-like recording: OpenMetrics, events, ground truth",
        description=DESCRIPTION + " offline: writes OUT/metrics.om (for `promtool tsdb "
        "create-blocks-from openmetrics`), OUT/events/*.jsonl, OUT/truth.json and "
        "OUT/samples_truth.csv (per stored sample: the windows and instant it describes).")
    offline.add_argument("--out", required=True, help="output directory")
    offline.add_argument("--minutes", type=at_most(MAX_MINUTES, "a week"), default=10.0,
                         help="recording length (default 10, at most a week)")
    offline.add_argument("--profile", default="dlrm", help=PROFILE_HELP + " (default dlrm)")
    offline.add_argument("--start", type=whole_number(0, MAX_START_S), default=None,
                         help="recording start, unix seconds up to 2100-01-01 (default 2024-05-01T10:00:00Z)")
    offline.add_argument("--mig", default=None, metavar="PROFILES|N",
                         help="one GPU split into MIG instances, each running its own job: GPU instance "
                              "profiles (4g.40gb,3g.40gb) or a count (emulator/mig.py)")
    colocation.add_arguments(offline)
    common(offline)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        args.timing = timing_from(args)
        profile = Profile.named(args.profile)
        if args.command == "live":
            from . import live
            if args.gpus < 1:
                raise ValueError("--gpus must be at least 1")
            return live.run(args, profile)
        if args.minutes <= 0:
            raise ValueError("--minutes must be positive")
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise ValueError(f"--out: '{args.out}' is {kind_of(args.out)}, not a folder")
        if args.mig is not None and colocation.requested(args):
            raise ValueError("--mig and --jobs cannot be combined: each MIG instance runs one job of its own")
        return offline_command(args, profile, argv)
    except (ProfileError, ValueError, OSError) as error:
        print(f"{EMULATOR_NAME}: error: {error}", file=sys.stderr)
        return 2


@contextlib.contextmanager
def writing_out(out):
    """Says which option names the folder that a write failed in (the error names a path only)."""
    try:
        yield
    except OSError as error:
        raise ValueError(f"--out: cannot write '{error.filename or out}': {error.strerror or error}") from None


def offline_command(args, profile, argv):
    """The `offline` command, its arguments checked: records, writes OUT, says what it wrote."""
    from . import offline
    start = args.start if args.start is not None else offline.DEFAULT_START_S
    if args.mig is not None:
        from . import mig
        rec = mig.record(args.minutes * 60, args.interval_ms, args.noise, args.seed, profile,
                         mig.parse_layout(args.mig), args.mux_zero, start, timing=args.timing)
        with writing_out(args.out):
            paths = mig.write(rec, args.out, ["python3", "-m", "precisionprobe.emulator", *sys.argv[1:]])
        print(f"{EMULATOR_NAME}: emulated GPU {rec.parent_uuid} split into {len(rec.instances)} MIG instances")
        print("\n".join(mig.summary(rec)))
        print(f"  openmetrics: {paths['openmetrics']}\n  events: {paths['events']}\n  mig: {paths['mig']}")
        return 0
    if colocation.requested(args):
        with writing_out(args.out):
            return colocation.main(args, profile, start, sys.argv[1:] if argv is None else argv)
    rec = offline.record(args.minutes * 60, args.interval_ms, args.noise, args.seed, profile,
                         args.mux_zero, start, timing=args.timing)
    with writing_out(args.out):
        paths = offline.write(rec, args.out, ["python3", "-m", "precisionprobe.emulator", *sys.argv[1:]])
    print(f"{EMULATOR_NAME}: {len(rec.events)} layer events, {len(rec.tick_ms)} samples per "
          f"metric of emulated GPU {rec.gpu.uuid} (interval {rec.interval_ms} ms, noise {rec.noise})")
    print(f"  timing {offline.describe_timing(rec)}")
    for what, path in paths.items():
        print(f"  {what}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
