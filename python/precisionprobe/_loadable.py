"""Where the SQLite extension is, and loading it into a Python connection.

The wheel carries the extension as precisionprobe/_extension/precisionprobe.so (python/setup.py
copies it there). A source checkout used through PYTHONPATH=python, or installed editable, has
none there; it uses the checkout's own build/precisionprobe.so (scripts/build.sh) instead.
Only the standard library is imported here: `import precisionprobe` stays light.
"""
import os
import sys

# What SQLite appends to a name it cannot open as given (sqlite3_load_extension).
_SUFFIX = {"win32": ".dll", "darwin": ".dylib"}.get(sys.platform, ".so")
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_NO_LOADING_FIX = (
    "Use a Python whose sqlite3 can load extensions: Debian's or Ubuntu's /usr/bin/python3 "
    "(a venv made from it has it too), or a Python built with --enable-loadable-sqlite-extensions "
    "(pyenv: PYTHON_CONFIGURE_OPTS=--enable-loadable-sqlite-extensions pyenv install VERSION, then "
    "make the venv again); or `pip install pysqlite3-binary` and open the connection with "
    "pysqlite3.dbapi2.connect(...)")


class ExtensionLoadError(RuntimeError):
    """precisionprobe.load() could not load the extension; the message says why and the fix."""
    __module__ = "precisionprobe"  # where users catch it


def loadable_path():
    """The extension's path without its suffix, as Connection.load_extension() and `.load` take it.

    The installed package's own copy; in a source checkout without one, the checkout's
    build/precisionprobe. The path is returned whether or not the file is there (load() checks).
    """
    packaged = os.path.join(_PACKAGE_DIR, "_extension", "precisionprobe")
    if os.path.isfile(packaged + _SUFFIX):
        return packaged
    checkout = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
    built = os.path.join(checkout, "build", "precisionprobe")
    if os.path.isfile(built + _SUFFIX) and os.path.isfile(os.path.join(checkout, "CMakeLists.txt")):
        return built
    return packaged


def _interpreter(conn):
    """'Python 3.11.2 (/usr/bin/python3), SQLite 3.40.1' for error messages; what is knowable."""
    text = f"Python {sys.version.split()[0]} ({sys.executable})"
    try:
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    except Exception:  # not a connection that can say; the message goes on without it
        return text
    return f"{text}, SQLite {version}"


def _not_a_library(path):
    """Whether path is a readable file that does not start as an ELF shared library does."""
    try:
        with open(path, "rb") as f:
            return f.read(4) != b"\x7fELF"
    except OSError:
        return False


def _hint(message):
    """The fix for a failed load_extension(), told apart by SQLite's or the loader's message."""
    if "needs SQLite" in message:
        return (" Use a Python whose sqlite3 links a newer SQLite (Debian 12's /usr/bin/python3 links "
                "3.40), or `pip install pysqlite3-binary` and pysqlite3.dbapi2.connect(...).")
    if "cannot open shared object file" in message:
        return (" The extension links libcurl and RE2 of the system it was built on (`ldd` on the file "
                "lists them): on Debian 12, `apt-get install libcurl4 libre2-9`.")
    if "not authorized" in message:
        return " Extension loading is switched off for this connection. " + _NO_LOADING_FIX + "."
    return ""


def load(conn):
    """Loads the precisionprobe SQLite extension into conn, an open connection.

    conn is a sqlite3.Connection (or pysqlite3's, or anything with enable_load_extension and
    load_extension). Extension loading is switched on for the load and off again afterwards, so
    SQL run on conn cannot load other extensions with load_extension(). Raises
    ExtensionLoadError, saying what is wrong and the fix, when this Python's sqlite3 cannot load
    extensions, when this install has no extension, or when loading it fails.
    """
    load_file(conn, None)


def load_file(conn, path):
    """load() of the extension at path (without its suffix) instead of the package's own, for
    callers that let users name another build (`precisionprobe analyze`: $PRECISIONPROBE_EXTENSION).
    path None is load()."""
    # Not a connection at all (a path, None, a number): say so, not that this Python's sqlite3
    # lacks extension loading, which only a connection object without the method tells.
    if isinstance(conn, (str, bytes, os.PathLike)) or not (hasattr(conn, "execute") and hasattr(conn, "commit")):
        raise TypeError("precisionprobe.load: conn must be an open connection "
                        f"(sqlite3.connect(...)), not the {type(conn).__name__} {conn!r}")
    try:
        conn.total_changes  # sqlite3's (and pysqlite3's) raise ProgrammingError once closed
    except Exception as exc:  # (sqlite3 is not imported here: a Python may lack it)
        if type(exc).__name__ == "ProgrammingError":
            raise TypeError("precisionprobe.load: conn must be an open connection; this one is closed") from None
    enable = getattr(conn, "enable_load_extension", None)
    if enable is None:
        raise ExtensionLoadError(
            f"precisionprobe.load: conn ({type(conn).__module__}.{type(conn).__qualname__} of "
            f"{_interpreter(conn)}) has no enable_load_extension: this Python's sqlite3 module was "
            f"built without loadable extension support. {_NO_LOADING_FIX}.")
    if path is None:
        path = loadable_path()
        if not os.path.isfile(path + _SUFFIX):
            raise ExtensionLoadError(
                f"precisionprobe.load: the SQLite extension {path}{_SUFFIX} is missing: this "
                f"precisionprobe ({_PACKAGE_DIR}) was installed without it. Install the wheel that "
                "scripts/build_wheel.sh makes, or build the extension (scripts/build.sh) and then "
                "`pip install --no-build-isolation ./python`.")
    try:
        enable(True)
    except Exception as exc:
        raise ExtensionLoadError(
            f"precisionprobe.load: conn.enable_load_extension(True) failed ({type(exc).__name__}: "
            f"{exc}) in {_interpreter(conn)}. {_NO_LOADING_FIX}.") from exc
    try:
        conn.load_extension(path)
    except Exception as exc:
        try:
            enable(False)
        except Exception:  # the error below is the one to report
            pass
        message = str(exc)
        shown = path if os.path.isfile(path) else path + _SUFFIX
        loader_failed = not _hint(message) or "cannot open shared object file" in message  # (not SQLite's refusal)
        if loader_failed and not os.path.exists(shown):
            raise ExtensionLoadError(f"precisionprobe.load: there is no file {path} or {path}{_SUFFIX} to load as "
                                     "the SQLite extension") from exc
        if loader_failed and _not_a_library(shown):
            # (SQLite then reports its second try, PATH.so, as a missing library.)
            raise ExtensionLoadError(
                f"precisionprobe.load: loading {shown} failed: it is not a shared library, so not a loadable "
                "SQLite extension; name the extension's file (build/precisionprobe.so of scripts/build.sh, "
                "with or without its suffix)") from exc
        raise ExtensionLoadError(
            f"precisionprobe.load: loading {shown} failed ({type(exc).__name__}: {message}) "
            f"in {_interpreter(conn)}.{_hint(message)}") from exc
    enable(False)
