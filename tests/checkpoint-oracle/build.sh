#!/usr/bin/env bash
# Builds the checkpoint reference tool (README.md beside this file) into
# $OUT (default ../../build/checkpoint-oracle) as checksum-oracle, and checks
# it against the golden corpus (tests/testdata/checkpoint). Modules come
# from the Go module proxy through the ordinary Go client and stay in
# GOMODCACHE; objects stay in GOCACHE.
# Without a Go toolchain it says so loudly, writes the reason to
# $OUT/SKIPPED (the oracle tests then skip with it) and exits 77. Any other
# failure (module proxy unreachable, build error, selftest disagreement)
# fails: the tests that need the tool cannot run without it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${OUT:-$here/../../build/checkpoint-oracle}
mkdir -p "$OUT"
if ! [[ -x "$GO" ]] && ! command -v "$GO" >/dev/null; then
  reason="no Go toolchain (looked for go on PATH and /usr/local/go/bin/go; set GO=/path/to/go): the checkpoint oracle tests cannot run"
  echo "$reason" >"$OUT/SKIPPED"
  echo "checkpoint-oracle: SKIPPED: $reason" >&2
  exit 77
fi
rm -f "$OUT/SKIPPED"
ours=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$here/go.mod")
newest=$(awk '!/^#/ && NF { r = $2 } END { print r }' "$here/../kubelet-oracle/versions.txt")
if [[ "$ours" != "$newest" ]]; then
  echo "checkpoint-oracle: go.mod has k8s.io/kubernetes $ours, the newest release of tests/kubelet-oracle/versions.txt is $newest; make them equal (edit go.mod, then go mod tidy)" >&2
  exit 1
fi
start=$(date +%s)
log="$OUT/download.log"
if ! (cd "$here" && "$GO" mod download) >/dev/null 2>"$log"; then
  echo "checkpoint-oracle: downloading the modules of $here/go.mod failed:" >&2
  cat "$log" >&2
  exit 1
fi
(cd "$here" && "$GO" vet ./... && "$GO" build -o "$OUT/checksum-oracle.new" .)
mv -f "$OUT/checksum-oracle.new" "$OUT/checksum-oracle"
echo "checksum-oracle (k8s.io/kubernetes $ours): built in $(( $(date +%s) - start )) s" >&2
"$OUT/checksum-oracle" selftest "$here/../testdata/checkpoint"
