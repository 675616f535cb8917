# Sourced by the tests/e2e scripts that count failures and report them at the end:
#   run WANT_RC CMD...   runs CMD (bounded by $RUN_TIMEOUT seconds when set), keeps its
#                        stdout+stderr in $OUT, and counts a failure when the exit code differs
#   expect TEXT          $OUT must contain TEXT (a fixed string)
#   fail MESSAGE         counts a failure
#   finish NAME          prints the count and exits 1 when anything failed, 0 otherwise
# A failure shows the last 40 lines of the output it is about.
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

run() {
  local want=$1
  shift
  if [[ -n "${RUN_TIMEOUT:-}" ]]; then
    OUT=$(timeout "$RUN_TIMEOUT" "$@" 2>&1)
  else
    OUT=$("$@" 2>&1)
  fi
  local rc=$?
  if [[ $rc -ne $want ]]; then
    fail "exit $rc (want $want): $*"
    echo "$OUT" | tail -40
  fi
}

expect() {
  if ! grep -qF -- "$1" <<<"$OUT"; then
    fail "output lacks: $1"
    echo "$OUT" | tail -40
  fi
}

finish() {
  if [[ $failures -ne 0 ]]; then
    echo "$1: $failures failure(s)"
    exit 1
  fi
  echo "$1: all passed"
}
