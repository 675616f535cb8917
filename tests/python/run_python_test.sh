#!/usr/bin/env bash
# Runs one Python test with a python3 that has grpcio (Debian python3-grpcio
# lives in /usr/bin/python3's dist-packages, which a pyenv or venv python3 on
# PATH may not see). Exit 77 (ctest SKIP) when none has it.
set -u
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import grpc' 2>/dev/null; then
    exec "$py" "$@"
  fi
done
echo "SKIP: no python3 with the grpc module (Debian: apt-get install python3-grpcio)"
exit 77
