#!/usr/bin/env bash
# Builds the kubelet oracle for the given profiles (default: all of
# versions.txt) into $OUT (default ../../build/kubelet-oracle), one binary
# per profile: kubelet-oracle-<profile>. Modules come from the Go module
# proxy through the ordinary Go client and stay in GOMODCACHE; objects stay
# in GOCACHE. Prints the wall time of each build.
# Exit 77 when the module proxy cannot be reached and the modules are not
# already cached (so tests depending on it skip).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${OUT:-$here/../../build/kubelet-oracle}
[[ -x "$GO" ]] || command -v "$GO" >/dev/null || { echo "kubelet-oracle: no Go toolchain (set GO=/path/to/go)" >&2; exit 77; }
mkdir -p "$OUT"
profiles=("$@")
if [[ ${#profiles[@]} -eq 0 ]]; then
  mapfile -t profiles < <(awk '!/^#/ && NF { print $1 }' versions.txt)
fi
for p in "${profiles[@]}"; do
  read -r _ release shape drashape < <(awk -v p="$p" '$1 == p' versions.txt) || true
  if [[ -z "${release:-}" ]]; then
    echo "kubelet-oracle: unknown profile $p (versions.txt has: $(awk '!/^#/ && NF { printf "%s ", $1 }' versions.txt))" >&2
    exit 2
  fi
  start=$(date +%s)
  if ! "$GO" mod download -modfile="go.$p.mod" >/dev/null 2>"$OUT/download-$p.log"; then
    if grep -qiE 'dial|lookup|timeout|connection|proxy|no such host|network' "$OUT/download-$p.log"; then
      echo "kubelet-oracle: the Go module proxy is unreachable and k8s.io/kubernetes $release is not cached; skipping" >&2
      sed 's/^/  /' "$OUT/download-$p.log" | head -5 >&2
      exit 77
    fi
    cat "$OUT/download-$p.log" >&2
    exit 1
  fi
  tags="oracle_api_$shape"
  # pod.status.extendedResourceClaimStatus exists from 1.34 (dra_status.go).
  if (( ${p#1.} >= 34 )); then tags="$tags oracle_dra"; fi
  # The DRA manager's API shape (dra_api_<shape>.go), from 1.34.
  if [[ -n "${drashape:-}" && "$drashape" != - ]]; then tags="$tags oracle_dra_$drashape"; fi
  "$GO" build -modfile="go.$p.mod" -tags "$tags" \
    -ldflags "-X main.kubernetesVersion=$release" -o "$OUT/kubelet-oracle-$p" .
  echo "kubelet-oracle-$p (k8s.io/kubernetes $release): built in $(( $(date +%s) - start )) s" >&2
done
