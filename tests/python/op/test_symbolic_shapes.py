"""Composite symbolic dimensions (docs/operators.md, "Symbolic shapes"):
a reshape of a tensor with a dynamic batch, dimensions such as %n * 4
compared by structure, kernels and graph functions whose parameters only
have composite dimensions, and the errors when a shape does not fit."""
import re
from pathlib import Path

import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = [str(ROOT / "configs" / "host.yaml"), str(ROOT / "configs" / "ref.yaml"), str(ROOT / "configs" / "c.yaml")]


def module(params, body):
    return ir.IRModule({"main": graph.Function(params, body)})


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_reshape_puts_the_symbolic_part_in_the_minus_one():
    n = tir.Var("n")
    x = graph.Var("x", shape=(16, n, 32), dtype="float32")
    assert str(ir.infer_type(op.reshape(x, shape=[16, -1, 8]))) == "Tensor[(16, %n * 4, 8), float32]"
    assert str(ir.infer_type(op.reshape(x, shape=[-1, 32]))) == "Tensor[(%n * 16, 32), float32]"
    # constant factors of a composite dimension count with the constant part
    y = graph.Var("y", shape=(n * 16, 32), dtype="float32")
    assert str(ir.infer_type(op.reshape(y, shape=[16, -1, 32]))) == "Tensor[(16, %n, 32), float32]"


@pytest.mark.parametrize("shape, message", [
    ([16, 4, 8], "cannot reshape (16, %n, 32) (%n * 512 elements) to (16, 4, 8) (512 elements): the element counts "
                 "must be the same product of the same dimensions"),
    ([-1, 3], "(16, %n, 32) has %n * 512 elements, not a multiple of 3"),
])
def test_a_reshape_that_cannot_take_the_symbolic_part_is_refused(shape, message):
    n = tir.Var("n")
    x = graph.Var("x", shape=(16, n, 32), dtype="float32")
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        ir.infer_type(op.reshape(x, shape=shape))


def test_a_reshape_target_may_have_several_symbolic_entries():
    b, n = tir.Var("b"), tir.Var("n")
    x = graph.Var("x", shape=(b, n, 256), dtype="float32")
    assert str(ir.infer_type(op.reshape(x, shape=[b, n, 4, 64]))) == "Tensor[(%b, %n, 4, 64), float32]"
    assert str(ir.infer_type(op.reshape(x, shape=[n, b * 4, 64]))) == "Tensor[(%n, %b * 4, 64), float32]"
    assert str(ir.infer_type(op.reshape(x, shape=[b, -1, 64]))) == "Tensor[(%b, %n * 4, 64), float32]"
    flat = graph.Var("flat", shape=(b * n, 256), dtype="float32")
    assert str(ir.infer_type(op.reshape(flat, shape=[b, n, 4, 64]))) == "Tensor[(%b, %n, 4, 64), float32]"
    assert str(ir.infer_type(op.reshape(flat, shape=[n, -1]))) == "Tensor[(%n, %b * 256), float32]"


@pytest.mark.parametrize("shape, message", [
    (lambda b, n: [n, n, 256], "cannot reshape (%b, %n, 256) (%b * %n * 256 elements) to (%n, %n, 256) "
                               "(%n * %n * 256 elements)"),
    (lambda b, n: [b, 3, -1], "cannot infer the -1 of the new shape: (%b, %n, 256) has %b * %n * 256 elements, "
                              "not a multiple of %b * 3"),
    (lambda b, n: [b, n + 1, -1], "not a multiple of %b * (%n + 1)"),
    (lambda b, n: [b, 2.5, -1], "entry 1 of the new shape is 2.5, not an int or an integer dimension"),
])
def test_a_symbolic_target_whose_count_differs_is_refused(shape, message):
    b, n = tir.Var("b"), tir.Var("n")
    x = graph.Var("x", shape=(b, n, 256), dtype="float32")
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        ir.infer_type(op.reshape(x, shape=shape(b, n)))


def test_a_symbolic_reshape_target_in_the_text_format():
    text = ("@main = fn(%x: Tensor[(%b: int64, %n: int64, 64), float32]) {\n"
            "  reshape(%x, shape=[%b, %n * 4, 16])\n}")
    mod = loom.parse(text)
    assert "reshape(%x, shape=[%b, %n * 4, 16])" in str(mod)
    assert str(ir.infer_type(mod["main"].body)) == "Tensor[(%b, %n * 4, 16), float32]"
    assert str(loom.parse(str(mod))) == str(mod)


