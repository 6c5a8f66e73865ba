"""A small model written as graph functions in hybrid script
(docs/hybrid-script.md): a residual block of two dense layers, called by
main, with the weights captured from Python as constants; checked against
NumPy.

    PYTHONPATH=python /usr/bin/python3 examples/python/script_model.py
"""
import numpy as np

import loom
from loom import script as S

rng = np.random.default_rng(0)
W1 = (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(np.float32)
W2 = (rng.standard_normal((32, 32)) / np.sqrt(32)).astype(np.float32)
HEAD = (rng.standard_normal((10, 32)) / np.sqrt(32)).astype(np.float32)


@S.ir_module
class Model:
    @S.graph_func
    def block(x: S.Tensor((4, 32), "float32")):
        h = S.op.relu(S.op.dense(x, W1))
        return x + S.op.dense(h, W2)

    @S.graph_func
    def main(x: S.Tensor((4, 32), "float32")):
        y = block(block(x))
        return S.op.softmax(S.op.dense(y, HEAD), axis=-1)


def reference(x):
    for _ in range(2):
        x = x + np.maximum(x @ W1.T, 0) @ W2.T
    z = x @ HEAD.T
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


if __name__ == "__main__":
    x = rng.standard_normal((4, 32)).astype(np.float32)
    lib = loom.build(Model, {"target": {"kind": "llvm"}})
    y = lib["main"](x).numpy()
    np.testing.assert_allclose(y, reference(x), rtol=1e-4, atol=1e-6)
    print("model in hybrid script matches NumPy:", y.shape)
