"""The subcommands `analyze`, `compare`, `export` and `serve` of `precisionprobe`
(python3 -m precisionprobe).

  precisionprobe analyze RUN_DIR [--db FILE] [--prometheus URL | --emulate PROFILE]
                         [--final [--wait-seconds S]] [--no-refresh] [--job ID]
                         [--format table|csv|json|markdown] [--no-layers] [--html DIR]
  precisionprobe compare RUN_A RUN_B [--db-a FILE] [--db-b FILE] [--job-a ID] [--job-b ID]
                         [--format ...]
  precisionprobe export RUN_DIR --openmetrics FILE [--db ... --job ID, --wait-seconds S, as analyze]
  precisionprobe serve RUN_DIR --port N [--listen ADDR] [--refresh-seconds S]
                       [--db ... --job ID, as analyze]

Failures are one line on stderr, `precisionprobe analyze: ...`, and exit status 1.
"""
import os
import signal
import sqlite3
import stat
import sys
import threading
from pathlib import Path

from . import figures, openmetrics, render, serve as endpoint
from .command_error import CommandError
from .compare import compare_jobs, comparison_warnings, render_comparison
from .extension import WAL_SHM_HINT, ExtensionError, connect, open_read_only, wal_without_shm
from .html_report import write_html
from .refresh import WAIT_DEFAULT_S, RefreshError, refresh
from .report import ReportError, check_report_types, jobs_in, read_report
from .run_database import (DATABASE_NAME, checked_run_database, database_path, open_refreshed, read_reports,
                           refreshed_reports, refuse_a_path_sqlite_cannot_name, refuse_what_is_not_a_file,
                           saved_estimates_current, source_of)
from .write_lock import WriteLockTimeout


def _add_run_options(p):
    """RUN_DIR and the options that say which database to read and how to refresh it first:
    the same for analyze, export and serve."""
    p.add_argument("run_dir", metavar="RUN_DIR", help="the directory the hook client wrote (every *.jsonl "
                   "file in it and its subdirectories is read as events)")
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
    p.add_argument("--no-refresh", action="store_true", help="use the database as it is")
    p.add_argument("--job", help="only this job (default: every job in the database)")


def _add_wait_option(p):
    """--wait-seconds, of the commands whose --final refresh runs once (analyze, export)."""
    p.add_argument("--wait-seconds", metavar="S", type=float,
                   help="with --final: while the job's last events lie past their GPU's last DCGM sample and "
                        "ended less than S seconds ago, refresh again every second for Prometheus to store "
                        f"their samples (default {WAIT_DEFAULT_S:g}: a 15 s scrape interval and dcgm-exporter's "
                        "latency; 0: no wait)")


def _wait_seconds(args):
    """--wait-seconds checked; the seconds a final refresh may wait (0 without --final)."""
    if args.wait_seconds is None:
        return WAIT_DEFAULT_S if args.final and not args.emulate and not args.no_refresh else 0.0
    if not 0 <= args.wait_seconds <= 3600:
        raise CommandError(f"--wait-seconds: must be 0 or more and at most 3600 (an hour), got {args.wait_seconds:g}")
    if args.emulate or args.no_refresh or not args.final:
        raise CommandError("--wait-seconds: waits for the samples of a --final refresh, so it takes --final" +
                           (" and not --emulate (the emulated samples are all there)" if args.emulate else
                            " and not --no-refresh" if args.no_refresh else ""))
    return args.wait_seconds


def add_analyze(commands):
    p = commands.add_parser(
        "analyze", help="refresh a run's results and print where its GPU resources go, layer by layer",
        description="Refreshes RUN_DIR's results database from its event files and Prometheus, then "
                    "prints the report: per layer type and per layer, calls, time, share of GPU time and "
                    "the best value of each metric; the job's busy and idle time; plain findings; what "
                    "could not be resolved and what would resolve it.")
    _add_run_options(p)
    _add_wait_option(p)
    p.add_argument("--format", choices=render.FORMATS, default="table",
                   help="table (default: aligned text), csv, json or markdown")
    p.add_argument("--no-layers", action="store_true", help="per layer type only")
    p.add_argument("--html", metavar="DIR", help="also write DIR/index.html, a self-contained report page with "
                   "its figures (PNG, also as files in DIR)")
    p.set_defaults(handler=analyze)