def test_concat_and_slice_along_a_symbolic_axis_give_exact_extents():
    m, n = tir.Var("m"), tir.Var("n")
    past = graph.Var("past", shape=(2, m, 8), dtype="float32")
    x = graph.Var("x", shape=(2, n, 8), dtype="float32")
    assert str(ir.infer_type(op.concat(past, x, axis=1))) == "Tensor[(2, %m + %n, 8), float32]"
    assert str(ir.infer_type(op.concat(x, x, x, axis=1))) == "Tensor[(2, %n * 3, 8), float32]"
    # NumPy's clamping, for every n: x[:, -1:] has min(n, 1) rows
    cases = {(-1, 2**63 - 1): "min(%n, 1)", (1, 2**63 - 1): "max(%n - 1, 0)", (0, -1): "max(%n - 1, 0)",
             (0, 3): "min(%n, 3)", (0, 2**63 - 1): "%n"}
    joined = op.concat(graph.Constant(np.zeros((2, 1, 8), np.float32)), x, axis=1)
    assert str(ir.infer_type(op.slice(joined, begin=[1], end=[2**63 - 1], axes=[1]))) == "Tensor[(2, %n, 8), float32]"
    for (begin, end), extent in cases.items():
        got = ir.infer_type(op.slice(x, begin=[begin], end=[end], axes=[1]))
        assert str(got) == f"Tensor[(2, {extent}, 8), float32]", (begin, end)
    with pytest.raises(loom.LoomError, match=re.escape("a negative step on axis 1 of (2, %n, 8), whose extent is not "
                                                       "known until run time, is not supported")):
        ir.infer_type(op.slice(x, begin=[-1], end=[-2**63], axes=[1], strides=[-1]))


@pytest.mark.parametrize("config", CONFIGS, ids=["host", "ref", "c"])
def test_arange_and_broadcast_to_a_symbolic_length(config):
    # A causal mask and positions over %n, as an exported decoder builds them.
    n = tir.Var("n")
    x = graph.Var("x", shape=(2, n), dtype="float32")
    positions = op.arange(extent=n)
    steps = op.arange(extent=n, start=0.5, step=2.0, dtype="float32")
    causal = op.less_equal(op.expand_dims(op.arange(extent=n), axis=0), op.expand_dims(op.arange(extent=n), axis=1))
    full = op.broadcast_to(graph.Constant(np.float32(3)), shape=[n, n])
    body = graph.Tuple([positions, steps, causal, full, op.add(x, steps)])
    assert str(ir.infer_type(body)) == ("(Tensor[(%n), int64], Tensor[(%n), float32], Tensor[(%n, %n), bool], "
                                        "Tensor[(%n, %n), float32], Tensor[(2, %n), float32])")
    lib = loom.build(module([x], body), config)
    for length in (1, 5):
        a = np.random.default_rng(length).standard_normal((2, length)).astype(np.float32)
        got = [t.numpy() for t in lib["main"](a)]
        np.testing.assert_array_equal(got[0], np.arange(length))
        assert got[0].dtype == np.int64
        np.testing.assert_allclose(got[1], 0.5 + 2 * np.arange(length))
        np.testing.assert_array_equal(got[2], np.tril(np.ones((length, length), bool)))
        np.testing.assert_array_equal(got[3], np.full((length, length), 3, np.float32))
        np.testing.assert_allclose(got[4], a + got[1])
    with pytest.raises(loom.LoomError, match=re.escape("arange: extent is 2.5, not an int or an integer dimension")):
        ir.infer_type(op.arange(extent=2.5))
    with pytest.raises(loom.LoomError, match=re.escape("broadcast_to: cannot broadcast (2, %n) to (2, 3)")):
        ir.infer_type(op.broadcast_to(x, shape=[2, 3]))


@pytest.mark.parametrize("config", CONFIGS, ids=["host", "ref", "c"])
def test_attention_over_a_dynamic_batch_and_sequence(config):
    # Heads split and joined by reshapes with two symbolic entries, a cache
    # joined along the sequence, the last position sliced off: one build
    # for every (batch, past, sequence).
    b, m, n = tir.Var("b"), tir.Var("m"), tir.Var("n")
    x = graph.Var("x", shape=(b, n, 32), dtype="float32")
    past = graph.Var("past", shape=(b, m, 32), dtype="float32")
    keys = op.concat(past, x, axis=1)

    def heads(t, length):
        return op.transpose(op.reshape(t, shape=[b, length, 4, 8]), axes=[0, 2, 1, 3])
    q, k = heads(x, n), heads(keys, m + n)
    scores = op.softmax(op.matmul(q, k, transpose_b=True), axis=-1)
    out = op.reshape(op.transpose(op.matmul(scores, k), axes=[0, 2, 1, 3]), shape=[b, n, 32])
    last = op.slice(out, begin=[-1], end=[2**63 - 1], axes=[1])
    rest = op.slice(keys, begin=[1], end=[2**63 - 1], axes=[1])
    lib = loom.build(module([x, past], graph.Tuple([out, last, rest])), config)
    rng = np.random.default_rng(11)
    for bb, mm, nn in ((1, 0, 1), (2, 3, 5), (3, 1, 2)):
        a = rng.standard_normal((bb, nn, 32)).astype(np.float32)
        p = rng.standard_normal((bb, mm, 32)).astype(np.float32)
        ka = np.concatenate([p, a], axis=1)
        qh = a.reshape(bb, nn, 4, 8).transpose(0, 2, 1, 3)
        kh = ka.reshape(bb, mm + nn, 4, 8).transpose(0, 2, 1, 3)
        want = (softmax(qh @ kh.transpose(0, 1, 3, 2)) @ kh).transpose(0, 2, 1, 3).reshape(bb, nn, 32)
        got, got_last, got_rest = (t.numpy() for t in lib["main"](a, p))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got_last, got[:, -1:])
        np.testing.assert_array_equal(got_rest, ka[:, 1:])


