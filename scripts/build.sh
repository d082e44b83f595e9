#!/usr/bin/env bash
# Builds build/precisionprobe.so, the loadable extension (warnings are errors).
#   scripts/build.sh            the extension alone
#   scripts/build.sh --tests    the extension and the C++ test binary (scripts/test.sh does this)
# A build directory configured for another checkout (a moved or copied repository) is
# configured anew instead of failing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -f build/CMakeCache.txt ] &&
   ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" build/CMakeCache.txt; then
  echo "build.sh: build/ was configured for another checkout; configuring it anew" >&2
  rm -rf build
fi
cmake -S . -B build -DPP_WERROR=ON -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
if [ "${1:-}" = "--tests" ]; then
  cmake --build build -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target precisionprobe
fi
