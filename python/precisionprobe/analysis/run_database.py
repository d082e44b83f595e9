"""The results database a subcommand reads: where it is (RUN_DIR's own, --db, or --emulate's
copy), checked before SQLite opens it, refreshed from the run's events first unless
--no-refresh, and its reports read with the estimates saved current. Shared by analyze,
export and serve (cli.py); compare reads databases as analyze left them."""
import hashlib
import json
import os
import sqlite3
import stat
import sys
import time
from pathlib import Path

from .. import _emulated_copy as emulated_copy
from .._event_files import event_files_below
from .._path_kind import kind, kind_of
from . import findings, render
from .command_error import CommandError
from .extension import connect
from .refresh import check_settings, refresh
from .report import check_report_types, jobs_in, read_report, remember_emulated
from .saved_estimates import estimates_stale, save_estimates
from .write_lock import WriteLockTimeout, begin_writing

DATABASE_NAME = "precisionprobe.db"


def database_path(run, db):
    if db:
        return Path(db)
    run = Path(run)
    return run if run.exists() and not run.is_dir() else run / DATABASE_NAME


def refuse_a_path_sqlite_cannot_name(path, option):
    """A path whose name is not UTF-8 (bytes Python keeps as surrogates) cannot be given to SQLite
    or pp_refresh, whose text is UTF-8: refused before anything is made."""
    if path is None:
        return
    for name in (os.fspath(path), os.path.realpath(path)):  # (as given; and as it resolves, folders and links)
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown = repr(os.fsencode(path)) if name is os.fspath(path) else \
                f"'{path}' (which is {os.fsencode(name)!r})"
            raise CommandError(f"{option}: {shown} is not a UTF-8 file name, which SQLite (and the events' "
                               "paths it stores) cannot hold: rename it (convmv, or mv to a UTF-8 name)") from None


def refuse_what_is_not_a_file(database, option, fix):
    """A results database that exists must be a regular file (or a link to one), refused before
    SQLite opens it: on a device SQLite fails with "disk I/O error" after making DEVICE-journal
    beside it (in /dev for /dev/null), and on a named pipe it waits for a writer for ever."""
    try:
        mode = os.stat(database).st_mode
    except OSError:
        return  # (nothing there yet: SQLite makes it, or says why it cannot)
    if not stat.S_ISREG(mode):
        raise CommandError(f"{option}: '{database}' is {kind(mode)}, not a file: {fix}; nothing was written")


def saved_estimates_current(conn, wait_s=None):
    """Saves the estimates where a refresh made them stale, waiting up to wait_s seconds for the
    file's write lock (write_lock's bound where None); where that wait ends without it, or the
    file is read-only, they go to a TEMP table of the same name instead, which the connection's
    reads of report_estimates find first (a later read saves them in the file)."""
    if not estimates_stale(conn):
        return
    if not getattr(conn, "read_only", False):
        try:
            save_estimates(conn, wait_s=wait_s)
            return
        except WriteLockTimeout:
            if wait_s is None:
                raise
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS report_estimates AS SELECT * FROM main.report_estimates WHERE 0")
    save_estimates(conn, in_temp=True)


