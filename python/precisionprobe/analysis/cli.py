"""The subcommands `analyze` and `compare` of `precisionprobe` (python3 -m precisionprobe).

  precisionprobe analyze RUN_DIR [--db FILE] [--prometheus URL | --emulate PROFILE] [--final]
                         [--no-refresh] [--job ID] [--format table|csv|json|markdown] [--no-layers]
                         [--html DIR]
  precisionprobe compare RUN_A RUN_B [--db-a FILE] [--db-b FILE] [--job-a ID] [--job-b ID]
                         [--format ...]

Failures are one line on stderr, `precisionprobe analyze: ...`, and exit status 1.
"""
import sqlite3
import sys
from pathlib import Path

from . import emulate, findings, render
from .compare import compare_jobs, render_comparison
from .extension import ExtensionError, connect
from .html_report import write_html
from .refresh import RefreshError, refresh
from .report import jobs_in, read_report
from .saved_estimates import estimates_stale, save_estimates

DATABASE_NAME = "precisionprobe.db"


class CommandError(RuntimeError):
    """A failure the user can act on; its message is printed as one line."""


def add_analyze(commands):
    p = commands.add_parser(
        "analyze", help="refresh a run's results and print where its GPU resources go, layer by layer",
        description="Refreshes RUN_DIR's results database from its event files and Prometheus, then "
                    "prints the report: per layer type and per layer, calls, time, share of GPU time and "
                    "the best value of each metric; the job's busy and idle time; plain findings; what "
                    "could not be resolved and what would resolve it.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the directory the hook client wrote (events-*.jsonl, "
                   "read with its subdirectories)")
    p.add_argument("--db", help=f"results database (default RUN_DIR/{DATABASE_NAME}; created if missing)")
    p.add_argument("--prometheus", metavar="URL", help="Prometheus (or compatible) with the GPUs' DCGM "
                   "metrics (default $PRECISIONPROBE_PROMETHEUS_URL, else http://127.0.0.1:9090)")
    p.add_argument("--emulate", metavar="PROFILE", help="no GPU: replay the run's layer calls on EMULATED "
                   "GPUs (the DCGM emulator with this profile, e.g. dlrm) served by a loopback Prometheus; the "
                   "counter values are the profile's, not measurements")
    p.add_argument("--emulate-out", metavar="DIR", help="where --emulate writes the emulated events and samples "
                   "(default RUN_DIR.emulated, beside the run; its precisionprobe.db is then the default --db)")
    p.add_argument("--final", action="store_true", help="the job has ended: fold every sample window, "
                   "including the last ones (always so with --emulate)")
    p.add_argument("--no-refresh", action="store_true", help="report the database as it is")
    p.add_argument("--job", help="only this job (default: every job in the database)")
    p.add_argument("--format", choices=render.FORMATS, default="table")
    p.add_argument("--no-layers", action="store_true", help="per layer type only")
    p.add_argument("--html", metavar="DIR", help="also write DIR/index.html, a self-contained report page with "
                   "its figures (PNG, also as files in DIR)")
    p.set_defaults(handler=analyze)


def add_compare(commands):
    p = commands.add_parser(
        "compare", help="compare two analyzed runs per layer type and metric",
        description="Per layer type, direction and metric: the values of two runs, their difference, and "
                    "whether it exceeds the combined 90%% uncertainty. Reads the results databases as "
                    "`analyze` left them (it does not refresh).")
    p.add_argument("run_a", metavar="RUN_A", help="run directory or results database")
    p.add_argument("run_b", metavar="RUN_B", help="run directory or results database")
    p.add_argument("--db-a", help=f"results database of RUN_A (default RUN_A/{DATABASE_NAME})")
    p.add_argument("--db-b", help=f"results database of RUN_B (default RUN_B/{DATABASE_NAME})")
    p.add_argument("--job-a", help="the job of RUN_A (needed when its database holds several)")
    p.add_argument("--job-b", help="the job of RUN_B (needed when its database holds several)")
    p.add_argument("--format", choices=render.FORMATS, default="table")
    p.set_defaults(handler=compare)


def _database(run, db):
    if db:
        return Path(db)
    run = Path(run)
    return run if run.is_file() else run / DATABASE_NAME


def _reports(conn, job, source):
    if estimates_stale(conn):
        save_estimates(conn)
    jobs = jobs_in(conn)
    if not jobs:
        raise CommandError(f"no layer events in {source}: the hook client writes events-HOST-PID.jsonl files "
                           "there (run the job under `precisionprobe run --out DIR -- COMMAND`)")
    if job is not None:
        if job not in jobs:
            raise CommandError(f"--job: no job {job!r} in {source} (jobs: {', '.join(jobs)})")
        jobs = [job]
    return [findings.complete(read_report(conn, j)) for j in jobs]


def analyze(args):
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise CommandError(f"run directory '{run_dir}' does not exist" if not run_dir.exists()
                           else f"'{run_dir}' is not a directory (RUN_DIR is where the events are)")
    if args.emulate and (args.prometheus or args.no_refresh):
        raise CommandError("--emulate: serves its own Prometheus, so it takes neither --prometheus nor --no-refresh")
    emulated = Path(args.emulate_out) if args.emulate_out else emulate.default_out(run_dir)
    database = _database(emulated if args.emulate else run_dir, args.db)
    if args.no_refresh and not database.is_file():
        raise CommandError(f"--no-refresh: no results database at '{database}'")
    if args.emulate:
        try:
            events_dir, openmetrics = emulate.replay(run_dir, emulated, args.emulate)
        except (ValueError, OSError) as e:
            raise CommandError(f"--emulate: {e}") from None
    conn = connect(database)
    try:
        if args.emulate:
            with emulate.Served(openmetrics) as url:
                refresh(conn, events_dir, url, final=True)
        elif not args.no_refresh:
            refresh(conn, run_dir, args.prometheus, args.final)
        reports = _reports(conn, args.job, f"'{run_dir}'")
    finally:
        conn.close()
    sys.stdout.write(render.render(reports, args.format, layers=not args.no_layers))
    if args.html:
        try:
            page = write_html(reports, args.html, layers=not args.no_layers)
        except (RuntimeError, OSError) as e:
            raise CommandError(f"--html: {e}") from None
        print(f"precisionprobe: report page {page}", file=sys.stderr)
    return 0


def _one_report(run, db, job, which):
    database = _database(run, db)
    if not database.is_file():
        raise CommandError(f"{which}: no results database at '{database}' (run `precisionprobe analyze` first)")
    conn = connect(database)
    try:
        reports = _reports(conn, job, f"'{database}'")
    finally:
        conn.close()
    if len(reports) > 1:
        raise CommandError(f"{which}: '{database}' holds several jobs ({', '.join(r.job_id for r in reports)}): "
                           f"choose one with --job-{which[-1].lower()}")
    return reports[0]


def compare(args):
    a = _one_report(args.run_a, args.db_a, args.job_a, "RUN_A")
    b = _one_report(args.run_b, args.db_b, args.job_b, "RUN_B")
    sys.stdout.write(render_comparison(a, b, compare_jobs(a, b), args.format))
    return 0


def run(args, prog):
    """Runs the chosen subcommand; a failure is one line on stderr and status 1."""
    try:
        return args.handler(args)
    except (CommandError, ExtensionError, RefreshError, sqlite3.Error) as e:
        print(f"{prog} {args.command}: {e}", file=sys.stderr)
        return 1
