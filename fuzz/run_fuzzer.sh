#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time (the CTest `fuzz` tests):
#   run_fuzzer.sh TARGET SEED_CORPUS BUILD_DIR LIBFUZZER_FLAGS...
# New inputs go to BUILD_DIR/corpus/NAME, never into the checked-in seeds; a crash input goes
# to BUILD_DIR/artifacts/NAME-crash-* and is named at the end, with how to replay it.
set -uo pipefail
target=$1 seeds=$2 build=$3
shift 3
name=$(basename "$seeds")
mkdir -p "$build/corpus/$name" "$build/artifacts"
marker=$(mktemp)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
"$target" -artifact_prefix="$build/artifacts/$name-" -print_final_stats=1 "$@" \
  "$build/corpus/$name" "$seeds" 2>&1 | grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)'
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  find "$build/artifacts" -name "$name-*" -newer "$marker" | while read -r f; do
    echo "fuzz.$name: failing input $f (replay: $target $f)"
  done
fi
rm -f "$marker"
exit "$rc"