def read_reports(conn, job, source, complete=True, layers=True, job_option="--job", read_as_is=None):
    """The reports of the database's jobs (job's alone where given). read_as_is: the database's
    path where the command read it without refreshing it (--no-refresh, compare), whose lack of
    events is then its own, not the run directory's."""
    saved_estimates_current(conn)  # (rewrites report_estimates where stale: before the check)
    check_report_types(conn, source)
    jobs = jobs_in(conn)
    if not jobs:
        stored = conn.execute("SELECT count(*) FROM pp_events").fetchone()[0]
        if not stored and read_as_is is not None:  # (made by a refresh that failed: Prometheus did not answer)
            raise CommandError(f"no layer events in the results database '{read_as_is}': no refresh has imported "
                               "any (the first one failed, or none ran): `precisionprobe analyze RUN_DIR` refreshes it "
                               "from the run's event files")
        if stored:  # imported, but nothing attributed yet
            try:
                newest, margin = conn.execute("SELECT max(t_end), CAST(pp_config('attribution_margin_seconds') AS "
                                              "REAL) FROM pp_events").fetchone()
            except sqlite3.Error:  # (no extension loaded: the plain tables only)
                newest, margin = None, None
            ago = time.time() - newest if newest is not None else None
            if ago is not None and margin is not None and -60 < ago < margin:  # (a running job's last events)
                raise CommandError(f"none of the {stored} layer events of {source} is attributed yet: the newest "
                                   f"ended {max(ago, 0):.0f} s ago, and a refresh leaves a running job's last "
                                   f"{margin:g} s (attribution_margin_seconds) for samples still to come: analyze "
                                   "again once the job has ended, with --final")
            raise CommandError(f"none of the {stored} layer events of {source} is attributed yet: their GPUs have no "
                               "DCGM samples (see the warnings above: check --prometheus and that dcgm-exporter's "
                               "series carry the events' UUID label), or the job is still running (analyze again "
                               "once it has ended, with --final)")
        raise CommandError(f"no layer events in {source}: the hook client writes events-HOST-PID.jsonl files "
                           "there (run the job under `precisionprobe run --out DIR -- COMMAND`)")
    if job is not None:
        if job not in jobs:
            raise CommandError(f"{job_option}: no job {job!r} in {source} (jobs: "
                               f"{', '.join(render.shown(j) for j in jobs)})")
        jobs = [job]
    reports = [read_report(conn, j, layers=layers) for j in jobs]
    return [findings.complete(r) for r in reports] if complete else reports


def source_of(args):
    """Where a command's jobs are read from, as its messages name it: RUN_DIR, or --db's file."""
    return f"'{args.db}'" if getattr(args, "db", None) else f"'{args.run_dir}'"


