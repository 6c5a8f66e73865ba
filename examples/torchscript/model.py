"""TorchScript inside a Loom model, and a Loom model inside PyTorch
(docs/extern-torchscript.md).

1. A graph function calls, with call_dps, a `torchscript` extern function:
   a scripted module doing what Loom has no operator for (a cumulative sum
   and a sort along rows).  Loom compiles the dense layer and ReLU around
   it; libtorch runs the scripted part.  Checked against PyTorch, in memory
   and from an exported library.
2. loom.torch.compile of a small torch.nn.Module: PyTorch calls the
   compiled module with torch tensors and gets torch tensors back.

    PYTHONPATH=python /usr/bin/python3 examples/torchscript/model.py
"""
import io
import pathlib
import sys
import tempfile

import numpy as np
import torch

import loom
import loom.torch
from loom import graph, ir, op

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST = str(ROOT / "configs" / "host.yaml")


class RowStats(torch.nn.Module):
    """Running sums along each row, and the row sorted."""

    def forward(self, h):
        return torch.cumsum(h, dim=1), torch.sort(h, dim=1).values


def scripted_bytes(module):
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(module), buffer)
    return buffer.getvalue()


def build_model(rows, width):
    t = ir.TensorType([rows, width], "float32")
    stats = ir.ExternFunc("torchscript", scripted_bytes(RowStats()), [t, t, t])  # h; then the two outputs
    x, w = graph.Var("x", shape=[rows, width], dtype="float32"), graph.Var("w", shape=[width, width], dtype="float32")
    h = op.relu(op.dense(x, w))
    both = graph.call_dps(ir.GlobalVar("stats"), [h], ir.TupleType([t, t]))
    body = op.subtract(graph.TupleGetItem(both, 0), graph.TupleGetItem(both, 1))
    return ir.IRModule({"stats": stats, "main": graph.Function([x, w], body)})


def reference(x, w):
    h = torch.relu(torch.from_numpy(x) @ torch.from_numpy(w).T)
    running, ordered = RowStats()(h)
    return (running - ordered).numpy()


def main():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((6, 32)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
    lib = loom.build(build_model(6, 32), HOST)
    got = lib["main"](x, w).numpy()
    print(f"1. torchscript inside loom: max |loom - torch| {np.abs(got - reference(x, w)).max():.1e}")
    assert np.allclose(got, reference(x, w), rtol=1e-5, atol=1e-4)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "model.so"
        lib.export_library(str(path))
        again = loom.runtime.load_module(str(path))["main"](x, w).numpy()
        print(f"   exported and loaded: max |loom - torch| {np.abs(again - reference(x, w)).max():.1e}")
        assert np.allclose(again, reference(x, w), rtol=1e-5, atol=1e-4)

    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).eval()
    xs = torch.randn(8, 32)
    compiled = loom.torch.compile(net, [xs], config=HOST)
    with torch.no_grad():
        diff = (compiled(xs) - net(xs)).abs().max().item()
    print(f"2. loom inside torch: {type(compiled(xs)).__name__} out, max |loom - torch| {diff:.1e}")
    assert diff < 1e-4
    print("ok: TorchScript and Loom agree both ways")
    return 0


if __name__ == "__main__":
    sys.exit(main())
