#!/usr/bin/env bash
# Prints the path of a tarball holding a clean minimal Debian bookworm root
# (debootstrap --variant=minbase), making it on first use. The tarball is kept
# in a cache directory outside the checkout (DEVMGR_CACHE_DIR, default
# /var/cache/devmgr as root, ~/.cache/devmgr otherwise) so that the package and
# image tests do not download Debian again on every run.
#
#   scripts/debian-root.sh            -> prints the tarball path
#   DEVMGR_DEBIAN_MIRROR=URL          -> the mirror debootstrap uses (default: apt's)
set -euo pipefail

suite=bookworm
if [ "$(id -u)" -eq 0 ]; then
  cache=${DEVMGR_CACHE_DIR:-/var/cache/devmgr}
else
  cache=${DEVMGR_CACHE_DIR:-$HOME/.cache/devmgr}
fi
tarball=$cache/debian-$suite-minbase.tar
if [ -s "$tarball" ]; then
  echo "$tarball"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "debian-root.sh: debootstrap needs root to build $tarball" >&2
  exit 77
fi
command -v debootstrap >/dev/null || {
  echo "debian-root.sh: debootstrap is not installed (apt-get install debootstrap)" >&2
  exit 77
}

# The mirror apt already uses on this machine, unless one is given.
mirror=${DEVMGR_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
               /etc/apt/sources.list.d/*.sources 2>/dev/null |
           grep -oE '^(deb|URIs:)[[:space:]]+(\[[^]]*\][[:space:]]+)?https?://[^[:space:]]+' |
           grep -v security | head -n1 | grep -oE 'https?://[^[:space:]]+' || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$cache"
work=$(mktemp -d "$cache/root.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "debian-root.sh: debootstrap --variant=minbase $suite from $mirror (once; cached in $cache)" >&2
debootstrap --variant=minbase "$suite" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  echo "debian-root.sh: debootstrap failed" >&2
  exit 1
}
# Same mirror for apt inside the root (the installs of the package's Depends).
echo "deb $mirror $suite main" >"$work/root/etc/apt/sources.list"
tar -C "$work/root" -cf "$tarball.tmp" .
mv "$tarball.tmp" "$tarball"
echo "$tarball"
