#!/usr/bin/env bash
# Runs every test, in three stages; any failure in any stage fails the command:
#   normal  build/: the C++ suite, the SQL files through the sqlite3 shell, the Python hook-client
#           tests and the docs check, against real Prometheus and VictoriaMetrics on loopback;
#   asan    build-asan/ (-DPP_SANITIZE=ON: AddressSanitizer + UBSan, every finding fatal): the
#           C++ suite and the sql_shape fuzz target's random inputs in-process with leak
#           checking, then the SQL files and docs examples with the sanitized extension loaded
#           into the sqlite3 shell, and the fault tests with it loaded into Python (libasan
#           preloaded into the shell and that Python only, leak checking off there: they are
#           not ours). The hook client's tests and the notebook run in the normal stage only:
#           they train PyTorch models in many subprocesses, each of which would need the ASan
#           runtime preloaded into an interpreter and torch at several times the cost, and the
#           extension code they reach is what runs here;
#   fuzz    build-fuzz/ (clang, -DPP_FUZZ=ON): each parser's libFuzzer target in fuzz/ for
#           PP_FUZZ_SECONDS seconds (default 5), from its corpus in fuzz/corpus/ (sql_shape,
#           which needs the whole engine, runs in the other stages: fuzz/CMakeLists.txt).
# Arguments go to every stage's ctest (e.g. -R prom_). PP_TEST_STAGES picks stages
# (default "normal asan fuzz"). The last line counts the tests of all stages.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stages=${PP_TEST_STAGES:-normal asan fuzz}
jobs=$(nproc)
passed=0 failed=0 summary=()

# Runs ctest with the given arguments in build dir $1, adding its counts to the totals.
run_ctest() {
  local dir=$1 stage=$2
  shift 2
  local log rc=0
  log=$(mktemp)
  (cd "$dir" && ctest --output-on-failure --timeout 600 -j"$jobs" "$@") 2>&1 | tee "$log" || rc=$?
  local line total bad
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  rm -f "$log"
  if [ -n "$line" ]; then
    total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
    bad=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
  elif [ "$rc" -eq 0 ]; then
    total=0 bad=0  # no test matched the arguments
  else
    total=1 bad=1
  fi
  [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1 && total=$((total + 1))
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  summary+=("$stage $((total - bad))/$total")
}

# A build folder configured for another checkout (a moved or copied repository) is removed, to
# be configured anew instead of failing, as scripts/build.sh does for build/.
forget_other_checkout() {
  if [ -f "$1/CMakeCache.txt" ] &&
     ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$1/CMakeCache.txt"; then
    echo "test.sh: $1/ was configured for another checkout; configuring it anew" >&2
    rm -rf "$1"
  fi
}

stage_failed() {  # a stage that could not build
  echo "test.sh: stage $1 failed: $2" >&2
  failed=$((failed + 1))
  summary+=("$1 build failed")
}

bash scripts/setup.sh
libasan=$(gcc -print-file-name=libasan.so)

# Configures and builds build-asan/. -O1 -g1: a third of -O2 -g's compile time under the
# sanitizers, line numbers kept. GCC's -Wmaybe-uninitialized misfires on sanitized libstdc++
# code (std::regex) at -O1; the normal stage keeps it.
build_asan() {
  forget_other_checkout build-asan
  cmake -S . -B build-asan -DPP_SANITIZE=ON -DPP_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS=-Wno-maybe-uninitialized \
    -DPP_TEST_PYTHON_PRELOAD="$libasan:libstdc++.so.6" >/dev/null &&
    cmake --build build-asan -j"$jobs"
}

# Configures and builds build-fuzz/'s targets. -O0 and line tables: a short run in CI needs the
# build more than the speed (by hand, PP_FUZZ_OPT=-O1 builds as OSS-Fuzz does, for long runs).
build_fuzz() {
  forget_other_checkout build-fuzz
  cmake -S . -B build-fuzz -DPP_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${PP_FUZZ_OPT:--O0} -gline-tables-only" \
    -DPP_FUZZ_SECONDS="${PP_FUZZ_SECONDS:-5}" >/dev/null &&
    cmake --build build-fuzz --target pp_fuzz -j"$jobs"
}

# The sanitized and fuzz builds start at once, in the background at the lowest CPU priority: the
# normal stage's build and tests leave a sixth of the 2 cores idle (tests waiting on servers,
# processes starting, a last test running alone), which these builds take without taking time
# from them; each stage then waits for its own build, which has the CPU to itself once the tests
# before it are done. A build's output is printed when its stage begins. Each runs in a process
# group of its own (set -m), stopped whole if this script ends first (interrupted).
declare -A early_pid early_log
stop_early_builds() {
  local pid
  for pid in "${early_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_early_builds EXIT
for stage in $stages; do
  case $stage in
    asan | fuzz)
      [ -z "${early_log[$stage]:-}" ] || continue  # (a stage named twice)
      early_log[$stage]=$(mktemp)
      set -m
      (renice -n 19 -p "$BASHPID" >/dev/null && "build_$stage") >"${early_log[$stage]}" 2>&1 &
      early_pid[$stage]=$!
      set +m
      ;;
  esac
done

# Stage $1's build, started early: waits for it and prints its output (a stage named twice
# builds again, which finds its build up to date).
early_build() {
  if [ -z "${early_pid[$1]:-}" ]; then
    "build_$1"
    return
  fi
  local rc=0
  wait "${early_pid[$1]}" || rc=$?
  unset "early_pid[$1]"
  cat "${early_log[$1]}"
  rm -f "${early_log[$1]}"
  return "$rc"
}

for stage in $stages; do
  echo "==== test.sh: stage $stage (at ${SECONDS} s)" >&2
  case $stage in
    normal)
      if bash scripts/build.sh --tests; then
        run_ctest build normal "$@"
      else
        stage_failed normal "scripts/build.sh --tests"
      fi
      ;;
    asan)
      if early_build asan; then
        mkdir -p build-asan/asan-bin
        # `sqlite3` for the SQL tests and docs: the system shell with libasan loaded first, as
        # the sanitized extension requires of the process that loads it, and libstdc++ with it
        # (the shell is C: without it ASan finds no __cxa_throw to intercept and aborts at the
        # extension's first exception).
        cat >build-asan/asan-bin/sqlite3 <<EOF
