#!/usr/bin/env bash
# Builds the precisionprobe wheel, offline: the Python package with the SQLite extension inside,
# tagged for this platform (dist/precisionprobe-VERSION-py3-none-linux_x86_64.whl), for
# `pip install dist/precisionprobe-*.whl` and then `precisionprobe.load(conn)`.
#   scripts/build_wheel.sh              builds the extension (scripts/build.sh; quick when it is
#                                       up to date) and writes the wheel to dist/
#   scripts/build_wheel.sh --out DIR    writes it to DIR instead
# PRECISIONPROBE_WHEEL_EXTENSION=PATH packages that precisionprobe.so as it is, without building
# (CTest's wheel test names its build directory's). Debian's pip, setuptools and wheel build it
# (scripts/setup.sh installs them) with --no-build-isolation --no-index: nothing is downloaded.
# The sources are copied to a temporary folder first, so python/ gets no build/ or egg-info.
set -euo pipefail
out=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?build_wheel.sh: --out needs a folder}; shift 2 ;;
    *) echo "build_wheel.sh: unknown argument '$1' (expected: --out DIR)" >&2; exit 2 ;;
  esac
done
# Paths given relative to where the script was called from.
[ -n "$out" ] && out=$(realpath -m "$out")
case ${PRECISIONPROBE_WHEEL_EXTENSION:-none} in
  none) ;;
  *) PRECISIONPROBE_WHEEL_EXTENSION=$(realpath -m "$PRECISIONPROBE_WHEEL_EXTENSION") ;;
esac
cd "$(dirname "$0")/.."
out=${out:-$PWD/dist}
python=${PP_PYTHON:-/usr/bin/python3}
bash scripts/setup.sh
if [ "${PRECISIONPROBE_WHEEL_EXTENSION:-}" = none ]; then
  echo "build_wheel.sh: PRECISIONPROBE_WHEEL_EXTENSION=none: this script builds the wheel with the extension;" \
       "for the hook client alone run PRECISIONPROBE_WHEEL_EXTENSION=none pip wheel --no-build-isolation ./python" >&2
  exit 2
fi
if [ -z "${PRECISIONPROBE_WHEEL_EXTENSION:-}" ]; then
  bash scripts/build.sh >&2  # stdout is the wheel's path alone
  export PRECISIONPROBE_WHEEL_EXTENSION=$PWD/build/precisionprobe.so
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tar -C python --exclude=__pycache__ -cf - pyproject.toml setup.py README.md precisionprobe | tar -C "$stage" -xf -
mkdir -p "$out"
"$python" -m pip wheel --no-build-isolation --no-index --no-deps --disable-pip-version-check -q \
  -w "$out" "$stage" >&2
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/precisionprobe/_version.py)
wheel=$(ls -t "$out"/precisionprobe-"$version"-*.whl | head -1)
case $wheel in
  *-none-any.whl) echo "build_wheel.sh: $wheel is tagged for any platform but must carry the extension" >&2; exit 1 ;;
esac
echo "$wheel"
