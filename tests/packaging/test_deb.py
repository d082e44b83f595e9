"""The Debian package: CPack builds libsqlite3-mod-precisionprobe from this build, and the module
it installs loads in the sqlite3 shell by the documented path.

The package is unpacked with dpkg-deb -x into a temporary folder (no root needed); the shell
then loads <folder>/usr/lib/<multiarch>/precisionprobe, the path the docs give without the
folder, and by the bare name `.load precisionprobe` with that library folder on the loader's
path, as an installed package is. CTest: packaging.deb (a few seconds).

  PP_BUILD_DIR=build python3 -m pytest -q tests/packaging/test_deb.py
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("PP_BUILD_DIR", ROOT / "build"))
VERSION = re.search(r"project\(precisionprobe VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
MULTIARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                           check=True).stdout.strip()
ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
MODULE = f"usr/lib/{MULTIARCH}/precisionprobe"
CALLS = ("SELECT pp_version(), pp_config('timeout_ms', 1234),"
         " (SELECT pp_mean_value(pp_mean(column1)) FROM (VALUES (1), (2), (6)));\n")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """(the .deb, the folder it was unpacked into)"""
    out = tmp_path_factory.mktemp("cpack")
    result = subprocess.run(["cpack", "--config", str(BUILD / "CPackConfig.cmake"), "-B", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    debs = sorted(out.glob("*.deb"))
    assert [d.name for d in debs] == [f"libsqlite3-mod-precisionprobe_{VERSION}_{ARCH}.deb"]
    root = out / "root"
    subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
    return debs[0], root


def shell(script, env=None):
    result = subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True,
                            timeout=60, env=env)
    assert result.returncode == 0 and not result.stderr, result.stderr
    return result.stdout


def test_control_fields(package):
    deb, _ = package
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Architecture", "Section",
                             "Depends"], capture_output=True, text=True, check=True).stdout
    assert f"Package: libsqlite3-mod-precisionprobe\nVersion: {VERSION}\nArchitecture: {ARCH}\n" in fields
    assert "Section: libs" in fields
    depends = re.search(r"^Depends: (.*)$", fields, re.M).group(1)
    # An SQLite that can load it, and the libraries the module links (dpkg-shlibdeps).
    for needed in ("libsqlite3-0 (>= 3.38.0)", "libcurl4", "libre2-", "libstdc++6"):
        assert needed in depends, depends


def test_the_module_alone_where_debian_puts_sqlite_modules(package):
    deb, _ = package
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    files = [line.split()[-1] for line in listing.splitlines() if not line.startswith("d")]
    assert files == [f"./{MODULE}.so"], listing
    # A library's mode, stripped: no debug sections.
    assert "-rw-r--r-- root/root" in [line for line in listing.splitlines() if line.endswith(".so")][0]
    _, root = package
    sections = subprocess.run(["readelf", "-S", "-W", str(root / f"{MODULE}.so")], capture_output=True,
                              text=True, check=True).stdout
    assert ".debug_" not in sections


def test_loads_in_the_sqlite3_shell_by_its_path(package):
    _, root = package
    assert shell(f".load {root}/{MODULE}\n" + CALLS) == f"{VERSION}|1234|3.0\n"


def test_loads_by_name_from_the_library_folder(package):
    """Installed, the folder is the loader's own (/usr/lib/<multiarch>): `.load precisionprobe`."""
    _, root = package
    env = dict(os.environ, LD_LIBRARY_PATH=str(root / Path(MODULE).parent))
    assert shell(".load precisionprobe\n" + CALLS, env=env) == f"{VERSION}|1234|3.0\n"
