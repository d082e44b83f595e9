"""The docs tests load the extension into Python (sqlite3, pandas, nbconvert's kernel). An
extension built with -DPP_SANITIZE=ON needs the ASan runtime loaded first in the process, which
Python is not: loading it would abort the interpreter. Against such a build (scripts/test.sh's
asan stage runs the docs.* tests) these tests are skipped, saying why; docs.examples, which runs
the examples in the sqlite3 shell, still checks the sanitized extension there."""
import mmap
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _needs_asan(extension):
    for candidate in (Path(extension), Path(str(extension) + ".so")):
        if candidate.is_file():
            with open(candidate, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(b"libasan.so") >= 0
    return False


def pytest_collection_modifyitems(config, items):
    extension = os.environ.get("PP_EXTENSION", str(ROOT / "build" / "precisionprobe"))
    if _needs_asan(extension) and "libasan" not in os.environ.get("LD_PRELOAD", ""):
        skip = pytest.mark.skip(reason=f"{extension} is built with AddressSanitizer, which Python "
                                       "cannot load without LD_PRELOAD of libasan")
        for item in items:
            item.add_marker(skip)
