#!/usr/bin/env bash
# Six languages, one answer (docs/languages.md): the MLP and the CNN
# examples, built once for configs/host.yaml, run from C (run_model --raw),
# Python, Rust, Go, Java and Node on the same .npy inputs; every output
# must be bit-identical to C's.  A language whose toolchain is missing is
# named and skipped (all six are installed by scripts/setup.sh; the script
# fails if fewer than four ran).  Usage: agreement.sh LOOMC RUN_MODEL
# SOURCE_DIR BUILD_DIR
set -euo pipefail
loomc=$1
run_model=$2
src=$3
build=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || cargo="$HOME/.cargo/bin/cargo"

# The runners, built once.
ran=()
runners=(c python)
if [ -x "$cargo" ]; then
  rm -f "$src/bindings/rust/Cargo.lock"
  (cd "$src/bindings/rust" && CARGO_TARGET_DIR="$build/rust" LOOM_LIB_DIR="$build/lib" \
    "$cargo" build --offline --quiet --example run_npy)
  runners+=(rust)
else echo "agreement: no cargo, Rust skipped"; fi
if command -v go > /dev/null; then
  (cd "$src/bindings/go" && GOCACHE="$build/go-cache" GOFLAGS=-mod=mod GOPROXY=off \
    CGO_LDFLAGS="-L$build/lib -Wl,-rpath,$build/lib" go build -o "$tmp/run_npy_go" ./cmd/run_npy)
  runners+=(go)
else echo "agreement: no go, Go skipped"; fi
if command -v java > /dev/null && [ -f "$build/java/loom.jar" ] && [ -f "$build/lib/libloom_jni.so" ]; then
  runners+=(java)
else echo "agreement: no JDK or Java binding, Java skipped"; fi
if command -v node > /dev/null && [ -f "$build/lib/loom.node" ]; then
  runners+=(node)
else echo "agreement: no node or Node addon, Node skipped"; fi

run() {  # LANGUAGE LIB OUT INPUTS...
  local language=$1 lib=$2 out=$3
  shift 3
  case $language in
    c) "$run_model" "$lib" --raw "$out" "$@" > /dev/null ;;
    python) PYTHONPATH="$src/python" /usr/bin/python3 - "$lib" "$out" "$@" <<'PY' ;;
import sys
import numpy as np
import loom
lib = loom.runtime.load_module(sys.argv[1])
y = lib["main"](*[np.load(p) for p in sys.argv[3:]]).numpy()
y.astype("<f4").tofile(sys.argv[2])
PY
    rust) "$build/rust/debug/examples/run_npy" "$lib" "$out" "$@" ;;
    go) "$tmp/run_npy_go" "$lib" "$out" "$@" ;;
    java) java -Dorg.loom.library="$build/lib/libloom_jni.so" -cp "$build/java/loom.jar" \
            "$src/bindings/java/example/RunNpy.java" "$lib" "$out" "$@" ;;
    node) LOOM_NODE_ADDON="$build/lib/loom.node" node "$src/bindings/node/example/run_npy.js" "$lib" "$out" "$@" ;;
  esac
}

for model in mlp cnn; do
  "$loomc" build "$src/examples/$model.loom" --config "$src/configs/host.yaml" -o "$tmp/$model.so"
  # One seeded input per parameter of @main, as .npy files.
  /usr/bin/python3 - "$src/examples/$model.loom" "$tmp/$model" <<'PY'
import re, sys
import numpy as np
text = open(sys.argv[1]).read()
params = re.findall(r"%\w+: Tensor\[\(([^)]*)\)", text[text.index("@main"):text.index("->")])
rng = np.random.default_rng(5)
for i, dims in enumerate(params):
    x = rng.standard_normal([int(d) for d in dims.split(",")]).astype(np.float32)
    np.save(f"{sys.argv[2]}_in{i}.npy", x * np.float32(0.2 if i else 1))
PY
  inputs=("$tmp/${model}"_in?.npy)
  for language in "${runners[@]}"; do
    run "$language" "$tmp/$model.so" "$tmp/${model}_$language.f32" "${inputs[@]}"
    if ! cmp -s "$tmp/${model}_c.f32" "$tmp/${model}_$language.f32"; then
      echo "agreement: $model from $language differs from C's" >&2
      exit 1
    fi
  done
  echo "agreement: $model: $(stat -c %s "$tmp/${model}_c.f32") bytes, identical from ${runners[*]}"
done
[ ${#runners[@]} -ge 4 ] || { echo "agreement: only ${runners[*]} ran" >&2; exit 1; }