@pytest.mark.parametrize("config", CONFIGS, ids=["host", "ref", "c"])
def test_attention_heads_over_a_dynamic_batch(config):
    # Two reshapes each make their own %n * 4; the batched matmul of the
    # two must see one dimension, and kernels whose parameters only have
    # %n * 4 must bind %n from it.
    n = tir.Var("n")
    x = graph.Var("x", shape=(16, n, 32), dtype="float32")
    q = op.transpose(op.reshape(x, shape=[16, -1, 8]), axes=[1, 0, 2])
    k = op.transpose(op.reshape(op.multiply(x, graph.Constant(np.float32(0.5))), shape=[16, -1, 8]), axes=[1, 2, 0])
    scores = op.softmax(op.matmul(q, k), axis=-1)
    out = op.reshape(op.transpose(op.matmul(scores, q), axes=[1, 0, 2]), shape=[16, -1, 32])
    mod = module([x], out)
    assert str(ir.infer_type(out)) == "Tensor[(16, %n, 32), float32]"
    lib = loom.build(mod, config)
    rng = np.random.default_rng(7)
    for b in (1, 3):
        a = rng.standard_normal((16, b, 32)).astype(np.float32)
        qa = a.reshape(16, -1, 8).transpose(1, 0, 2)
        ka = (a * 0.5).reshape(16, -1, 8).transpose(1, 2, 0)
        want = (softmax(qa @ ka) @ qa).transpose(1, 0, 2).reshape(16, -1, 32)
        got = lib["main"](a).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_parameter_with_only_a_composite_dimension_binds_its_variable():
    n = tir.Var("n")
    x = graph.Var("x", shape=(n * 2 + 1, 3), dtype="float32")
    lib = loom.build(module([x], op.relu(x)), CONFIGS[0])
    a = np.random.default_rng(1).standard_normal((7, 3)).astype(np.float32)
    np.testing.assert_array_equal(lib["main"](a).numpy(), np.maximum(a, 0))
    with pytest.raises(loom.LoomError, match=re.escape("dimension 0 is 6, which is not %n * 2 + 1 for any whole value")):
        lib["main"](np.zeros((6, 3), np.float32))


def test_tir_simplify_combines_what_shape_arithmetic_builds():
    n = tir.Var("n")
    assert str(tir.simplify(n * 2 * 2)) == "%n * 4"
    assert str(tir.simplify((n * 4) // 4)) == "%n"
    twelve = tir.simplify(tir.const(3) * 4)
    assert twelve.type_key == "tir.IntImm" and twelve.value == 12


def test_a_composite_dimension_that_is_not_linear_is_checked_once_its_variable_is_bound():
    # %n is bound by x; y's %n // 2 is only checked (bind_linear leaves it).
    n = tir.Var("n")
    x = graph.Var("x", shape=(n, 3), dtype="float32")
    y = graph.Var("y", shape=(n // 2, 3), dtype="float32")
    lib = loom.build(module([x, y], op.relu(x)), CONFIGS[0])
    a = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_array_equal(lib["main"](a, np.zeros((2, 3), np.float32)).numpy(), np.maximum(a, 0))
    with pytest.raises(loom.LoomError, match=re.escape("argument 1 (%y): dimension 0 is 3; expected %n // 2 = 2")):
        lib["main"](a, np.zeros((3, 3), np.float32))


@pytest.mark.parametrize("rows", [1, 3, 31, 32, 33, 70])
def test_dense_and_matmul_over_a_symbolic_row_count(rows):
    # AutoSchedule partitions the rows into tiled blocks of 32 and a tail
    # that reads the blocks' packed weights (docs/target-llvm.md); every
    # row count must give NumPy's numbers.
    n = tir.Var("n")
    rng = np.random.default_rng(rows)
    w = rng.standard_normal((40, 24)).astype(np.float32)
    b = rng.standard_normal((24, 36)).astype(np.float32)
    x = graph.Var("x", shape=(n, 24), dtype="float32")
    y = op.add(op.dense(x, graph.Constant(w)), graph.Constant(np.float32(0.5)))
    out = op.matmul(op.relu(op.slice(y, begin=[0], end=[24], axes=[1])), graph.Constant(b))
    lib = loom.build(module([x], graph.Tuple([y, out])), CONFIGS[0])
    a = rng.standard_normal((rows, 24)).astype(np.float32)
    got_y, got_out = (t.numpy() for t in lib["main"](a))
    want_y = a @ w.T + 0.5
    np.testing.assert_allclose(got_y, want_y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_out, np.maximum(want_y[:, :24], 0) @ b, rtol=1e-4, atol=1e-4)
