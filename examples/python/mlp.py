"""The worked example of docs/python.md: build an MLP in Python, rewrite it
with a pass written in Python, build it for this CPU, run it on NumPy
arrays and compare with NumPy.

    PYTHONPATH=python /usr/bin/python3 examples/python/mlp.py
"""
import numpy as np

import loom
from loom import graph, ir, op, transform

rng = np.random.default_rng(0)
sizes = [784, 256, 10]
weights = [(rng.standard_normal((n, m)).astype("float32") / np.sqrt(m), rng.standard_normal(n).astype("float32"))
           for m, n in zip(sizes, sizes[1:])]

# 1. Build: x -> dense + bias -> relu -> dense + bias -> softmax, with the
#    weights as constants (PyTorch's (out, in) layout, as dense takes them).
x = graph.Var("x", shape=(32, sizes[0]))
h = x
for k, (w, b) in enumerate(weights):
    h = op.dense(h, graph.Constant(w)) + graph.Constant(b)
    h = op.relu(h) if k + 1 < len(weights) else op.softmax(h, axis=-1)
mod = loom.IRModule({"main": graph.Function([x], h)})


# 2. A pass in Python: dense(x, W) with a constant W becomes matmul(x, W^T),
#    the transpose done once, now, instead of being read across rows at run
#    time.  Registered by name, so a YAML pipeline can list it too.
@transform.function_pass(opt_level=1, name="DenseToMatmul")
def dense_to_matmul(func, mod, ctx):
    def visit(call):
        w = call.args[1] if len(call.args) == 2 else None
        if call.callee.is_instance("ir.Op") and call.callee.name == "dense" and w.is_instance("graph.Constant"):
            return op.matmul(call.args[0], graph.Constant(w.data.numpy().T))
        return None
    return ir.rewrite(func, visit, "graph.Call")


rewritten = dense_to_matmul(mod)
assert "dense" not in rewritten.script() and rewritten.script().count("matmul") == 2

# 3. Build with the host config and the pass in front of the default
#    pipeline, time each pass, run on NumPy arrays.
timing = transform.TimingInstrument()
with transform.PassContext(instruments=[timing]):
    lib = loom.build(mod, {"target": {"kind": "llvm"}, "pipeline": {"passes": ["DenseToMatmul", "default"]}})
data = rng.standard_normal((32, sizes[0])).astype("float32")
result = lib["main"](data).numpy()

# 4. Compare with NumPy.
expected = data
for k, (w, b) in enumerate(weights):
    expected = expected @ w.T + b
    expected = np.maximum(expected, 0) if k + 1 < len(weights) else expected
expected = np.exp(expected - expected.max(axis=1, keepdims=True))
expected /= expected.sum(axis=1, keepdims=True)
np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-6)
print("passes run:", [row[0] for row in timing.rows()][:4], "...")
print("max abs difference from NumPy:", float(np.abs(result - expected).max()))
