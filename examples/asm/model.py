"""examples/asm: a model that calls hand-written assembly (docs/extern-asm.md).

    out = relu(alpha * x + y) * y

axpy (AVX + FMA, axpy_fma.s) and relu (AVX, relu_avx.s) are extern
functions of kind `asm`, called from the graph with call_dps; the multiply
is an ordinary operator that the llvm target compiles.  The script builds
the model for this CPU (configs/host.yaml), runs it on random inputs of odd
sizes in memory and from an exported library, and compares with NumPy.

    PYTHONPATH=python /usr/bin/python3 examples/asm/model.py [--write-loom FILE]

--write-loom writes the module in the text format (examples/asm/model.loom
is that file, for `loomc run`).
"""
import argparse
import os
import tempfile

import numpy as np

import loom
from loom import graph, ir, op, tir

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "..", "configs", "host.yaml")


def kernel(source, features, params):
    """An asm extern function whose payload is the file `source`."""
    with open(os.path.join(HERE, source)) as f:
        payload = f.read()
    return ir.ExternFunc("asm", payload, params, None, attrs={"isa": "x86_64", "features": features})


def vector():
    """Tensor[(%n), float32]: n, symbolic, is passed after the pointers.
    Each function declares its own (as the text format does)."""
    return ir.TensorType([tir.Var("n", "int64")], "float32")


def model():
    one = ir.TensorType([1], "float32")
    vec = vector()
    axpy = kernel("axpy_fma.s", ["fma"], [one, vec, vec, vec])  # alpha, x, y -> out
    vec = vector()
    relu = kernel("relu_avx.s", ["avx"], [vec, vec])            # x -> y

    m = tir.Var("m", "int64")
    batch = ir.TensorType([m], "float32")
    x, y, alpha = graph.Var("x", batch), graph.Var("y", batch), graph.Var("alpha", ir.TensorType([1], "float32"))
    z = graph.call_dps("axpy", [alpha, x, y], batch)
    r = graph.call_dps("relu", [z], batch)
    main = graph.Function([x, y, alpha], op.multiply(r, y))
    return loom.IRModule({"axpy": axpy, "relu": relu, "main": main})


def reference(x, y, alpha):
    return np.maximum(alpha * x + y, 0) * y


def check(lib, sizes, rng, label):
    for size in sizes:
        x = rng.standard_normal(size).astype("float32")
        y = rng.standard_normal(size).astype("float32")
        alpha = rng.standard_normal(1).astype("float32")
        got = lib["main"](x, y, alpha).numpy()
        want = reference(x, y, alpha)
        # FMA rounds once where NumPy rounds twice: a few ulp apart.
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        print(f"{label}: n={size:5d}  max |loom - numpy| = {np.abs(got - want).max():.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-loom", metavar="FILE", help="write the module as text and stop")
    args = parser.parse_args()
    mod = model()
    if args.write_loom:
        with open(args.write_loom, "w") as f:
            f.write("# Written by examples/asm/model.py --write-loom: out = relu(alpha * x + y) * y\n")
            f.write("# with axpy and relu in hand-written assembly (docs/extern-asm.md).\n")
            f.write(mod.script())
        return
    rng = np.random.default_rng(0)
    sizes = [1, 7, 13, 100, 1001, 4099]  # odd: every vector loop has a tail
    lib = loom.build(mod, CONFIG)
    check(lib, sizes, rng, "in memory")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.so")
        lib.export_library(path)
        check(loom.runtime.load_module(path), sizes, rng, "exported ")
    print("ok: the assembly matches NumPy")


if __name__ == "__main__":
    main()