def add_export(commands):
    p = commands.add_parser(
        "export", help="write a run's per-layer-type profile as OpenMetrics (node-exporter's textfile collector)",
        description="Refreshes RUN_DIR's results database as analyze does, then writes the jobs' series "
                    "(per job and per layer type and direction; docs/export.md lists them) as OpenMetrics "
                    "text to FILE, replacing it in one step so that a collector never reads half a file.")
    _add_run_options(p)
    _add_wait_option(p)
    p.add_argument("--openmetrics", metavar="FILE", required=True,
                   help="where to write (e.g. /var/lib/node_exporter/textfile/precisionprobe.prom); - for stdout")
    p.set_defaults(handler=export)


def add_serve(commands):
    p = commands.add_parser(
        "serve", help="serve a run's per-layer-type profile on an HTTP /metrics endpoint for Prometheus",
        description="Refreshes RUN_DIR's results database as analyze does (unless --no-refresh), then "
                    "answers GET /metrics with the series export writes, read from the database again "
                    "whenever it changed; with --refresh-seconds, refreshes it that often. Runs until "
                    "interrupted (Ctrl-C, SIGTERM).")
    _add_run_options(p)
    p.add_argument("--port", type=int, required=True, help="TCP port to listen on (0: one the kernel chooses, "
                   "printed on stderr)")
    p.add_argument("--listen", metavar="ADDR", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every IPv4 "
                        "interface, :: for IPv6)")
    p.add_argument("--refresh-seconds", metavar="S", type=float,
                   help="refresh the database every S seconds while serving (default: only at start)")
    p.add_argument("--retention-minutes", metavar="M", type=int,
                   help="keep only the last M minutes of events and samples in the database "
                        "(event_retention_minutes): the overlap means keep everything, the estimator the "
                        "sums of every window (default: keep everything)")
    p.set_defaults(handler=serve)


def add_compare(commands):
    p = commands.add_parser(
        "compare", help="compare two analyzed runs per layer type and metric",
        description="Per layer type, direction and metric: the values of two runs, their difference, and "
                    "whether it exceeds the combined 90% uncertainty. Reads the results databases as "
                    "`analyze` left them (it does not refresh).")
    p.add_argument("run_a", metavar="RUN_A", help="run directory or results database")
    p.add_argument("run_b", metavar="RUN_B", help="run directory or results database")
    p.add_argument("--db-a", help=f"results database of RUN_A (default RUN_A/{DATABASE_NAME})")
    p.add_argument("--db-b", help=f"results database of RUN_B (default RUN_B/{DATABASE_NAME})")
    p.add_argument("--job-a", help="the job of RUN_A (needed when its database holds several)")
    p.add_argument("--job-b", help="the job of RUN_B (needed when its database holds several)")
    p.add_argument("--format", choices=render.FORMATS, default="table",
                   help="table (default: aligned text), csv, json or markdown")
    p.set_defaults(handler=compare)


def analyze(args):
    args.wait_seconds = _wait_seconds(args)
    if args.html and Path(args.html).is_file():  # (a device or named pipe gets the page alone)
        raise CommandError(f"--html: '{args.html}' is a file; give a folder (its index.html and figures go there)")
    if args.html:
        try:
            figures.check_matplotlib()
        except RuntimeError as e:
            raise CommandError(f"--html: {e}") from None
    reports = refreshed_reports(args)
    sys.stdout.write(render.render(reports, args.format, layers=not args.no_layers))
    sys.stdout.flush()  # (before a page --html writes to /dev/stdout)
    if args.html:
        try:
            page = write_html(reports, args.html, layers=not args.no_layers)
        except OSError as e:
            raise CommandError(f"--html: cannot write '{e.filename}': {e.strerror}" if e.filename and e.strerror
                               else f"--html: {e}") from None
        except RuntimeError as e:
            raise CommandError(f"--html: {e}") from None
        print(f"precisionprobe: report page {page}", file=sys.stderr)
    return 0


