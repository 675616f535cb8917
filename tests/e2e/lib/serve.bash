# Sourced by the tests/e2e scripts that start one long-running devmgr process (`serve`, a
# plugin) in the background and stop at the first failure:
#   $tmp        a fresh directory, removed at exit
#   pid=...     the background process to kill at exit (set it after starting one)
#   fail MSG    prints MSG and the last lines of $tmp/serve.err (when there is one), exits 1
#   wait_for DESCRIPTION CMD...   polls CMD every 0.1 s until it succeeds, up to 20 s
tmp=$(mktemp -d "/tmp/dm${E2E_NAME:-e2e}XXXXXX")
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -f "$tmp/serve.err" ]] && tail -20 "$tmp/serve.err" >&2
  exit 1
}
wait_for() {
  local what=$1
  shift
  for _ in $(seq 1 200); do "$@" && return 0; sleep 0.1; done
  fail "timed out waiting for $what"
}
