"""Where the precisionprobe SQLite extension is, and loading it into a connection.

Looked for, in order: $PRECISIONPROBE_EXTENSION (a path as sqlite3's load_extension takes it,
with or without the .so suffix); the copy a wheel installs next to this package; the build of
the repository this package sits in (build/precisionprobe.so).
"""
import os
import sqlite3
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
REPOSITORY_BUILD = PACKAGE.parent.parent / "build" / "precisionprobe"


class ExtensionError(RuntimeError):
    """The extension cannot be found or loaded; the message says why and what to do."""


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
    for stem in (PACKAGE / "precisionprobe", REPOSITORY_BUILD):
        if _exists(stem):
            return str(stem)
    raise ExtensionError("the precisionprobe extension was not found (looked for "
                         f"{PACKAGE / 'precisionprobe.so'} and {REPOSITORY_BUILD}.so): build it with "
                         "scripts/build.sh, or set PRECISIONPROBE_EXTENSION to its path")


def connect(database):
    """A connection to database with the extension loaded and the views installed."""
    conn = sqlite3.connect(database)
    if not hasattr(conn, "enable_load_extension"):
        conn.close()
        raise ExtensionError("this Python's sqlite3 module cannot load extensions (it was built without "
                             "them): run with Debian's /usr/bin/python3, or a Python built with "
                             "--enable-loadable-sqlite-extensions")
    path = extension_path()
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
        conn.execute("SELECT pp_install_views()")
    except sqlite3.Error as e:
        conn.close()
        raise ExtensionError(f"cannot load the extension {path}: {e}") from None
    return conn
