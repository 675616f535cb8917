#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (in the ASan+UBSan build directory of
# `make test-sanitize`, which is configured with DEVMGR_FUZZ=ON) and runs each for SECONDS.
#   run.sh BUILD_DIR SECONDS JOBS
# Environment: FUZZ_TARGETS="checkpoint quantity" (default: every tests/fuzz/*_fuzz.cc),
# FUZZ_RUNS=N (stop after N executions instead), FUZZ_MERGE=1 (afterwards minimise the
# committed corpus tests/fuzz/corpus/<target> with what the run found).
# A crash, timeout or out-of-memory input is copied to tests/fuzz/regressions/<target>/, which
# `make test` replays (ctest fuzz.<target>); the script then exits non-zero.
set -euo pipefail
dir=$1 secs=${2:-60} jobs=${3:-2}
src=$(cd "$(dirname "$0")/../.." && pwd)
fz=$src/tests/fuzz
bash "$src/tests/robustness/sanitize.sh" asan "$dir" "$jobs" configure-only
targets=${FUZZ_TARGETS:-$(cd "$fz" && ls *_fuzz.cc | sed 's/_fuzz\.cc$//')}
cmake --build "$dir" -j "$jobs" --target $(for t in $targets; do echo "fuzz_$t"; done)

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rc=0
printf '%-15s %12s %8s %10s %8s  %s\n' target executions seconds exec/s corpus result
for t in $targets; do
  work=$dir/fuzz-work/$t
  mkdir -p "$work/corpus" "$work/crashes"
  opts=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/crashes/")
  if [ -n "${FUZZ_RUNS:-}" ]; then opts+=(-runs="$FUZZ_RUNS"); else opts+=(-max_total_time="$secs"); fi
  [ -f "$fz/$t.dict" ] && opts+=(-dict="$fz/$t.dict")
  start=$(date +%s)
  result=ok
  if ! "$dir/fuzz_$t" "${opts[@]}" "$work/corpus" "$fz/corpus/$t" >"$work/log" 2>&1; then
    result="FAILED (log: $work/log)"
    rc=1
    mkdir -p "$fz/regressions/$t"
    for a in "$work"/crashes/*; do
      [ -f "$a" ] && cp "$a" "$fz/regressions/$t/" && echo "  regression input: tests/fuzz/regressions/$t/$(basename "$a")"
    done
    grep -m5 -E 'ERROR|FUZZ_CHECK|runtime error' "$work/log" | sed 's/^/  /' || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
  n=$(($(ls "$work/corpus" | wc -l) + $(ls "$fz/corpus/$t" 2>/dev/null | wc -l)))
  printf '%-15s %12s %8s %10s %8s  %s\n' "$t" "${execs:-?}" $(($(date +%s) - start)) \
    "${rate:-?}" "$n" "$result"
  if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$result" = ok ]; then
    rm -rf "$work/merged" && mkdir -p "$work/merged"
    "$dir/fuzz_$t" -merge=1 "$work/merged" "$fz/corpus/$t" "$work/corpus" >"$work/merge.log" 2>&1
    rm -rf "$fz/corpus/$t" && mv "$work/merged" "$fz/corpus/$t"
    echo "  corpus minimised: $(ls "$fz/corpus/$t" | wc -l) files, $(du -sh "$fz/corpus/$t" | cut -f1)"
  fi
done
exit $rc