def checked_run_database(args):
    """RUN_DIR and its results database, checked as analyze, export and serve need them."""
    for option, path in (("RUN_DIR", args.run_dir), ("--db", args.db), ("--emulate-out", args.emulate_out)):
        refuse_a_path_sqlite_cannot_name(path, option)
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise CommandError(f"run directory '{run_dir}' does not exist" if not run_dir.exists()
                           else f"'{run_dir}' is not a directory (RUN_DIR is where the events are)")
    if args.emulate and (args.prometheus or args.no_refresh):
        raise CommandError("--emulate: serves its own Prometheus, so it takes neither --prometheus nor --no-refresh")
    ignored = [option for option, given in (("--prometheus", args.prometheus), ("--final", getattr(args, "final", False)),
                                            ("--emulate-out", args.emulate_out)) if given]
    if args.no_refresh and ignored:  # (each would be left unused, the command answering as if it were used)
        raise CommandError(f"--no-refresh: reads the results database as it is, so it takes no {ignored[0]} "
                           "(which the refresh it leaves out would use)")
    if args.emulate and emulated_dir(args).exists() and not emulated_dir(args).is_dir():
        raise CommandError(f"--emulate-out: '{emulated_dir(args)}' is {kind_of(emulated_dir(args))}, "
                           "not a directory: give a folder (the emulated copy of the run is written there)")
    if args.emulate and not _emulated_or_new(emulated_dir(args)):
        raise CommandError(f"--emulate-out: '{emulated_dir(args)}' holds files that no --emulate wrote (its "
                           f"events/ has no {emulated_copy.MARK} mark), which the replay would overwrite or mix "
                           "with its own: give a new or empty folder, or one an earlier --emulate wrote")
    if args.emulate and emulated_copy.names_another_source(Path(emulated_dir(args), "events"), run_dir):
        raise CommandError(f"--emulate-out: '{emulated_dir(args)}' holds the emulated copy of another run "
                           f"('{emulated_copy.sources_of(Path(emulated_dir(args), 'events'))[0]}'), whose results "
                           "the replay would make anew: give a new folder, or none (the default is beside RUN_DIR)")
    if args.emulate and emulated_dir(args).resolve().is_relative_to(run_dir.resolve()):
        raise CommandError(f"--emulate-out: '{emulated_dir(args)}' is inside RUN_DIR '{run_dir}', whose events the "
                           "next analyze would read back with the emulated copies; choose a folder outside it")
    if args.emulate and emulated_copy.is_copy(run_dir):
        marks = sorted(run_dir.rglob(emulated_copy.MARK))
        if len(marks) > 1 or (marks and not emulated_copy.copy_holding(run_dir / "-")
                              and any(run_dir.rglob("*.jsonl")) and any(
                                  marks[0].parent not in event.parents for event in run_dir.rglob("*.jsonl"))):
            # A folder of runs beside their emulated copies: one run at a time has a copy.
            raise CommandError(f"--emulate: '{run_dir}' holds emulated copies of runs ('{marks[0].parent}'"
                               f"{' and more' if len(marks) > 1 else ''}) beside event files: --emulate one "
                               "run's own folder (its copy is made beside it), or analyze a copy without --emulate")
        raise CommandError(f"--emulate: '{run_dir}' holds an emulator's copy of a run's events, whose calls are on "
                           "emulated GPUs already: analyze it without --emulate, or --emulate the run it copies")
    copies = [] if args.no_refresh else emulated_copy.copies_inside(run_dir)  # (--no-refresh reads no events)
    if copies and emulated_copy.places_its_source(copies[0]):
        raise CommandError(f"'{run_dir}' holds event files and an emulator's copy of them ('{copies[0]}', their "
                           "calls rewritten onto emulated GPUs), so every call would count twice: analyze the copy "
                           "(the calls on the emulated GPUs) or the events' own folder")
    if copies:
        raise CommandError(f"'{run_dir}' holds an emulator's copy of a run's events ('{copies[0]}', their calls "
                           "rewritten onto emulated GPUs) whose run is not where the copy's mark says (moved, or "
                           "removed), beside other event files, which may be that run's and would then count "
                           "twice: analyze the copy on its own, or a folder without it")
    database = database_path(emulated_dir(args) if args.emulate else run_dir, args.db)
    if args.db and database.name.endswith(".jsonl") and database.resolve().is_relative_to(run_dir.resolve()):
        raise CommandError(f"--db: '{database}' ends in .jsonl inside RUN_DIR '{run_dir}', where every *.jsonl file "
                           "is read as layer events: give the results database another name (such as "
                           "precisionprobe.db)")
    refuse_what_is_not_a_file(database, "--db" if args.db else "the default --db",
                               "give --db a results database file, or the path of a new one")
    if not args.no_refresh and not args.emulate:  # (before the database is made)
        check_settings(args.prometheus, getattr(args, "retention_minutes", None))
    if args.no_refresh and not database.is_file():
        raise CommandError(f"--no-refresh: no results database at '{database}'")
    if not args.no_refresh and database.is_file():
        _refuse_mixed_copies(database, run_dir, Path(emulated_dir(args), "events") if args.emulate else run_dir,
                             "--db" if args.db else "the default --db")
    return run_dir, database


def _emulate():
    """analysis.emulate, imported for --emulate only: it needs numpy, which the package does not
    require, so that the command starts where numpy is not installed (a wheel in a bare venv)."""
    try:
        from . import emulate
    except ImportError as e:
        raise CommandError(f"--emulate: needs numpy, the emulator's extra ({e}): "
                           "pip install 'precisionprobe[emulator]'") from None
    return emulate


def emulated_dir(args):
    return Path(args.emulate_out) if args.emulate_out else _emulate().default_out(args.run_dir)


def _emulated_or_new(out):
    """Whether --emulate may write into out: a folder not there yet, an empty one, or an earlier
    replay's (its events/ marked as an emulated copy). Anything else may be a run of its own,
    whose results database a replay would make anew and whose events it would mix with its copy."""
    if not out.is_dir():
        return True
    return not any(out.iterdir()) or Path(out, "events", emulated_copy.MARK).is_file()


def _digests(paths, base):
    return {str(path.relative_to(base)): hashlib.sha1(path.read_bytes()).hexdigest() for path in paths}


