#!/usr/bin/env bash
# Builds the real device plugins of versions.txt from their Go modules into
# $OUT (default ../../build/peers): one binary per line, <peer>-<release>
# (e.g. e2e-sample-v1.37.2). Modules come from the Go module proxy through
# the ordinary Go client and stay in GOMODCACHE; objects stay in GOCACHE, so
# a second build only links. Prints the wall time of each build.
# Exit 77 when there is no Go toolchain, or the module proxy cannot be
# reached and the modules are not already cached (tests needing the peers
# then skip).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
OUT=${OUT:-$here/../../build/peers}
[[ -x "$GO" ]] || command -v "$GO" >/dev/null || { echo "peers: no Go toolchain (set GO=/path/to/go)" >&2; exit 77; }
mkdir -p "$OUT"
total_start=$(date +%s)
while read -r peer module release pkg extra; do
  dir="$here/$peer"
  modfile="go.$release.mod"
  [[ -f "$dir/$modfile" ]] || { echo "peers: $dir/$modfile is missing (run $peer/mkmod.sh $release)" >&2; exit 2; }
  start=$(date +%s)
  log="$OUT/download-$peer-$release.log"
  if ! (cd "$dir" && "$GO" mod download -modfile="$modfile") >/dev/null 2>"$log"; then
    if grep -qiE 'dial|lookup|timeout|connection|proxy|no such host|network' "$log"; then
      echo "peers: the Go module proxy is unreachable and $module $release is not cached; skipping" >&2
      sed 's/^/  /' "$log" | head -5 >&2
      exit 77
    fi
    cat "$log" >&2
    exit 1
  fi
  target="$module/$pkg" tags=()
  [[ $pkg == . ]] && target=.  # the module's own package (dra-helper-driver)
  [[ ${extra:-} == tags=* ]] && tags=(-tags "${extra#tags=}")
  (cd "$dir" && "$GO" build -modfile="$modfile" "${tags[@]}" -o "$OUT/$peer-$release" "$target")
  echo "$peer-$release ($module/$pkg at $release): built in $(( $(date +%s) - start )) s" >&2
done < <(awk '!/^#/ && NF' "$here/versions.txt")
echo "peers: all built in $(( $(date +%s) - total_start )) s into $OUT" >&2
