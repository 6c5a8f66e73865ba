#!/usr/bin/env bash
# Runs every test: brings the build up to date, then ctest (GoogleTest
# cases, fixture plugins, CLI and out-of-tree SDK end-to-end tests, the
# pytest suites).  The suites labelled long (the whole torchvision zoo:
# hours) run with `ctest --test-dir build -L long`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/CMakeCache.txt ]; then
  echo "test: no build/ yet; run 'bash scripts/setup.sh' first" >&2
  exit 1
fi
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 -LE long