def _emulated_replay(emulated_dir):
    """What an emulated copy holds, to tell whether a replay changed it: its event files and its
    samples (the OpenMetrics files), each path -> digest. A replay writes the same bytes for the
    same run and profile, so the samples change with the profile (or the emulator's version)."""
    out = Path(emulated_dir)
    events = out / "events"
    return (_digests(event_files_below(events), events) if events.is_dir() else {},
            _digests(sorted(out.glob("metrics-*.om")), out) if out.is_dir() else {})


_CHANGES = {"events": "the run's events changed",
            "samples": "the emulated samples changed (another profile, or another version of the emulator)"}


def _what_changed(before, after):
    """Which part differs between two _emulated_replay results ('events' first, 'samples'; its
    words are _CHANGES'), or None."""
    if not before[0] and not before[1]:
        return None  # (no earlier replay here)
    if before[0] != after[0]:
        return "events"
    if before[1] != after[1]:
        return "samples"
    return None


_REFRESHES = ".precisionprobe-refreshes.json"  # in an emulated copy: each database's last replay


def _refreshed_from(out, database):
    """The _emulated_replay that database was last refreshed from (_record_refresh), or None."""
    try:
        record = json.loads(Path(out, _REFRESHES).read_text()).get(str(Path(database).resolve()))
        return (record["events"], record["samples"]) if record else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # (none yet, or unreadable: the copy as found is compared instead)


def _record_refresh(out, database, replay):
    path = Path(out, _REFRESHES)
    try:
        records = json.loads(path.read_text())
        if not isinstance(records, dict):
            records = {}
    except (OSError, ValueError):
        records = {}
    records[str(Path(database).resolve())] = {"events": replay[0], "samples": replay[1]}
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(records))
    os.replace(temporary, path)


def _remove_database(database):
    """Removes a results database and its -wal and -shm files, once no other connection writes
    it (write_lock's wait): what another process committed is not pulled from under it unsaid."""
    conn = sqlite3.connect(database)
    try:
        begin_writing(conn)  # (raises WriteLockTimeout where the other writer does not end)
        conn.rollback()
    except sqlite3.DatabaseError:
        pass  # (a damaged file: no connection can be writing it; it is made anew all the same)
    finally:
        conn.close()
    for leftover in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        leftover.unlink(missing_ok=True)


def _origin(path, copies):
    """(the emulated copy holding path, or None; the folder of the recorded events it comes
    from): a file of an emulated copy comes from the run its mark names (copies caches each
    folder's answer)."""
    folder = Path(path).parent
    if folder not in copies:
        copies[folder] = None
        for at in [folder, *folder.parents]:
            if Path(at, emulated_copy.MARK).is_file():
                sources = emulated_copy.sources_of(at)
                copies[folder] = (at, sources[0] if sources else None)
                break
    return copies[folder] if copies[folder] is not None else (None, folder)


def _refuse_mixed_copies(database, run_dir, events_dir, option):
    """Refuses to refresh database from events_dir (RUN_DIR, or --emulate's copy of it) where it
    holds the same run's events read another way: as recorded beside an emulated copy of them, or
    two emulated copies: every call would count twice. Reads pp_event_files' paths (nothing where
    the file is no results database, or not readable: the refresh says what is wrong)."""
    try:
        conn = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
        try:
            paths = [row[0] for row in conn.execute("SELECT DISTINCT real_path FROM pp_event_files "
                                                    "WHERE real_path IS NOT NULL")]
        finally:
            conn.close()
    except sqlite3.Error:
        return
    run_dir, events_dir, copies = run_dir.resolve(), events_dir.resolve(), {}
    # What this refresh reads: --emulate's copy of RUN_DIR, or RUN_DIR (a copy, or the folder of
    # one, where an emulated copy is analyzed as it is; checked_run_database refused one beside
    # other events).
    if events_dir != run_dir:
        copy_now, origin_now = events_dir, run_dir
    else:
        below = next(iter(run_dir.rglob(emulated_copy.MARK)), None)
        copy_now, origin_now = _origin((below.parent if below else run_dir) / "-", copies)
    if origin_now is None:
        return
    for path in paths:
        copy, origin = _origin(path, copies)
        if origin is None or copy == copy_now or not (origin == origin_now or origin_now in origin.parents
                                                       or origin in origin_now.parents):
            continue
        if copy is None:
            held = f"the events of '{origin}' as recorded"
        else:
            held = f"an emulated copy of the events of '{origin}' ('{copy}')"
        adding = f"their copy on emulated GPUs ('{copy_now}')" if copy_now else "those events as recorded"
        raise CommandError(f"{option}: '{database}' holds {held}, and this refresh would add {adding}: every "
                           "call would count twice; give this one a results database of its own (the default "
                           "--db, in its folder), or a new file")


