#!/usr/bin/env bash
# make test-package: the .deb installs into a clean debootstrapped Debian root
# (minbase, bookworm) with nothing but its declared Depends, and there runs
# devmgr --version, a conformance run of the reference plugin and a checkpoint
# verify. Exit 77 (skipped) where it cannot run: not root, no debootstrap.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
deb=$(ls -t "$BUILD"/devmgr_*_amd64.deb 2>/dev/null | head -n1 || true)
[ -n "$deb" ] || { echo "no $BUILD/devmgr_*_amd64.deb: run make package first" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null; then
  echo "SKIP: the package test needs root and debootstrap" >&2
  exit 77
fi
work=$(mktemp -d /tmp/devmgr-pkgtest-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== installing $(basename "$deb") into a clean Debian bookworm root"
bash "$ROOT/scripts/debian-install-root.sh" "$work/root" "$deb"

echo "== Depends, as dpkg recorded them (no -dev packages)"
deps=$(chroot "$work/root" dpkg-query -W -f='${Depends}' devmgr)
echo "$deps"
if echo "$deps" | grep -q -- '-dev'; then echo "FAIL: a -dev package in Depends" >&2; exit 1; fi

cp "$ROOT/tests/testdata/checkpoint/v2-multi-resource.json" "$work/root/tmp/good-checkpoint"
cp "$ROOT/tests/testdata/checkpoint/bad-checksum-plus-one.json" "$work/root/tmp/bad-checkpoint"
unshare -m -p -f --mount-proc="$work/root/proc" --propagation private bash -euo pipefail -c '
  root=$1
  mount --rbind /dev "$root/dev"
  run() { echo "+ $*"; chroot "$root" "$@"; }
  run devmgr --version
  run test -s /usr/share/man/man1/devmgr.1.gz
  run test -s /usr/share/devmgr/examples/sample-plugin.yaml
  run test -d /usr/share/devmgr/scenarios
  run devmgr checkpoint verify /tmp/good-checkpoint
  if chroot "$root" devmgr checkpoint verify /tmp/bad-checkpoint; then
    echo "FAIL: a corrupt checkpoint verified" >&2; exit 1
  fi
  run devmgr conformance -q --plugin "devmgr sample-plugin --config /usr/share/devmgr/examples/sample-plugin.yaml --dir \$DEVMGR_PLUGIN_DIR" \
    --junit /tmp/conformance.xml
  run grep -q "<testsuite" /tmp/conformance.xml
' _ "$work/root"
echo "deb_install_test: 1 passed, 0 failed"
