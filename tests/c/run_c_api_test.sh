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
# The CNN built for OpenCL (PoCL) and for Vulkan (lavapipe): the same
# program, its kernels on the device, through the runtime halves
# opencl_runtime and vulkan_runtime, which link no compiler library (nor
# is one mapped: the test reads /proc/self/maps).
plugins=$(dirname "$loomc")/../lib/loom/plugins
if ldd "$plugins/loom_opencl_runtime.so" | grep -q libloom_core; then
  echo "loom_opencl_runtime.so links libloom_core" >&2; exit 1
fi
"$loomc" build "$src/examples/cnn.loom" --config "$src/configs/opencl.yaml" -o "$tmp/cnn_cl.so"
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(6)
shapes = [(8, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1), (16, 8, 3, 3), (16, 1, 1), (10, 784), (10,)]
for k, shape in enumerate(shapes):
    np.save(f"{sys.argv[1]}/cnn{k}.npy", (rng.standard_normal(shape) * (0.2 if k else 1)).astype(np.float32))
PY
cnn=()
cnn_args=()
for k in 0 1 2 3 4 5 6; do cnn+=("$tmp/cnn$k.npy"); cnn_args+=(--input "$tmp/cnn$k.npy"); done
"$loomc" run "$tmp/cnn_cl.so" "${cnn_args[@]}" --output "$tmp/cy.npy" > /dev/null
"$test" "$tmp/cnn_cl.so" "$tmp/cy.npy" "${cnn[@]}"
out=$("$run_model" "$tmp/cnn_cl.so" "${cnn[@]}")
echo "$out"
grep -q "^output: float32 (8, 10)$" <<< "$out"
# The same CNN built for Vulkan (lavapipe), through vulkan_runtime.
if ldd "$plugins/loom_vulkan_runtime.so" | grep -q libloom_core; then
  echo "loom_vulkan_runtime.so links libloom_core" >&2; exit 1
fi
"$loomc" build "$src/examples/cnn.loom" --config "$src/configs/vulkan.yaml" -o "$tmp/cnn_vk.so"
"$loomc" run "$tmp/cnn_vk.so" "${cnn_args[@]}" --output "$tmp/vy.npy" > /dev/null
"$test" "$tmp/cnn_vk.so" "$tmp/vy.npy" "${cnn[@]}"
# One library with functions of all four kinds: host code (llvm), an
# OpenCL kernel, a Vulkan kernel and npu regions (examples/multi_device.loom
# with its dense layers partitioned for the npu), run through the runtime
# halves alone; ldd of every runtime half shows no compiler library (Loom's,
# LLVM, MLIR or the shader compiler; torchscript_runtime's libtorch is what
# runs its modules).
for half in "$plugins"/loom_*_runtime.so; do
  if ldd "$half" | grep -q -E 'libloom_core|libLLVM|libMLIR|libshaderc'; then
    echo "$(basename "$half") links a compiler library:" >&2; ldd "$half" >&2; exit 1
  fi
done
sed 's/^  kind: llvm .*/&\n  partition: [npu]/' "$src/examples/multi_device.yaml" > "$tmp/four.yaml"
grep -q "partition: \[npu\]" "$tmp/four.yaml"
"$loomc" build "$src/examples/multi_device.loom" --config "$tmp/four.yaml" -o "$tmp/four.so"
tree=$("$loomc" inspect "$tmp/four.so")
for kind in "library:" "npu:" "opencl:" "vulkan:"; do
  grep -q "$kind" <<< "$tree" || { echo "no $kind module in the library:" >&2; echo "$tree" >&2; exit 1; }
done
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(7)
for k, shape in enumerate([(32, 64), (64, 64), (64,), (64, 64), (10, 64)]):
    np.save(f"{sys.argv[1]}/four{k}.npy", (rng.standard_normal(shape) * 0.3).astype(np.float32))
PY
four=()
four_args=()
for k in 0 1 2 3 4; do four+=("$tmp/four$k.npy"); four_args+=(--input "$tmp/four$k.npy"); done
"$loomc" run "$tmp/four.so" "${four_args[@]}" --output "$tmp/fy.npy" > /dev/null
/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
x, w1, b1, w2, w3 = (np.load(f"{sys.argv[1]}/four{k}.npy").astype(np.float64) for k in range(5))
h = np.maximum(x @ w1.T + b1, 0)
h = h + np.tanh(h @ w2.T)
z = h @ w3.T
want = np.exp(z - z.max(axis=1, keepdims=True))
want /= want.sum(axis=1, keepdims=True)
err = np.abs(np.load(f"{sys.argv[1]}/fy.npy") - want).max()
assert err < 1e-4, f"the four-kind library is {err} from NumPy"
PY
"$test" "$tmp/four.so" "$tmp/fy.npy" "${four[@]}"
# No leak over 1,000 load/call/unload cycles, under valgrind where it is
# installed (a tiny model: valgrind runs code some 50x slower).
if command -v valgrind > /dev/null; then
  printf '@main = fn(%%x: Tensor[(16), float32]) -> Tensor[(16), float32] {\n  relu(%%x)\n}\n' > "$tmp/tiny.loom"
  # valgrind runs no AVX-512: the tiny model is built for x86-64-v2.
  sed 's/mcpu: native/mcpu: x86-64-v2/' "$src/configs/host.yaml" > "$tmp/v2.yaml"
  grep -q "mcpu: x86-64-v2" "$tmp/v2.yaml"
  "$loomc" build "$tmp/tiny.loom" --config "$tmp/v2.yaml" -o "$tmp/tiny.so"
  /usr/bin/python3 -c "import numpy as np; np.save('$tmp/t.npy', np.linspace(-1, 1, 16, dtype=np.float32))"
  "$loomc" run "$tmp/tiny.so" --input "$tmp/t.npy" --output "$tmp/ty.npy" > /dev/null
  LOOM_C_API_TEST_CYCLES=1000 valgrind --quiet --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --error-exitcode=3 "$test" "$tmp/tiny.so" "$tmp/ty.npy" "$tmp/t.npy"
else
  echo "valgrind is not installed: the leak check over 1,000 cycles is skipped"
fi
