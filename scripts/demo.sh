#!/usr/bin/env bash
# The main demo: list the plugins Loom discovers (without loading them),
# inspect one, load it by name, and call functions it registered -- the
# last call loads its plugin lazily, on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOMC=build/bin/loomc
run() { echo; echo "\$ loomc $*"; "$LOOMC" "$@"; }

run plugins list
run plugins info hello
run plugins load hello
run call hello.greet "Loom user"
run call hello.add 40 2
result=$("$LOOMC" call hello.add 40 2)
[ "$result" = "42" ] || { echo "demo: expected 42 from hello.add, got '$result'" >&2; exit 1; }

# Compile a small model with the reference interpreter into one library and
# look inside: the VM over the graph function, the fused prim function.
# (configs/ref.yaml runs the default pipeline: graph passes, fusion,
# lowering and the loop passes; docs/passes.md.)
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
run build examples/gelu_mlp_tail.loom --config configs/ref.yaml -o "$out/tail.so"
run inspect "$out/tail.so"
"$LOOMC" inspect "$out/tail.so" | grep -q "ref: 1 function (fused_add_gelu_add_clip)" \
  || { echo "demo: the built library lacks its prim functions" >&2; exit 1; }

# Run it on NumPy inputs and check the result against NumPy.
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
for name, shape in [("h", (8, 64)), ("bias", (64,)), ("x", (8, 64))]:
    np.save(f"{sys.argv[1]}/{name}.npy", rng.standard_normal(shape).astype(np.float32))
PY
run run "$out/tail.so" --input "$out/h.npy" --input "$out/bias.npy" --input "$out/x.npy" --output "$out/y.npy" --bench 20
/usr/bin/python3 - "$out" <<'PY'
import sys, math, numpy as np
d = sys.argv[1]
h, b, x, y = (np.load(f"{d}/{n}.npy").astype(np.float64) for n in ("h", "bias", "x", "y"))
a = h + b
gelu = a * (1 + np.vectorize(math.erf)(a / math.sqrt(2))) / 2
want = np.clip(gelu + x, -6, 6)
err = np.abs(y - want).max()
print(f"max |loom - numpy| = {err:.2e}")
sys.exit(0 if err < 1e-5 else "demo: the result differs from NumPy")
PY
echo; echo "demo: ok"
