#!/usr/bin/env bash
# ctest deploy.manifests: the Kubernetes manifests under deploy/ are valid
# YAML (yamllint) and decode strictly into the real Kubernetes API types
# (tests/deploy/validate_test.go, Go modules from the module proxy, cached).
# Exit 77 (skipped) when neither Go nor yamllint is available.
set -euo pipefail
ROOT=${DEVMGR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
ran=0
if command -v yamllint >/dev/null; then
  yamllint -s -c "$ROOT/tests/deploy/yamllint.yaml" "$ROOT"/deploy/*.yaml "$ROOT"/examples/ci/*.yml
  echo "yamllint: deploy/*.yaml clean"
  ran=1
else
  echo "yamllint not installed (apt-get install yamllint): skipping the lint" >&2
fi
GO=$(command -v go || echo /usr/local/go/bin/go)
if [ -x "$GO" ]; then
  (cd "$ROOT/tests/deploy" && DEVMGR_SOURCE_DIR=$ROOT GOFLAGS=-mod=readonly "$GO" test -count=1 ./...)
  ran=1
else
  echo "go not found: skipping the decode into Kubernetes types" >&2
fi
[ "$ran" = 1 ] || exit 77
