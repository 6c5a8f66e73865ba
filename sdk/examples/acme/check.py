"""Checks the Acme plugin as its users meet it, against NumPy: run with
the Loom Python package importable and the plugin on LOOM_PLUGIN_PATH.

    LOOM_PLUGIN_PATH=$PWD/build python3 check.py

Exits non-zero with the first difference (an AssertionError)."""
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

import loom

HERE = pathlib.Path(__file__).resolve().parent
rng = np.random.default_rng(7)


def reference(x, w, b):
    h = x.astype(np.float64) @ w
    return h / (1 + np.exp(-h)) + b


def tree(module):
    """Every module of a built library, depth first."""
    out = [module]
    for child in module.imports:
        out.extend(tree(child))
    return out


def acme_source(lib):
    sources = [m.inspect_source("c") for m in tree(lib) if m.kind == "acme"]
    assert sources, f"no acme module in {[m.kind for m in tree(lib)]}"
    return "\n".join(sources)


model = loom.ir.load(HERE / "model.loom")
x = rng.standard_normal((4, 16)).astype(np.float32)
w = rng.standard_normal((16, 8)).astype(np.float32)
b = rng.standard_normal(8).astype(np.float32)

# 1. The whole model on Acme, from YAML: AcmeFuseSwish made the swish one
#    acme.swish (whose lowering is the only code that multiplies by beta),
#    printed by the derived printer (acme_expf).
lib = loom.build(model, HERE / "acme.yaml")
np.testing.assert_allclose(lib["main"](x, w, b).numpy(), reference(x, w, b), rtol=1e-5, atol=1e-5)
source = acme_source(lib)
assert "acme_expf" in source, "the derived printer's exp is not used"
kernels = [m.function_names() for m in tree(lib) if m.kind == "acme"]
assert kernels == [["fused_matmul_acme_swish_add"]], f"AcmeFuseSwish did not run: {kernels}"

# 2. Partitioned: the CPU runs the matmul, Acme the region around it.
lib = loom.build(model, HERE / "partition.yaml")
np.testing.assert_allclose(lib["main"](x, w, b).numpy(), reference(x, w, b), rtol=1e-5, atol=1e-5)
regions = [m.function_names() for m in tree(lib) if m.kind == "acme"]
assert regions == [["acme_region"]], regions

# 3. The operator from Python, with its attribute, against NumPy; its
#    type rule refuses an integer tensor.
def swish_module(dtype, **attrs):
    v = loom.graph.Var("v", shape=(3, 5), dtype=dtype)
    # A dotted operator name is an attribute path: loom.op.acme.swish.
    return loom.ir.IRModule({"main": loom.graph.Function([v], loom.op.acme.swish(v, **attrs))})


assert loom.op.acme.swish is getattr(loom.op, "acme.swish")
assert "acme" in dir(loom.op) and dir(loom.op.acme) == ["swish"]
assert "beta (float = 1.0): the slope inside the sigmoid" in loom.op.acme.swish.__doc__
z = rng.standard_normal((3, 5)).astype(np.float32)
out = loom.build(swish_module("float32", beta=2.0), {"target": {"kind": "acme"}})["main"](z).numpy()
np.testing.assert_allclose(out, z / (1 + np.exp(-2.0 * z)), rtol=1e-5, atol=1e-6)
try:
    loom.build(swish_module("int32"), {"target": {"kind": "acme"}})
    raise AssertionError("acme.swish of an int32 tensor was accepted")
except loom.TypeInferenceError as e:
    assert "acme.swish: needs a float tensor, got int32" in str(e), e

# 4. The device: allocation, copies both ways, synchronisation.
on_acme = loom.nd.array(x, device="acme:0")
assert str(on_acme.device) == "acme:0", on_acme.device
np.testing.assert_array_equal(on_acme.copyto("cpu").numpy(), x)

# 5. An exported library, loaded in a fresh process through the acme loader.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "acme_model.so")
    loom.build(model, HERE / "acme.yaml").export_library(path)
    for name, value in (("x", x), ("w", w), ("b", b)):
        np.save(os.path.join(tmp, name + ".npy"), value)
    script = ("import numpy as np, loom, sys; d = sys.argv[1]; lib = loom.runtime.load_module(d + '/acme_model.so');"
              "assert any(m.kind == 'acme' for m in [lib] + list(lib.imports)), [m.kind for m in lib.imports];"
              "args = [np.load(d + f'/{n}.npy') for n in 'xwb'];"
              "np.save(d + '/y.npy', lib['main'](*args).numpy())")
    subprocess.run([sys.executable, "-c", script, tmp], check=True)
    np.testing.assert_allclose(np.load(os.path.join(tmp, "y.npy")), reference(x, w, b), rtol=1e-5, atol=1e-5)
print("acme: all checks passed")