#!/bin/sh
export LD_PRELOAD="$libasan:libstdc++.so.6\${LD_PRELOAD:+:\$LD_PRELOAD}"
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0"
exec /usr/bin/sqlite3 "\$@"
EOF
        chmod +x build-asan/asan-bin/sqlite3
        export ASAN_OPTIONS=detect_leaks=1
        export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
        # The C++ suite (in a few processes, CppSuite.shard_N_of_M: tests/CMakeLists.txt) and
        # sql_shape's random inputs link the extension's code in-process, leaks checked; then
        # the tests that load it into the sqlite3 shell or Python.
        run_ctest build-asan asan -R '^([A-Z]|sql_shape\.)' "$@"
        if [ "$#" -eq 0 ]; then
          cpp_tests=$(build-asan/tests/pp_tests --gtest_list_tests | grep -c '^  ' || true)
          summary[-1]+=" (the C++ suite's $cpp_tests tests in its CppSuite shards)"
        fi
        # faults.parts and faults.parts_fetch (with the fetch of jobs far apart on a GPU: the
        # fetch's SQL, whose C++ the other refreshes run) run in the normal stage only: under ASan
        # faults.retention's refreshes while the files grow take the same paths (the import of
        # growing files, the align step and the fold in parts; a minute of the stage's time), and
        # the C++ suite above has the refresh sequences in-process. So does faults.retention_merge
        # (two hosts' states merged): the C++ suite reads pp_estimator_states and decodes, merges
        # and solves states under ASan, and the test took 42 s of the stage.
        PATH="$root/build-asan/asan-bin:$PATH" run_ctest build-asan asan-loaded -R '^(sql\.|docs\.examples$|faults\.)' \
          -E '^faults\.(parts(_fetch)?|retention_merge)$' "$@"
        unset ASAN_OPTIONS UBSAN_OPTIONS
      else
        stage_failed asan "building build-asan"
      fi
      ;;
    fuzz)
      if early_build fuzz; then
        run_ctest build-fuzz fuzz -L fuzz "$@"
        # How many inputs each target ran (libFuzzer's final stats, in CTest's log).
        awk '/^[0-9]+\/[0-9]+ Testing: fuzz\./ { name = $3 }
             /stat::number_of_executed_units/ && name { printf "%s: %s inputs\n", name, $2; name = "" }' \
          build-fuzz/Testing/Temporary/LastTest.log >&2 || true
      else
        stage_failed fuzz "building build-fuzz"
      fi
      ;;
    *)
      stage_failed "$stage" "unknown stage (PP_TEST_STAGES: normal asan fuzz)"
      ;;
  esac
done

echo "test.sh: $passed passed, $failed failed (${summary[*]}; ${SECONDS} s)"
[ "$failed" -eq 0 ]
