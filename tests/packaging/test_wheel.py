"""The wheel installs into a fresh virtual environment, offline, and loads the extension there.

scripts/build_wheel.sh packages this build's extension as it is (PP_EXTENSION, not rebuilt);
`python3 -m venv` makes an environment with nothing else in it, whose pip installs the wheel
from the file; in that environment `precisionprobe.load(conn)` loads the wheel's own copy into a
sqlite3 connection. A connection without enable_load_extension, as a Python built without
loadable extensions gives, gets the error that says what is wrong and the fix. CTest:
packaging.wheel (about 10 s of CPU).

  PP_EXTENSION=build/precisionprobe python3 -m pytest -q tests/packaging/test_wheel.py
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe"))
VERSION = re.search(r'^__version__ = "(.*)"$', (ROOT / "python" / "precisionprobe" / "_version.py").read_text(),
                    re.M).group(1)

# Run by the venv's Python: load, call the extension, and report what a user would see.
LOAD = """
import json, sqlite3, sys
import precisionprobe
conn = sqlite3.connect(":memory:")
precisionprobe.load(conn)
row = conn.execute("SELECT pp_version(), pp_config('timeout_ms', 1234),"
                   " (SELECT pp_mean_value(pp_mean(column1)) FROM (VALUES (1), (2), (6)))").fetchone()
try:
    conn.execute("SELECT load_extension('anything')")
    after = "allowed"
except sqlite3.OperationalError as e:
    after = str(e)
from precisionprobe.analysis.extension import connect, extension_path  # `precisionprobe analyze`
views = connect(":memory:").execute("SELECT count(*) FROM sqlite_master WHERE name = 'layer_metrics'")
print(json.dumps({"row": row, "path": precisionprobe.loadable_path(), "file": precisionprobe.__file__,
                  "version": precisionprobe.__version__, "torch": "torch" in sys.modules,
                  "load_extension_after": after, "analyze_path": extension_path(),
                  "analyze_views": views.fetchone()[0]}))
"""

# A connection as Python's sqlite3 gives it when built without loadable extension support:
# everything but enable_load_extension and load_extension.
NO_LOADING = """
import sqlite3
import precisionprobe

class Connection:
    def __init__(self):
        self._conn = sqlite3.connect(":memory:")
    def execute(self, *args):
        return self._conn.execute(*args)
    def commit(self):
        self._conn.commit()

try:
    precisionprobe.load(Connection())
except precisionprobe.ExtensionLoadError as e:
    print(e)
"""


def clean_environment():
    """This process's environment without what would let the venv's Python see the checkout."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE",
                         "PRECISIONPROBE_EXTENSION")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    env = clean_environment()
    env["PRECISIONPROBE_WHEEL_EXTENSION"] = EXTENSION + ".so"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "build_wheel.sh"), "--out", str(out)],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel):
    """A fresh venv (Debian's python3 -m venv, pip from ensurepip) with the wheel installed."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120,
                   env=clean_environment())
    python = root / "bin" / "python"
    result = subprocess.run([str(python), "-m", "pip", "install", "--no-index", "--no-deps",
                             "--disable-pip-version-check", "-q", str(wheel)],
                            capture_output=True, text=True, timeout=120, env=clean_environment())
    assert result.returncode == 0, result.stderr
    return root


def in_venv(venv, code):
    """Runs code with the venv's Python, from a folder outside the checkout."""
    result = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=venv, capture_output=True,
                            text=True, timeout=60, env=clean_environment())
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_wheel_is_tagged_for_this_platform_and_carries_the_extension(wheel):
    assert wheel.name.startswith(f"precisionprobe-{VERSION}-py3-none-linux_"), wheel.name
    assert not wheel.name.endswith("-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta = archive.read(f"precisionprobe-{VERSION}.dist-info/WHEEL").decode()
    assert "precisionprobe/_extension/precisionprobe.so" in names
    assert "Root-Is-Purelib: false" in meta
    assert not [n for n in names if "/tests/" in n or "__pycache__" in n]


def test_load_in_a_fresh_venv_calls_the_extension(venv):
    seen = json.loads(in_venv(venv, LOAD))
    assert seen["row"] == [VERSION, "1234", 3.0]
    assert seen["version"] == VERSION
    # The venv's own copy, not the checkout's.
    site = str(venv / "lib")
    assert seen["file"].startswith(site) and seen["path"].startswith(site), seen
    assert seen["path"].endswith("/precisionprobe/_extension/precisionprobe")
    # `precisionprobe analyze` finds the same copy, and installs the views with it.
    assert seen["analyze_path"] == seen["path"] and seen["analyze_views"] == 1
    assert not seen["torch"], "import precisionprobe and load() must not import torch"
    # load() switched loading off again: SQL cannot load other extensions afterwards.
    assert seen["load_extension_after"] == "not authorized"


def test_the_command_is_installed(venv):
    result = subprocess.run([str(venv / "bin" / "precisionprobe"), "--help"], cwd=venv, capture_output=True,
                            text=True, timeout=60, env=clean_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("usage: precisionprobe ") and "analyze" in result.stdout, result.stdout


def test_pip_install_of_the_source_folder_works_offline(tmp_path):
    """`pip install --no-build-isolation ./python` where the extension was built: a copy of python/
    beside a build/ that holds this build's extension, into a venv that sees Debian's setuptools
    and wheel (--system-site-packages), from no index."""
    checkout = tmp_path / "checkout"
    subprocess.run(["tar", "-C", str(ROOT / "python"), "--exclude=__pycache__", "--exclude=build",
                    "--exclude=*.egg-info", "-cf", str(tmp_path / "python.tar"), "pyproject.toml", "setup.py",
                    "README.md", "precisionprobe"], check=True)
    (checkout / "python").mkdir(parents=True)
    subprocess.run(["tar", "-C", str(checkout / "python"), "-xf", str(tmp_path / "python.tar")], check=True)
    (checkout / "build").symlink_to(Path(EXTENSION).parent)
    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
                   check=True, timeout=120, env=clean_environment())
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                             "--no-build-isolation", "--no-index", "--no-deps", "--disable-pip-version-check",
                             "-q", str(checkout / "python")],
                            capture_output=True, text=True, timeout=300, env=clean_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(in_venv(venv, LOAD))
    assert seen["row"] == [VERSION, "1234", 3.0]
    assert seen["path"].startswith(str(venv / "lib")), seen
    # Debian's torch is importable here (system site packages), and still not imported.
    assert in_venv(venv, "import importlib.util; print(importlib.util.find_spec('torch') is not None)") == "True\n"
    assert not seen["torch"], "import precisionprobe and load() must not import torch"


