#!/usr/bin/env bash
# Installs the Debian packages devmgr needs that are missing. As root it runs
# apt-get; otherwise it prints the exact command to run and fails.
set -euo pipefail

PACKAGES=(
  cmake g++ make ninja-build ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libtinyxml2-dev zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev
  python3 python3-grpcio util-linux procps yamllint
)
# Extra groups: `deps.sh package`, `deps.sh image` (distribution targets), `deps.sh clang`
# (check-thread-safety, test-sanitize, test-tsan, fuzz), `deps.sh format` (check-format).
for group in "$@"; do
  case $group in
    package) PACKAGES+=(dpkg-dev help2man file) ;;
    image) PACKAGES+=(debootstrap podman runc uidmap) ;;
    clang) PACKAGES+=(clang libclang-rt-14-dev) ;;
    format) PACKAGES+=(clang-format) ;;
    *) echo "deps.sh: unknown group $group" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "devmgr needs these Debian packages: ${missing[*]}" >&2
  echo "Install them with:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "Installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd -qq
