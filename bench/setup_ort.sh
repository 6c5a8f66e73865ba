#!/bin/bash
# ONNX Runtime for bench/ort.py (bench/README.md, "ONNX Runtime"): npm's
# onnxruntime-node, which ships libonnxruntime.so, installed into
# bench/.ort (ignored by git).  Never needed by the build or the tests.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${LOOM_ORT_VERSION:-1.30}"
if ! command -v npm >/dev/null; then
  echo "bench/setup_ort.sh: npm is not installed (apt-get install npm)" >&2
  exit 1
fi
mkdir -p "$here/.ort"
npm install --prefix "$here/.ort" --ignore-scripts --no-audit --no-fund "onnxruntime-node@$version"
echo "onnxruntime-node $(node -p "require('$here/.ort/node_modules/onnxruntime-node/package.json').version") in $here/.ort"
