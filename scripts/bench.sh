#!/usr/bin/env bash
# make bench: runs every benchmark in bench/ and prints its figures.
#   device_update_bench  - a 100,000-device ListAndWatch update (target < 100 ms)
#   checkpoint_bench     - checkpoint decode + checksum verify throughput (target >= 300 MB/s;
#                          compared with the Go oracle when DEVMGR_ORACLE or
#                          /tmp/oracle/bin/checksum-oracle exists)
#   allocate_bench       - allocation from 1k/10k/100k-device pools (linear scaling)
set -euo pipefail
BUILD_DIR=${1:-build}
for b in device_update_bench checkpoint_bench allocate_bench; do
  printf '\n== %s\n' "$b"
  "$BUILD_DIR/$b"
done
