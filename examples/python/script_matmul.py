"""A matmul written as a scheduled prim function in hybrid script
(docs/hybrid-script.md): tiled by hand, the inner loop vectorized, the
outer one parallel; built for this CPU and checked against NumPy.

    PYTHONPATH=python /usr/bin/python3 examples/python/script_matmul.py
"""
import numpy as np

import loom
from loom import script as S

M, N, K = 64, 48, 32
TILE = 16


@S.ir_module
class Matmul:
    @S.prim_func
    def matmul(A: S.Buffer((M, K), "float32"), B: S.Buffer((K, N), "float32"), C: S.Buffer((M, N), "float32")):
        for io in S.parallel(M // TILE):
            for ii in S.serial(TILE):
                for j in S.vectorized(N):
                    C[io * TILE + ii, j] = S.float32(0.0)
                for k in S.serial(K):
                    for j in S.vectorized(N):
                        C[io * TILE + ii, j] = C[io * TILE + ii, j] + A[io * TILE + ii, k] * B[k, j]

    @S.graph_func
    def main(a: S.Tensor((M, K), "float32"), b: S.Tensor((K, N), "float32")):
        return S.call_dps(S.Tensor((M, N), "float32"), matmul, (a, b))


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    lib = loom.build(Matmul, {"target": {"kind": "llvm"}, "pipeline": {"passes": ["default"]}})
    c = lib["main"](a, b).numpy()
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    print("matmul in hybrid script matches NumPy:", c.shape, "max error", float(np.abs(c - a @ b).max()))