def _check_openmetrics_path(path):
    """--openmetrics refused where it cannot name a file, before the refresh (which may take
    minutes): empty (resolved, it would be the working folder), ending in / (renamed over, a
    missing folder's name would become a file), a folder, or in a folder that does not exist."""
    if not str(path):
        raise CommandError("--openmetrics: must not be empty: give a file (or - for stdout)")
    if str(path).endswith(os.sep):
        raise CommandError(f"--openmetrics: '{path}' ends in '{os.sep}', so it names a folder: give a file, "
                           f"such as '{path}precisionprobe.prom'")
    if os.path.isdir(path):
        raise CommandError(f"--openmetrics: '{path}' is a folder: give a file, such as "
                           f"'{os.path.join(path, 'precisionprobe.prom')}'")
    if not os.path.isdir(os.path.dirname(os.path.realpath(path))):
        raise CommandError(f"--openmetrics: cannot write '{path}': its folder "
                           f"'{os.path.dirname(os.path.realpath(path))}' does not exist")


def write_atomically(path, text):
    """Writes text to path through a temporary file beside it, renamed over it: a reader (node-
    exporter's textfile collector) sees the old file or the new one, never a part. The temporary
    name does not end in .prom, which the collector would read. Permissions follow the umask,
    so that a collector running as another user can read the file. A symbolic link is followed
    (the file it names is replaced; the link stays), and what is neither a file nor a folder
    (/dev/null, /dev/stdout, a named pipe) is written in place: renamed over, it would become a
    plain file."""
    given = path
    _check_openmetrics_path(given)
    try:
        mode = os.stat(given).st_mode
    except OSError:
        mode = None  # (nothing there yet, or a link to nothing: made below)
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        try:
            with open(given, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise CommandError(f"--openmetrics: cannot write '{given}': {e.strerror or e}") from None
        return
    path = Path(os.path.realpath(given))
    temporary = None
    try:
        # A name of its own (not only the pid: in a container every export may run as pid 1, and
        # one killed between writing and renaming would leave a name that the next one finds taken).
        while temporary is None:
            candidate = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                temporary = candidate
            except FileExistsError:
                continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException as e:
        if temporary is not None and temporary.exists():
            temporary.unlink()
        if isinstance(e, OSError):
            raise CommandError(f"--openmetrics: cannot write '{given}': {e.strerror or e}") from None
        raise


def export(args):
    args.wait_seconds = _wait_seconds(args)
    if args.openmetrics != "-":
        _check_openmetrics_path(args.openmetrics)  # (before the refresh, which may take minutes)
    reports = refreshed_reports(args, complete=False, layers=False)
    text = openmetrics.exposition(reports)
    if args.openmetrics == "-":
        sys.stdout.write(text)
    else:
        write_atomically(args.openmetrics, text)
    return 0


def _exposition_reader(database, job, read_only=False, refreshing=False):
    """What serve answers a scrape with: the database read anew whenever it changed, every job
    (or --job's only; none yet is an empty exposition, not an error: the job may not have
    started). A database removed while serving is an error, not made anew empty by the scrape
    (Prometheus would see every series end, and no target down); refreshing: whether a refresh
    of serve's own will make it anew."""
    def read():
        if not os.path.exists(database):  # (sqlite3 would make a new, empty one)
            raise CommandError(f"the results database '{database}' was removed while serving; a scrape does not "
                               "make it anew: " + ("the next refresh does, from RUN_DIR's events" if refreshing else
                                                   "`precisionprobe analyze` does, or a restart of serve"))
        conn = connect(database, read_only=read_only)
        try:
            # (A scrape does not wait for a refresh of serve's own, which may wait minutes for
            # Prometheus: the scraper's timeout is seconds.)
            saved_estimates_current(conn, wait_s=0)
            check_report_types(conn, f"'{database}'")
            jobs = [j for j in jobs_in(conn) if job is None or j == job]
            return openmetrics.exposition([read_report(conn, j, layers=False) for j in jobs])
        finally:
            conn.close()
    return endpoint.when_changed(read, [database, Path(f"{database}-wal")])


def _refresher(run_dir, database, args):
    def again():
        conn = connect(database)
        try:
            refresh(conn, run_dir, args.prometheus, args.final, retention_minutes=args.retention_minutes,
                    running=True)
        finally:
            conn.close()
    return again


def _stop(signum, frame):
    raise SystemExit(0)


def serve(args):
    if args.refresh_seconds is not None and not 0 < args.refresh_seconds <= 86400:
        raise CommandError("--refresh-seconds: must be more than 0 and at most 86400 (a day), "
                           f"got {args.refresh_seconds:g}")
    if args.retention_minutes is not None and args.retention_minutes < 0:
        raise CommandError(f"--retention-minutes: must be 0 or more, got {args.retention_minutes}")
    if args.final and args.refresh_seconds is not None:
        raise CommandError("--final: folds every sample window, as once a job has ended, so a refresh every "
                           "--refresh-seconds would leave the events of a job still running that come later "
                           "unattributed: serve a running job without --final (and refresh once with --final after it)")
    if args.emulate and args.refresh_seconds is not None:
        raise CommandError("--refresh-seconds: an emulated run is replayed once, when serve starts; "
                           "it has nothing to refresh")
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port: must be 0 to 65535, got {args.port}")
    if not args.listen.strip():  # (bound as given, '' is every interface: an unset $VARIABLE would expose it)
        raise CommandError("--listen: must not be empty, which would listen on every interface: leave it out for "
                           "127.0.0.1 (this machine only), or say 0.0.0.0 for every IPv4 interface")
    run_dir, database = checked_run_database(args)
    # Bound before the refresh (which may wait minutes for Prometheus, or replay a run): a port in
    # use is said at once. A scrape meanwhile waits in the socket's queue.
    try:
        read_only = bool(args.no_refresh and not args.emulate)
        reader = _exposition_reader(database, args.job, read_only, refreshing=bool(args.refresh_seconds))
        server = endpoint.listen(args.listen, args.port, reader, args.prog)
    except (OSError, OverflowError) as e:
        raise CommandError(f"--listen/--port: cannot listen on {args.listen}:{args.port}: "
                           f"{getattr(e, 'strerror', None) or e}") from None
    try:
        conn = open_refreshed(args)
        try:
            jobs = jobs_in(conn)
        finally:
            conn.close()
    except BaseException:
        server.server_close()
        raise
    if args.job is not None and args.job not in jobs:
        # Served all the same (empty until it appears: the job may not have started), but said.
        print(f"{args.prog}: warning: --job: no job {args.job!r} in {source_of(args)} yet (jobs: "
              f"{', '.join(render.shown(j) for j in jobs) or 'none'}): /metrics is empty until it appears",
              file=sys.stderr, flush=True)
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"{args.prog}: serving http://{shown}:{port}/metrics from '{database}'"
          + (f", refreshed every {args.refresh_seconds:g} s" if args.refresh_seconds else ""),
          file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        endpoint.serve(server, _refresher(run_dir, database, args), args.refresh_seconds, args.prog)
    except KeyboardInterrupt:
        pass
    return 0


def _is_results_database(database, which):
    """Whether database holds analyze's results, read without changing the file; a file SQLite
    cannot read is an error saying why (not "no results")."""
    try:
        probe = open_read_only(database)
        try:
            return probe.execute("SELECT count(*) FROM sqlite_master WHERE name = 'report_jobs'").fetchone()[0] > 0
        finally:
            probe.close()
    except sqlite3.DatabaseError as e:
        if "file is not a database" in str(e):
            raise CommandError(f"{which}: '{database}' is not an SQLite database (SQLite: {e}); it was not "
                               "changed") from None
        raise CommandError(f"{which}: cannot read '{database}': {e}" + (
            wal_without_shm(database) or (WAL_SHM_HINT if "readonly" in str(e) else ""))) from None


def _one_report(run, db, job, which):
    refuse_a_path_sqlite_cannot_name(run, which)
    refuse_a_path_sqlite_cannot_name(db, f"--db-{which[-1].lower()}")
    if not db and not Path(run).exists():
        raise CommandError(f"{which}: '{run}' does not exist (give a run directory or a results database file)")
    database = database_path(run, db)
    option = f"--db-{which[-1].lower()}"
    refuse_what_is_not_a_file(database, option if db else which, f"give {option} a results database file" if db
                               else f"give {which} a run directory or a results database file")
    if not database.is_file():
        emulated = database_path(f"{Path(run).resolve()}.emulated", None)
        raise CommandError(f"{which}: no results database at '{database}' " + (
            f"(analyze --emulate wrote '{emulated}': compare that)" if not db and emulated.is_file()
            else "(run `precisionprobe analyze` first)"))
    if not _is_results_database(database, option if db else which):
        raise CommandError(f"{option if db else which}: '{database}' is not a precisionprobe results database (" +
                           ("an empty file" if database.stat().st_size == 0 else "it has no report_jobs table") +
                           "; `precisionprobe analyze RUN_DIR` makes one); it was not changed")
    try:
        conn = connect(database, read_only=True)  # compare reads the databases as analyze left them
    except ExtensionError as e:  # (which of the two it is: the message names the file only)
        raise CommandError(f"{which}: {e}") from None
    try:
        reports = read_reports(conn, job, f"'{database}'", job_option=f"--job-{which[-1].lower()}", read_as_is=database)
    finally:
        conn.close()
    if len(reports) > 1:
        raise CommandError(f"{which}: '{database}' holds several jobs ({', '.join(r.job_id for r in reports)}): "
                           f"choose one with --job-{which[-1].lower()}")
    return reports[0]


def compare(args):
    a = _one_report(args.run_a, args.db_a, args.job_a, "RUN_A")
    b = _one_report(args.run_b, args.db_b, args.job_b, "RUN_B")
    for warning in comparison_warnings(a, b):
        print(f"{args.prog}: warning: {warning}", file=sys.stderr)
    sys.stdout.write(render_comparison(a, b, compare_jobs(a, b), args.format))
    return 0


# Options whose empty value ('', an unset $VARIABLE) was taken as not given: --db '' read the
# default database, --html '' wrote no page, --emulate '' ran without emulating.
_NONEMPTY_OPTIONS = {"db": "the default", "prometheus": "the default", "emulate": "no emulation",
                     "emulate_out": "the default", "job": "every job", "html": "no page", "db_a": "the default",
                     "db_b": "the default", "job_a": "the only job", "job_b": "the only job"}


def _refuse_empty_options(args):
    for dest, left_out in _NONEMPTY_OPTIONS.items():
        if getattr(args, dest, None) == "":
            raise CommandError(f"--{dest.replace('_', '-')}: must not be empty (leave it out for {left_out})")


class _Terminated(BaseException):
    """SIGTERM (a scheduler ending the command, `kill`), raised where Python next runs, so that
    the command's `with` blocks end as after Ctrl-C: --emulate's Prometheus is stopped and its
    folder removed, where the default action left them behind. (A BaseException, as
    KeyboardInterrupt, so that no `except Exception` takes it for a failure of its own.)"""


def _terminate(signum, frame):
    raise _Terminated


def run(args, prog):
    """Runs the chosen subcommand; a failure is one line on stderr and status 1."""
    args.prog = f"{prog} {args.command}"
    # (serve sets its own handler once it serves: SIGTERM is then its way to stop, status 0.)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        _refuse_empty_options(args)
        return args.handler(args)
    except _Terminated:
        print(f"{prog} {args.command}: terminated (SIGTERM); the database keeps what its last complete refresh "
              "wrote", file=sys.stderr)
        return 128 + signal.SIGTERM
    except (CommandError, ExtensionError, RefreshError, ReportError, WriteLockTimeout, sqlite3.Error) as e:
        print(f"{prog} {args.command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog} {args.command}: interrupted (Ctrl-C); the database keeps what its last complete refresh "
              "wrote", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): not the command's failure to tell. Python's own flush of
        # stdout at exit would meet the closed pipe again, so stdout goes to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
