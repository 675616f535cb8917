#!/usr/bin/env bash
# ctest kubelet_oracle.compare_<profile>: `devmgr run --compare-kubelet` over
# the shipped scenarios, with JSON and JUnit reports in OUT_PREFIX.{json,xml}.
# Exit 77 (skipped) when the oracle binary was not built (no Go toolchain or
# module proxy: kubelet_oracle.build skipped too).
# usage: compare.sh DEVMGR ORACLE_DIR PROFILE SCENARIOS OUT_PREFIX
set -euo pipefail
devmgr=$1 oracle_dir=$2 profile=$3 scenarios=$4 out=$5
if [[ ! -x "$oracle_dir/kubelet-oracle-$profile" ]]; then
  echo "no $oracle_dir/kubelet-oracle-$profile (make kubelet-oracle): skipped" >&2
  exit 77
fi
exec "$devmgr" run --compare-kubelet "$profile" --kubelet-oracle "$oracle_dir" \
  --json "$out.json" --junit "$out.xml" "$scenarios"
