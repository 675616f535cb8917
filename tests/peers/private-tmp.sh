#!/bin/sh
# Usage: private-tmp.sh --tmp DIR [--run DIR] BINARY [ARGS...]
# Starts a real device plugin that writes to fixed host paths (the kubernetes
# e2e sample plugin creates /tmp/<device id> in Allocate and, in CDI mode,
# /var/run/cdi/example.com.json) inside devmgr's private mount namespace
# (--private-mount, private_mount: true): DIR is bind-mounted over /tmp (and
# the --run DIR over /run), so what the plugin writes lands in the test's own
# directories and the host's /tmp and /run are never written. The binary is
# opened before the mounts, so it may live under /tmp itself.
# Refuses to run anywhere but in devmgr's private mount namespace.
set -eu
tmp= run=
while [ $# -gt 0 ]; do
  case $1 in
    --tmp) tmp=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    *) break ;;
  esac
done
[ -n "$tmp" ] && [ $# -ge 1 ] || { echo "usage: private-tmp.sh --tmp DIR [--run DIR] BINARY [ARGS...]" >&2; exit 2; }
# devmgr's private namespace, and only it, has its tmpfs (source "devmgr")
# on /var/lib/kubelet (or /var/lib) under the bound device-plugin directory.
if ! awk '$5 == "/var/lib/kubelet" || $5 == "/var/lib" { for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "tmpfs" && $(i+2) == "devmgr") found = 1; break } }
          END { exit !found }' /proc/self/mountinfo; then
  echo "private-tmp.sh: not in devmgr's private mount namespace (run the plugin with --private-mount / private_mount: true); nothing mounted" >&2
  exit 2
fi
bin=$1
shift
[ -x "$bin" ] || { echo "private-tmp.sh: $bin is not an executable" >&2; exit 2; }
exec 9<"$bin"
mkdir -p "$tmp"
if [ -n "$run" ]; then
  mkdir -p "$run"
  mount --bind "$run" /run
fi
mount --bind "$tmp" /tmp
exec /proc/self/fd/9 "$@"
