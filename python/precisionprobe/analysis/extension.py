"""Where the precisionprobe SQLite extension is, and loading it into a connection.

Looked for, in order: $PRECISIONPROBE_EXTENSION (a path as sqlite3's load_extension takes it,
with or without the .so suffix); then precisionprobe.loadable_path(): the copy the wheel installs
in the package, or the build of the repository this package sits in (build/precisionprobe.so).
Loading is precisionprobe.load's, whose errors say what is wrong and the fix (a Python whose
sqlite3 cannot load extensions, an SQLite too old, a library missing).
"""
import os
import sqlite3
import sys
from pathlib import Path

from .._loadable import ExtensionLoadError, load_file, loadable_path
from .render import shown

ExtensionError = ExtensionLoadError  # the extension cannot be found or loaded; the message says why


def _exists(stem):
    return Path(str(stem) + ".so").is_file() or Path(stem).is_file()


def extension_path():
    """The path of the extension (without .so), or ExtensionError naming where it looked."""
    configured = os.environ.get("PRECISIONPROBE_EXTENSION")
    if configured:
        stem = configured[:-3] if configured.endswith(".so") else configured
        if not _exists(stem):
            raise ExtensionError(f"PRECISIONPROBE_EXTENSION is {configured!r}, which is not a file")
        return stem
    stem = loadable_path()
    if _exists(stem):
        return stem
    raise ExtensionError(f"the precisionprobe extension was not found (looked for {stem}.so): install "
                         "the wheel scripts/build_wheel.sh makes, build it with scripts/build.sh, or set "
                         "PRECISIONPROBE_EXTENSION to its path")


class ResultsConnection(sqlite3.Connection):
    """A connection to a results database; read_only: opened so (it is never written)."""
    read_only = False


# SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB: a damaged file, met only once its pages are read.
_DAMAGED_FILE_CODES = (10, 11, 26)


def connect(database, read_only=False):
    """A connection to database with the extension loaded and the views installed; read_only:
    the file opened read-only and left exactly as it is (its views as they are)."""
    try:
        if read_only:
            conn = open_read_only(database)
        else:
            new = not os.path.exists(database) or os.path.getsize(database) == 0
            conn = sqlite3.connect(database, factory=ResultsConnection)
            if new:
                # WAL, so that a scheduler's readers and the refreshes never wait for one another
                # (in the default rollback journal a reader's open transaction fails a refresh,
                # and a writer killed mid-refresh leaves a journal read-only readers cannot open).
                conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA schema_version")  # (sqlite3 opens the file lazily; this reads it)
    except sqlite3.Error as e:
        raise ExtensionError(f"cannot open the results database {database}: {e}" + _why_not_opened(database)) from None
    try:
        path = extension_path()
        if not hasattr(conn, "enable_load_extension"):
            raise ExtensionError(f"this Python ({sys.executable}) has an sqlite3 module built without loadable "
                                 "extension support: run the command with one whose sqlite3 can load extensions, "
                                 "such as Debian's (/usr/bin/python3 -m precisionprobe ...), or a Python built with "
                                 "--enable-loadable-sqlite-extensions")
        load_file(conn, path)
        if not read_only:
            _refuse_another_applications(conn, database)
            conn.execute("SELECT pp_install_views()")
        elif not conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND name = 'layer_metrics'"
                              ).fetchone()[0]:
            raise ExtensionError(f"{database} holds no results views (layer_metrics): analyze the run into it first")
        elif not _schema_current(conn, database):
            conn = _upgraded_copy(conn, database, path)
    except sqlite3.Error as e:
        conn.close()
        if (getattr(e, "sqlite_errorcode", 0) & 0xff) in _DAMAGED_FILE_CODES:  # (the file's fault, not the extension's)
            raise ExtensionError(f"cannot read the results database {database}: {e}: restore it from a copy, or "
                                 "analyze the run into a new one (--db NEW_FILE)") from None
        raise ExtensionError(f"cannot install the views of the extension {path}: {e}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def open_read_only(database):
    """database opened read-only. A database in WAL mode in a folder no one may write (an archive,
    a read-only file system) cannot be opened so: SQLite must make its -shm file beside it. With
    no -wal file either, everything is in the file itself, and no connection can be writing it
    (a writer makes both files there): it is read as immutable, the state SQLite's own docs name
    for such a file. With a -wal file, it is refused (wal_without_shm's hint): read as immutable,
    the commits the -wal file holds would be missing."""
    uri = Path(database).resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, factory=ResultsConnection)
    try:
        conn.execute("PRAGMA schema_version")
    except sqlite3.Error:
        conn.close()
        wal = Path(f"{database}-wal")
        if not wal_without_shm(database) or (wal.exists() and wal.stat().st_size > 0):
            raise
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, factory=ResultsConnection)
    conn.read_only = True
    return conn


