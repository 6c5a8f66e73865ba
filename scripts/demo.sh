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

# The main demo: compile an MLP (784-512-512-10, batch 64) and a small CNN
# for this CPU with the llvm target (configs/host.yaml: the default
# pipeline, AutoSchedule, LLVM machine code) into shared libraries, look
# inside one, run both on NumPy inputs and check them against NumPy.
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
run build examples/mlp.loom --config configs/host.yaml -o "$out/mlp.so"
run build examples/cnn.loom --config configs/host.yaml -o "$out/cnn.so"
run inspect "$out/mlp.so"
"$LOOMC" inspect "$out/mlp.so" | grep -q "library: " \
  || { echo "demo: the MLP library lacks its compiled functions" >&2; exit 1; }

/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
d, rng = sys.argv[1], np.random.default_rng(0)
def save(name, *shape, scale=1.0):
    np.save(f"{d}/{name}.npy", (rng.standard_normal(shape) * scale).astype(np.float32))
save("x", 64, 784); save("w1", 512, 784, scale=0.05); save("b1", 512); save("w2", 512, 512, scale=0.05)
save("b2", 512); save("w3", 10, 512, scale=0.05); save("b3", 10)
save("img", 8, 1, 28, 28); save("k1", 8, 1, 3, 3, scale=0.3); save("c1", 8, 1, 1); save("k2", 16, 8, 3, 3, scale=0.1)
save("c2", 16, 1, 1); save("wd", 10, 784, scale=0.05); save("bd", 10)
PY
args() { for n in "$@"; do printf -- "--input %s/%s.npy " "$out" "$n"; done; }
run run "$out/mlp.so" $(args x w1 b1 w2 b2 w3 b3) --output "$out/mlp_y.npy" --bench 50
run run "$out/cnn.so" $(args img k1 c1 k2 c2 wd bd) --output "$out/cnn_y.npy" --bench 50
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
d = sys.argv[1]
L = lambda n: np.load(f"{d}/{n}.npy").astype(np.float64)
def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True)); return e / e.sum(-1, keepdims=True)
relu = lambda z: np.maximum(z, 0)
h = relu(L("x") @ L("w1").T + L("b1")); h = relu(h @ L("w2").T + L("b2"))
mlp = softmax(h @ L("w3").T + L("b3"))
def conv(x, k):  # 3x3, padding 1, NCHW / OIHW
    n, c, hh, ww = x.shape; xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    return sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + hh, j:j + ww], k[:, :, i, j]) for i in range(3) for j in range(3))
pool = lambda x: x.reshape(x.shape[0], x.shape[1], x.shape[2] // 2, 2, x.shape[3] // 2, 2).max(axis=(3, 5))
y = pool(relu(conv(L("img"), L("k1")) + L("c1"))); y = pool(relu(conv(y, L("k2")) + L("c2")))
cnn = softmax(y.reshape(8, -1) @ L("wd").T + L("bd"))
ok = True
for name, want in [("mlp", mlp), ("cnn", cnn)]:
    err = np.abs(L(f"{name}_y") - want).max()
    print(f"{name}: max |loom - numpy| = {err:.2e}")
    ok = ok and err < 1e-5
sys.exit(0 if ok else "demo: a result differs from NumPy")
PY
# A real model: ResNet-18 exported to ONNX by torch on the fly, imported
# (docs/frontends.md), built for this CPU and compared with PyTorch.
echo; echo "\$ python3 examples/python/resnet18_onnx.py"
PYTHONPATH=python /usr/bin/python3 -W ignore examples/python/resnet18_onnx.py

echo; echo "demo: ok"
