#!/usr/bin/env bash
# The Node binding (bindings/node, docs/languages.md): node --test against
# this build (the MLP against a float64 reference, typed arrays, errors,
# a scalar argument, eight worker_threads, dispose) and the example.
# Usage: run_node_test.sh LOOMC SOURCE_DIR BUILD_DIR (exit 77, a skip,
# when node or the addon is missing: the addon is built when Node's
# headers are installed).
set -euo pipefail
loomc=$1
src=$2
build=$3
addon="$build/lib/loom.node"
if ! command -v node > /dev/null || [ ! -f "$addon" ]; then
  echo "no node or no $addon (Node's headers, /usr/include/node): the Node binding is not tested" >&2
  exit 77
fi
node --version
export LOOMC="$loomc" LOOM_NODE_ADDON="$addon"
cd "$src/bindings/node"
node --test test/
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loomc" build "$src/examples/mlp.loom" --config "$src/configs/host.yaml" -o "$tmp/mlp.so"
out=$(node example/run_mlp.js "$tmp/mlp.so")
echo "$out"
grep -q "^output: float32 \[64,10\]$" <<< "$out"
echo "node: all checks passed"
