#!/usr/bin/env bash
# The C API test (c_api_test.c) and example (examples/c/run_model.c) on
# examples/mlp.loom built for configs/host.yaml, against `loomc run`'s output.
#   run_c_api_test.sh LOOMC C_API_TEST RUN_MODEL SOURCE_DIR
set -euo pipefail
loomc=$1 test=$2 run_model=$3 src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$loomc" build "$src/examples/mlp.loom" --config "$src/configs/host.yaml" -o "$tmp/mlp.so"
# The MLP's input and weights (7 parameters), and what loomc run gives on them.
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(5)
shapes = [(64, 784), (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
for k, shape in enumerate(shapes):
    np.save(f"{sys.argv[1]}/in{k}.npy", (rng.standard_normal(shape) * (0.05 if k else 1)).astype(np.float32))
PY
inputs=()
for k in 0 1 2 3 4 5 6; do inputs+=("$tmp/in$k.npy"); done
input_args=()
for f in "${inputs[@]}"; do input_args+=(--input "$f"); done
"$loomc" run "$tmp/mlp.so" "${input_args[@]}" --output "$tmp/y.npy" > /dev/null
"$test" "$tmp/mlp.so" "$tmp/y.npy" "${inputs[@]}"
# The test and the example link the runtime library alone.
for exe in "$test" "$run_model"; do
  if ldd "$exe" | grep -q libloom_core; then echo "$exe links libloom_core" >&2; exit 1; fi
done
out=$("$run_model" "$tmp/mlp.so" "${inputs[@]}")
echo "$out"
grep -q "^output: float32 (64, 10)$" <<< "$out"
grep -qE "^top-5:( [0-9]+ \([-0-9.e]+\)){5}$" <<< "$out"
# A bad input is one line naming the file, not a crash.
if "$run_model" "$tmp/mlp.so" "$tmp/missing.npy" 2> "$tmp/err"; then exit 1; fi
grep -q "missing.npy" "$tmp/err"
# Too few inputs: Loom's own message, not a crash.
if "$run_model" "$tmp/mlp.so" "$tmp/in0.npy" 2> "$tmp/err"; then exit 1; fi
cat "$tmp/err"
grep -q "^loom: " "$tmp/err"