def test_a_python_without_loadable_extensions_is_told_the_fix(venv):
    message = in_venv(venv, NO_LOADING)
    assert message.startswith("precisionprobe.load: conn (__main__.Connection of Python "), message
    assert "SQLite " in message  # the version it would have loaded into
    assert "has no enable_load_extension" in message
    assert "built without loadable extension support" in message
    for fix in ("/usr/bin/python3", "--enable-loadable-sqlite-extensions", "pysqlite3"):
        assert fix in message, message


# In-process, against the checkout's package (python/ on sys.path).

@pytest.fixture
def package(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "python"))
    import precisionprobe
    assert Path(precisionprobe.__file__).parent == ROOT / "python" / "precisionprobe"
    return precisionprobe


def test_a_checkout_loads_its_own_build(package):
    if not (ROOT / "build" / "precisionprobe.so").is_file():
        pytest.skip("no build/precisionprobe.so in this checkout")
    assert package.loadable_path() == str(ROOT / "build" / "precisionprobe")
    conn = sqlite3.connect(":memory:")
    package.load(conn)
    assert conn.execute("SELECT pp_version()").fetchone() == (VERSION,)
    # Loaded again (a notebook cell run twice), the connection keeps its settings.
    conn.execute("SELECT pp_config('timeout_ms', 777)")
    package.load(conn)
    assert conn.execute("SELECT pp_config('timeout_ms')").fetchone() == ("777",)
    other = sqlite3.connect(":memory:")
    package.load(other)
    assert other.execute("SELECT pp_config('timeout_ms')").fetchone() == ("30000",)


def test_an_install_without_the_extension_says_so(package, monkeypatch, tmp_path):
    from precisionprobe import _loadable
    monkeypatch.setattr(_loadable, "loadable_path", lambda: str(tmp_path / "precisionprobe"))
    with pytest.raises(package.ExtensionLoadError) as caught:
        package.load(sqlite3.connect(":memory:"))
    message = str(caught.value)
    assert message.startswith(f"precisionprobe.load: the SQLite extension {tmp_path}/precisionprobe.so "
                              "is missing"), message
    assert "scripts/build_wheel.sh" in message


def test_a_failed_load_names_the_file_and_the_fix(package, monkeypatch, tmp_path):
    from precisionprobe import _loadable
    (tmp_path / "precisionprobe.so").write_bytes(b"")
    monkeypatch.setattr(_loadable, "loadable_path", lambda: str(tmp_path / "precisionprobe"))

    class TooOld:  # what loading into an SQLite older than 3.38 raises
        def enable_load_extension(self, on):
            self.enabled = on

        def load_extension(self, path):
            raise sqlite3.OperationalError("precisionprobe: needs SQLite 3.38.0 or later; this is 3.31.1")

        def execute(self, sql):
            raise sqlite3.ProgrammingError("not a real connection")

        def commit(self):
            pass

    conn = TooOld()
    with pytest.raises(package.ExtensionLoadError) as caught:
        package.load(conn)
    message = str(caught.value)
    assert message.startswith(f"precisionprobe.load: loading {tmp_path}/precisionprobe.so failed "
                              "(OperationalError: precisionprobe: needs SQLite 3.38.0"), message
    assert "pysqlite3" in message and "/usr/bin/python3" in message
    assert conn.enabled is False  # switched off again after the failure


def test_a_path_is_not_a_connection(package):
    with pytest.raises(TypeError, match=r"precisionprobe.load: conn must be an open connection .*str"):
        package.load("my.db")
    with pytest.raises(TypeError, match=r"precisionprobe.load: conn must be an open connection .*NoneType None"):
        package.load(None)
    with pytest.raises(TypeError, match=r"precisionprobe.load: conn must be an open connection .*Cursor"):
        package.load(sqlite3.connect(":memory:").cursor())
    closed = sqlite3.connect(":memory:")
    closed.close()
    with pytest.raises(TypeError, match=r"precisionprobe.load: conn must be an open connection; this one is closed"):
        package.load(closed)