def open_refreshed(args):
    """A connection to the run's results database, refreshed first unless --no-refresh (with
    --emulate: from the run replayed on emulated GPUs)."""
    run_dir, database = checked_run_database(args)
    if args.emulate:
        # What the database was last refreshed from: the record of that refresh (another --db
        # may have rewritten the copy since), else, for a database without one, the copy as this
        # command finds it (hashed only then: a long run's copy is hundreds of MB).
        refreshed_from = _refreshed_from(emulated_dir(args), database) or _emulated_replay(emulated_dir(args))
        try:
            events_dir, samples = _emulate().replay(run_dir, emulated_dir(args), args.emulate)
        except PermissionError as e:
            raise CommandError(f"--emulate: {e} (the replay writes its copy there: give --emulate-out a folder "
                               "you can write)") from None
        except (ValueError, OSError) as e:
            raise CommandError(f"--emulate: {e}") from None
        now = _emulated_replay(emulated_dir(args))
        changed = _what_changed(refreshed_from, now)
        if changed and database.is_file():
            # The run grew (a job still writing): the copy's earlier, final refresh folded windows
            # that its new events fall into; or the samples are another profile's, where the
            # database holds the old ones. The emulated database is derived: it is made anew.
            words = _CHANGES[changed]
            if args.db and changed == "samples":  # (its report would name the new profile over the old values)
                raise CommandError(f"--db: {words} since '{database}' was refreshed from this run's replay, and its "
                                   "samples are the old ones: remove it to refresh it from the start, or give "
                                   "another --db")
            if args.db:
                print(f"{args.prog}: warning: {words} since --emulate last replayed the run; "
                      f"remove {database} to refresh it from the start", file=sys.stderr)
            else:
                print(f"{args.prog}: {words} since --emulate last replayed the run: {database} is made anew",
                      file=sys.stderr)
                _remove_database(database)
    # --no-refresh reads the database as it is: opened read-only, the file is never changed.
    conn = connect(database, read_only=bool(args.no_refresh and not args.emulate))
    try:
        if args.emulate:
            with _emulate().Served(samples) as url:
                refresh(conn, events_dir, url, final=True)
            _record_refresh(emulated_dir(args), database, now)
        elif not args.no_refresh:
            refresh(conn, run_dir, args.prometheus, args.final, retention_minutes=getattr(args, "retention_minutes", None),
                    wait_seconds=args.wait_seconds if hasattr(args, "wait_seconds") else 0.0)
        if args.emulate or not args.no_refresh:
            remember_emulated(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def refreshed_reports(args, complete=True, layers=True):
    """read_reports of the run's database, refreshed first (open_refreshed), for analyze and
    export. A database the command made for a folder without events is removed again: a mistyped
    RUN_DIR leaves no empty database behind."""
    database = checked_run_database(args)[1]
    made_here = not database.exists()
    conn = open_refreshed(args)
    stored = None
    try:
        stored = conn.execute("SELECT count(*) FROM pp_events").fetchone()[0]
        return read_reports(conn, args.job, source_of(args), complete=complete, layers=layers,
                            read_as_is=database if args.no_refresh else None)
    except CommandError:
        conn.close()
        if made_here and not stored:
            for leftover in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
                leftover.unlink(missing_ok=True)
        raise
    finally:
        conn.close()
