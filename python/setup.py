"""The one build step pyproject.toml cannot say: put the SQLite extension into the wheel.

The metadata is in pyproject.toml. This copies the extension CMake built (the checkout's
build/precisionprobe.so, from scripts/build.sh) into the package as
precisionprobe/_extension/precisionprobe.so, where precisionprobe.load() finds it, and tags the
wheel for this platform (py3-none-linux_x86_64), not py3-none-any: it carries machine code, and
any Python 3 of this platform can load it (it is an SQLite extension, not a Python module).

PRECISIONPROBE_WHEEL_EXTENSION=PATH packages another build's precisionprobe.so;
PRECISIONPROBE_WHEEL_EXTENSION=none builds the hook client alone (a pure wheel, for a training
image that never loads the extension). Offline, with Debian's setuptools and wheel:
`pip install --no-build-isolation ./python`, or scripts/build_wheel.sh.
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools 70.1 and later
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel  # Debian 12: setuptools 66, wheel 0.38
    except ImportError:
        raise SystemExit("precisionprobe's setup.py needs the 'wheel' package (or setuptools 70.1 or later), "
                         "which this Python does not have: on Debian, install from a venv made with "
                         "'/usr/bin/python3 -m venv --system-site-packages' (it sees Debian's setuptools and "
                         "wheel), or drop --no-build-isolation where pip may download them") from None

HERE = Path(__file__).resolve().parent
VARIABLE = "PRECISIONPROBE_WHEEL_EXTENSION"


def extension_file():
    """The extension to package, or None for the hook client alone."""
    chosen = os.environ.get(VARIABLE, "")
    if chosen == "none":
        return None
    return Path(chosen).resolve() if chosen else HERE.parent / "build" / "precisionprobe.so"


class BuildWithExtension(build_py):
    def run(self):
        super().run()
        source = extension_file()
        target = Path(self.build_lib) / "precisionprobe" / "_extension" / "precisionprobe.so"
        if source is None:
            target.unlink(missing_ok=True)  # left by an earlier build in the same build/ folder
            return
        if not source.is_file():
            chosen = os.environ.get(VARIABLE, "")
            what = f"{VARIABLE}={chosen}: no such file" if chosen else f"{source} does not exist"
            raise SystemExit(
                f"precisionprobe setup.py: the SQLite extension to package, {what}. Build it first "
                "(scripts/build.sh, from the repository's root), name another build's precisionprobe.so "
                f"in {VARIABLE}, or set {VARIABLE}=none for the hook client alone (precisionprobe.load() "
                "then says that the extension is missing).")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        os.chmod(target, 0o755)
        # The build keeps line tables for backtraces (14 MB); the wheel needs none (1.8 MB).
        if shutil.which("strip"):
            subprocess.run(["strip", "--strip-debug", str(target)], check=True)


class DistributionWithExtension(Distribution):
    def has_ext_modules(self):
        """True with the extension: its files go to platlib, and the wheel is not pure."""
        return extension_file() is not None


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        python, abi, platform = super().get_tag()
        if self.root_is_pure:
            return python, abi, platform
        return "py3", "none", platform


setup(distclass=DistributionWithExtension,
      cmdclass={"build_py": BuildWithExtension, "bdist_wheel": PlatformWheel})
