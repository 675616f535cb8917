#!/usr/bin/env bash
# Makes ROOT a clean minimal Debian bookworm root (scripts/debian-root.sh) with
# the devmgr .deb installed by apt-get, which pulls in exactly the package's
# Depends from Debian. Used by the package test and by `make image`.
#   scripts/debian-install-root.sh ROOT path/to/devmgr_X_amd64.deb
# Needs root. Downloaded .debs are kept in the cache directory for later runs.
set -euo pipefail
root=$1
deb=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
tarball=$(bash "$here/debian-root.sh")
cache=$(dirname "$tarball")/apt-archives
mkdir -p "$root" "$cache/partial"
tar -C "$root" -xf "$tarball"
cp "$deb" "$root/tmp/"
# Private mounts: /proc, /dev and the apt cache exist inside ROOT only for
# this install and vanish with the namespace.
unshare -m --propagation private bash -euo pipefail -c '
  root=$1 cache=$2 deb=$3
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --bind "$cache" "$root/var/cache/apt/archives"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get -qq update
  chroot "$root" env DEBIAN_FRONTEND=noninteractive \
    apt-get -qq install -y --no-install-recommends "/tmp/$deb" >/dev/null
' _ "$root" "$cache" "$(basename "$deb")"
rm -f "$root/tmp/$(basename "$deb")"
rm -rf "$root"/var/lib/apt/lists/*
: >"$root/etc/resolv.conf"
