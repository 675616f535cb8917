#!/usr/bin/env bash
# Writes devmgr.1 and one devmgr-<command>.1 per subcommand into OUTDIR, made by
# help2man from the binary's own --help, so the manual pages never drift from it.
#   scripts/make-manpages.sh path/to/devmgr OUTDIR
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
mkdir -p "$out"
help2man --no-info --section 1 --no-discard-stderr \
  --name "the kubelet's Device Manager without a cluster" \
  --output "$out/devmgr.1" "$bin"
# help2man runs "PROGRAM --help" and "PROGRAM --version": a tiny wrapper per
# subcommand turns those into "devmgr CMD --help" and the binary's version.
wrap=$(mktemp -d)
trap 'rm -rf "$wrap"' EXIT
for cmd in serve run conformance sample-plugin checkpoint podresources; do
  cat >"$wrap/devmgr-$cmd" <<SH
#!/bin/sh
if [ "\$1" = --version ]; then exec "$bin" --version; fi
exec "$bin" $cmd "\$@"
SH
  chmod +x "$wrap/devmgr-$cmd"
  help2man --no-info --section 1 --no-discard-stderr \
    --name "devmgr $cmd (see devmgr(1))" \
    --output "$out/devmgr-$cmd.1" "$wrap/devmgr-$cmd"
done
# Debian ships manual pages compressed (gzip -9n: no name or time stamp).
gzip -9nf "$out"/*.1
