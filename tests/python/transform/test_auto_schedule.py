"""AutoSchedule on shapes real models have (docs/passes.md, "AutoSchedule"):
a batch of one, a residual added after a dense, a pointwise convolution
over a small map.  Each test checks the schedule it must pick in the
scheduled text and the built module's numbers against NumPy."""
import re

import numpy as np

import loom
from loom import graph, op, transform

from conftest import ROOT

rng = np.random.default_rng(22)
CONFIG = loom.Config.parse((ROOT / "configs" / "host.yaml").read_text(), "host.yaml")
UP_TO_SCHEDULE = ["InferType", "FuseOps", "LegalizeOps", "FuseTIR", "DeadCodeElimination", "AutoSchedule"]


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def scheduled(mod):
    return transform.Sequential(UP_TO_SCHEDULE)(mod).script()


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_dense_over_a_batch_of_one_with_a_residual_is_register_tiled():
    # [seq, batch 1, features] as a Transformer's exported attention
    # projection, plus a residual: rows come from the sequence axis (the
    # batch loop of extent 1 gives none) and the residual does not count.
    x, w, b, r = f32(32, 1, 64), f32(48, 64), f32(48), f32(32, 1, 48)
    xv, rv = graph.Var("x", shape=x.shape), graph.Var("r", shape=r.shape)
    body = op.add(op.add(op.dense(xv, graph.Constant(w)), graph.Constant(b)), rv)
    mod = loom.IRModule({"main": graph.Function([xv, rv], body)})
    text = scheduled(mod)
    assert "param_layouts" in text and "unrolled" in text and "_rf" not in text, text
    close(loom.build(mod, CONFIG)["main"](x, r).numpy(), x @ w.T + b + r)


def test_a_pointwise_convolution_over_a_small_map_vectorizes_the_whole_map_with_its_epilogue():
    # 1x1 convolution, 7x7 map (MobileNetV2's last layers): the rows and
    # columns are fused into one vector axis of 49 values, and bias and
    # clip run in the tile (the add's broadcast bias no longer reads the
    # batch axis at index 0 while the convolution loops over it).
    x, w, b = f32(1, 32, 7, 7), f32(64, 32, 1, 1), f32(64, 1, 1)
    xv = graph.Var("x", shape=x.shape)
    body = op.clip(op.add(op.conv2d(xv, graph.Constant(w)), graph.Constant(b)), a_min=0.0, a_max=6.0)
    mod = loom.IRModule({"main": graph.Function([xv], body)})
    text = scheduled(mod)
    fused = text[text.index("@fused_conv2d_add_clip"):text.index("@main")]
    assert re.search(r"for %i2_i3\w*: int64 from 0 extent", fused), fused
    assert fused.count("alloc") == 1, fused  # the accumulator only: no epilogue temporaries
    assert re.search(r"%Out\[[^\]]*\] = min\(max\(%t\d+\[", fused), fused
    want = np.clip(np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]) + b, 0, 6)
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)