def _schema_current(conn, database):
    """Whether a read-only database's tables and views are this version's: pp_install_views
    then writes nothing and succeeds; it refuses what would need writing (False here). A table
    that is not as precisionprobe creates it (a view in its place, other columns, an early
    development version's) is refused, read or not: its views and tables are the file's, and a
    view can run anything SQL can when read."""
    try:
        conn.execute("SELECT pp_install_views()")
        return True
    except sqlite3.Error as e:
        if "not this version's" in str(e):
            return False
        if "is not as precisionprobe creates it" not in str(e):
            raise
        problem = str(e).split("; nothing was written")[0].removeprefix("pp_install_views: ")
        problem = shown(problem)  # (names from the file)
        raise ExtensionError(f"{database}: {problem}: not read. A database made by a later version of "
                             "precisionprobe is read by that version; one made by an early development version "
                             "this one cannot upgrade, or one altered (it may run code when read), is made again "
                             "from its run's event files: precisionprobe analyze RUN_DIR --db NEW_FILE") from None


def _upgraded_copy(conn, database, path):
    """An in-memory copy of a database whose tables or views are another version's, upgraded to
    this version's, in place of conn (closed): its results are read as this version gives them,
    and the file is left as it is."""
    print(f"precisionprobe: {database} was written by another version of precisionprobe: reading a copy in "
          "memory with this version's tables and views (the file is not changed; a refresh by this version, "
          "`precisionprobe analyze` of its run, upgrades it once)", file=sys.stderr, flush=True)
    copy = sqlite3.connect(":memory:", factory=ResultsConnection)
    try:
        conn.backup(copy)
        conn.close()
        load_file(copy, path)
        copy.execute("SELECT pp_install_views()")
    except BaseException:
        copy.close()
        raise
    copy.read_only = True  # the file is not written (estimates go to a TEMP table as for the file)
    return copy


def _refuse_another_applications(conn, database):
    """A database that holds tables and none of precisionprobe's belongs to something else: the
    CLI does not add its tables beside them (a mistyped --db)."""
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name")]
    ours = {"layer_state", "layer_history", "report_jobs", "report_layers", "report_layer_types"}
    if tables and not any(name.startswith("pp_") or name in ours for name in tables):
        listed = ", ".join(shown(t) for t in tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        raise ExtensionError(f"{database} holds tables of another application ({listed}) and none of "
                             "precisionprobe's: it was not changed; give a results database, or a new file, "
                             "with --db")


def _why_not_opened(database):
    """What SQLite's "unable to open database file" leaves out, where the file system tells."""
    path = Path(database)
    if path.is_dir():
        return " (a directory)"
    if not path.parent.is_dir():
        return " (its folder does not exist)"
    if not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        return f" (this user may not create files in {path.parent}: give --db a file you can write)"
    if path.exists() and not os.access(path, os.R_OK):
        return " (this user may not read it)"
    return wal_without_shm(path)


WAL_SHM_HINT = (" (a database in WAL mode needs its -shm file, which SQLite cannot make in this folder or "
                "file system: copy the file to a folder you can write, or open it once where you can)")


def wal_without_shm(path):
    """Why SQLite cannot open a database in WAL mode whose -shm file it cannot make beside it (a
    read-only folder or file system), which it reports only as "unable to open database file"."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return ""
    in_wal = header.startswith(b"SQLite format 3\0") and header[18:20] == b"\x02\x02"
    if not in_wal or os.access(path.parent, os.W_OK | os.X_OK):  # (a -shm file left there does not do)
        return ""
    return WAL_SHM_HINT
