"""Weights packed at compile time (docs/target-llvm.md, "Parameter
layouts"): AutoSchedule gives a constant right operand of a tiled dense or
matmul the panel layout and the callers pass the constant re-laid out, so
no kernel packs it per call; results agree with NumPy."""
import re

import numpy as np
import pytest

import loom
from loom import graph, op, transform

from conftest import ROOT

rng = np.random.default_rng(21)
CONFIG = loom.Config.parse((ROOT / "configs" / "host.yaml").read_text(), "host.yaml")
UP_TO_SCHEDULE = ["InferType", "FuseOps", "LegalizeOps", "FuseTIR", "DeadCodeElimination", "AutoSchedule"]


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def scheduled(mod):
    with transform.PassContext(opt_level=2):
        return transform.Sequential(UP_TO_SCHEDULE)(mod).script(show_meta=True)


@pytest.mark.parametrize("m,k,n", [(8, 64, 40), (30, 100, 72), (128, 256, 96)])
def test_a_constant_dense_weight_is_packed_once_at_compile_time(m, k, n):
    x, w, b = f32(m, k), f32(n, k), f32(n)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(op.add(op.dense(xv, graph.Constant(w)), graph.Constant(b))))})
    text = scheduled(mod)
    # The weight parameter takes panels (n // F, k, F) and nothing copies it.
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 0 % \1"\}', text)
    assert layout, text
    panel = int(layout.group(1))
    assert f"Buffer[({-(-n // panel)}, {k}, {panel}), float32]" in text, text
    assert "_local" not in text, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_weight_used_by_two_calls_is_re_laid_out_once():
    x, w = f32(16, 32), f32(48, 32)
    xv = graph.Var("x", shape=x.shape)
    wc = graph.Constant(w)
    mod = loom.IRModule({"main": graph.Function([xv], op.add(op.dense(op.relu(xv), wc), op.dense(op.tanh(xv), wc)))})
    text = scheduled(mod)
    # Two kernels (one with the add fused) take the same panels; the
    # module holds one constant, the packed weight, passed to both.
    assert len(re.findall(r'param_layouts: \{"1": "0 // (\d+), 1, 0 % \1"\}', text)) == 2, text
    assert text.count('"type":"runtime.NDArray"') == 1, text
    assert len(re.findall(r"call_dps<[^>]*>\(@\w+, \(%\w+, meta\[0\]", text)) == 2, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    want = np.maximum(x, 0) @ w.T + np.tanh(x) @ w.T
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_kernel_also_called_with_a_variable_weight_packs_it_per_call():
    x, w = f32(16, 32), f32(48, 32)
    xv, wv = graph.Var("x", shape=x.shape), graph.Var("w", shape=w.shape)
    # Both calls go to one kernel, @dense: its weight stays a parameter.
    mod = loom.IRModule({"main": graph.Function([xv, wv], graph.Tuple([op.dense(xv, graph.Constant(w)),
                                                                       op.dense(xv, wv)]))})
    text = scheduled(mod)
    assert text.count("call_dps<Tensor[(16, 48), float32]>(@dense,") == 2, text
    assert "param_layouts" not in text and "_local" in text, text
    got = loom.build(mod, CONFIG)["main"](x, w)
    for g in got:
        np.testing.assert_allclose(g.numpy(), x @ w.T, rtol=1e-4, atol=1e-4)


def test_a_constant_matmul_operand_takes_panels_even_with_few_rows():
    x, w = f32(4, 96), f32(96, 64)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.matmul(xv, graph.Constant(w)))})
    text = scheduled(mod)
    assert re.search(r'param_layouts: \{"1": "1 // \d+, 0, 1 % \d+"\}', text), text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)
