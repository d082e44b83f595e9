"""scripts/build.sh builds the extension alone unless asked for the tests, and a build folder
configured for another checkout (the repository moved or copied, build/ with it) is configured
anew instead of failing, as cmake alone does.

The script and scripts/setup.sh are copied into a small CMake project with the two targets the
script names (the module precisionprobe and the test binary pp_tests, here each writing its
file), so that each build takes a moment, not the extension's minutes. CTest:
packaging.build_script.

  python3 -m pytest -q tests/packaging/test_build_script.py
"""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# No compiler: each target writes its file, so that configuring takes no compiler checks.
PROJECT = """cmake_minimum_required(VERSION 3.18)
project(tiny LANGUAGES NONE)
add_custom_target(precisionprobe ALL COMMAND ${CMAKE_COMMAND} -E touch precisionprobe.so)
add_custom_target(pp_tests ALL COMMAND ${CMAKE_COMMAND} -E touch pp_tests)
"""
MOVED = "build.sh: build/ was configured for another checkout; configuring it anew"


def checkout(folder):
    (folder / "scripts").mkdir(parents=True)
    for script in ("build.sh", "setup.sh"):
        shutil.copy(ROOT / "scripts" / script, folder / "scripts" / script)
    (folder / "CMakeLists.txt").write_text(PROJECT)
    return folder


def build(folder, *args):
    result = subprocess.run(["bash", str(folder / "scripts" / "build.sh"), *args], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stderr


def cache_home(folder):
    cache = (folder / "build" / "CMakeCache.txt").read_text()
    return next(line.split("=", 1)[1] for line in cache.splitlines()
                if line.startswith("CMAKE_HOME_DIRECTORY:INTERNAL="))


@pytest.fixture
def built(tmp_path):
    """A checkout whose build/ holds the module from a first run of the script."""
    folder = checkout(tmp_path / "first")
    assert MOVED not in build(folder)
    return folder


def test_the_extension_alone_by_default_everything_with_tests(built):
    assert (built / "build" / "precisionprobe.so").is_file()
    assert not (built / "build" / "pp_tests").exists()
    assert MOVED not in build(built, "--tests")
    assert (built / "build" / "pp_tests").is_file()


def test_a_moved_checkout_is_configured_anew(built, tmp_path):
    moved = tmp_path / "moved"
    built.rename(moved)
    # What the script saves the user from: cmake refuses the old cache.
    refused = subprocess.run(["cmake", "-S", str(moved), "-B", str(moved / "build")], capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0 and "CMakeCache.txt" in refused.stderr, refused.stderr
    assert MOVED in build(moved)
    assert cache_home(moved) == str(moved)
    assert (moved / "build" / "precisionprobe.so").is_file()
    assert MOVED not in build(moved)  # and kept from then on


def test_a_copied_checkout_is_configured_anew_and_the_original_kept(built, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(built, copy, symlinks=True)
    assert MOVED in build(copy)
    assert cache_home(copy) == str(copy)
    assert cache_home(built) == str(built)
    assert MOVED not in build(built)
