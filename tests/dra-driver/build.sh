#!/usr/bin/env bash
# Builds the project's test DRA driver (tests/dra-driver, a plain gRPC server
# of the kubelet's DRA API at the k8s.io/kubelet release pinned in go.mod)
# into $OUT (default ../../build/dra-driver/dra-driver). Modules come from
# the Go module proxy through the ordinary Go client and stay in GOMODCACHE.
# Exit 77 when there is no Go toolchain, or the module proxy cannot be
# reached and the modules are not already cached (tests needing the driver
# then skip).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${OUT:-$here/../../build/dra-driver}
[[ -x "$GO" ]] || command -v "$GO" >/dev/null || { echo "dra-driver: no Go toolchain (set GO=/path/to/go)" >&2; exit 77; }
mkdir -p "$OUT"
cd "$here"
start=$(date +%s)
if ! "$GO" mod download >/dev/null 2>"$OUT/download.log"; then
  if grep -qiE 'dial|lookup|timeout|connection|proxy|no such host|network' "$OUT/download.log"; then
    echo "dra-driver: the Go module proxy is unreachable and the modules are not cached; skipping" >&2
    sed 's/^/  /' "$OUT/download.log" | head -5 >&2
    exit 77
  fi
  cat "$OUT/download.log" >&2
  exit 1
fi
"$GO" build -o "$OUT/dra-driver" .
echo "dra-driver: built in $(( $(date +%s) - start )) s into $OUT" >&2
