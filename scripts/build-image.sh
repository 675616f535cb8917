#!/usr/bin/env bash
# make image: builds the devmgr container image here, with no registry pull:
# a minimal Debian bookworm root made by debootstrap, the devmgr .deb installed
# into it with apt-get (its Depends only), imported with `podman import`.
# The result is the image packaging/Containerfile builds from
# debian:bookworm-slim for users who have a registry.
#   scripts/build-image.sh BUILD_DIR [IMAGE]      (default IMAGE localhost/devmgr:<version>)
# Exit 77 with a message where podman or debootstrap cannot run here.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-build}" && pwd)
deb=$(ls -t "$BUILD"/devmgr_*_amd64.deb 2>/dev/null | head -n1 || true)
[ -n "$deb" ] || { echo "no $BUILD/devmgr_*_amd64.deb (make package)" >&2; exit 1; }
version=$(basename "$deb" | sed -E 's/^devmgr_(.*)_amd64\.deb$/\1/')
image=${2:-localhost/devmgr:$version}
if [ "$(id -u)" -ne 0 ] || ! command -v podman >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "SKIP: make image needs root, podman and debootstrap (apt-get install podman runc debootstrap)" >&2
  exit 77
fi
# shellcheck source=podman-env.sh
. "$ROOT/scripts/podman-env.sh"
work=$(mktemp -d /tmp/devmgr-image-XXXXXX)
trap 'rm -rf "$work" ${DEVMGR_CONTAINERS_CONF_MADE:+"$DEVMGR_CONTAINERS_CONF_MADE"}' EXIT
bash "$ROOT/scripts/debian-install-root.sh" "$work/root" "$deb"
rm -rf "$work/root"/var/cache/apt/*.bin "$work/root"/var/log/apt/* "$work/root"/var/log/dpkg.log
tar -C "$work/root" --numeric-owner -c . | podman import \
  --change 'ENTRYPOINT ["devmgr"]' \
  --change 'CMD ["--help"]' \
  --change "LABEL org.opencontainers.image.title=devmgr org.opencontainers.image.version=$version" \
  - "$image" >/dev/null
echo "$image"
