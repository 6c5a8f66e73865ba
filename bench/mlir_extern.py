"""The mlir extern kind against Loom's own codegen (docs/extern-mlir.md):
a 1024^3 float32 matmul written as linalg.matmul on tensor<?x?xf32>,
lowered by the kind's default pipeline, against op.matmul through the llvm
target, in the same process on the same inputs; and the extern's compile
time (parse to object, in process).

    PYTHONPATH=python /usr/bin/python3 bench/mlir_extern.py [--size 1024] [--runs 3]

The default lowering (linalg to loops) is the textbook triple loop:
expect the extern to be far slower; docs/extern-mlir.md says what a user
adds to make it fast.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import median_ms  # noqa: E402

import loom  # noqa: E402
from loom import graph, ir, op  # noqa: E402
from loom._ffi import call  # noqa: E402

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "host.yaml")

MATMUL = """\
func.func @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %init = linalg.fill ins(%zero : f32) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
"""


def extern_module(n):
    # The payload's ? extents take the declared constants.
    square = ir.TensorType([n, n], "float32")
    kernel = ir.ExternFunc("mlir", MATMUL, [square, square, square])
    a = graph.Var("a", shape=(n, n))
    b = graph.Var("b", shape=(n, n))
    main = graph.Function([a, b], graph.call_dps("mm", [a, b], ir.TensorType([n, n], "float32")))
    return loom.IRModule({"mm": kernel, "main": main})


def loom_module(n):
    a = graph.Var("a", shape=(n, n))
    b = graph.Var("b", shape=(n, n))
    return loom.IRModule({"main": graph.Function([a, b], op.matmul(a, b))})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    want = a @ b

    t = time.perf_counter()
    ext = loom.build(extern_module(n), CONFIG)
    ext_build = time.perf_counter() - t
    code = next(m for m in ext.imports if m.kind == "mlir")  # the only kernel: imported by the VM
    compile_s = call("mlir.compile_seconds", code, "mm")
    t = time.perf_counter()
    own = loom.build(loom_module(n), CONFIG)
    own_build = time.perf_counter() - t

    for name, lib in [("mlir extern", ext), ("loom matmul", own)]:
        got = lib["main"](a, b).numpy()
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-4, (name, err)
    ext_ms = median_ms(lambda: ext["main"](a, b), args.runs, warmup=1)
    own_ms = median_ms(lambda: own["main"](a, b), args.runs * 5, warmup=2)
    flops = 2.0 * n ** 3
    print(f"matmul {n}^3 float32, configs/host.yaml, {os.cpu_count()} cores")
    print(f"  mlir extern (linalg.matmul, default lowering): {ext_ms:10.1f} ms  {flops / ext_ms / 1e6:7.2f} GFLOP/s")
    print(f"  loom op.matmul (llvm target):                  {own_ms:10.1f} ms  {flops / own_ms / 1e6:7.2f} GFLOP/s")
    print(f"  ratio extern / loom: {ext_ms / own_ms:.1f}x")
    print(f"  extern writes its destination in place: {'@malloc(' not in code.inspect_source('ll')}")
    print(f"  extern compile time (parse .. object, in process): {compile_s * 1e3:.0f} ms; "
          f"whole loom.build with it: {ext_build * 1e3:.0f} ms (loom matmul build: {own_build * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
