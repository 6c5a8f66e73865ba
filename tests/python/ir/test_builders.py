"""Builders (docs/python.md, "Builders"): graph functions with loom.op and
loom.graph, prim functions with loom.tir, extern functions, modules; each
compared with the same IR parsed from text (structural equality) or run
against NumPy on random inputs."""
import pathlib

import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir

ROOT = pathlib.Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")
REF = str(ROOT / "configs" / "ref.yaml")


@pytest.fixture
def rng():
    return np.random.default_rng(8)


def test_mlp_built_in_python_equals_the_example_text():
    text = (ROOT / "examples" / "mlp.loom").read_text()
    x = graph.Var("x", shape=(64, 784))
    params = [x]
    for k, (m, n) in enumerate([(784, 512), (512, 512), (512, 10)]):
        params += [graph.Var(f"w{k + 1}", shape=(n, m)), graph.Var(f"b{k + 1}", shape=(n,))]
    x, w1, b1, w2, b2, w3, b3 = params
    h1, h2 = graph.Var("h1"), graph.Var("h2")
    body = graph.Let(h1, op.relu(op.dense(x, w1) + b1),  # `+` on graph expressions is loom.op.add
                     graph.Let(h2, op.relu(op.add(op.dense(h1, w2), b2)),
                               op.softmax(op.dense(h2, w3) + b3, axis=-1)))
    main = graph.Function(params, body, ir.TensorType((64, 10), "float32"))
    built = loom.IRModule({"main": main})
    ir.assert_structural_equal(built, loom.parse(text))
    assert ir.structural_hash(built) == ir.structural_hash(loom.parse(text))
    assert built["main"].params[1].name == "w1"


def test_every_operator_has_a_builder_checked_against_its_schema():
    names = op.list_ops()
    assert {"relu", "conv2d", "softmax", "call_dps"} <= set(names)
    # dir(loom.op) lists each name's first part (a dotted name is a namespace)
    assert {n.split(".")[0] for n in names} <= set(dir(op))
    x = graph.Var("x", shape=(2, 3))
    for name in names:
        info = op.info(name)
        assert info["name"] == name and isinstance(info["num_inputs"], int)
        builder = getattr(op, name)
        if info["num_inputs"] >= 0:
            with pytest.raises(loom.TypeError, match=f"'{name}' takes {info['num_inputs']} input"):
                builder(*([x] * (info["num_inputs"] + 1)))
    with pytest.raises(loom.TypeError, match="did you mean 'axis'"):
        op.softmax(x, axs=1)
    with pytest.raises(loom.TypeError, match="'axis' must be int"):
        op.softmax(x, axis="last")
    with pytest.raises(loom.TypeError, match="required attribute 'pool_size' is missing"):
        op.max_pool2d(x)
    with pytest.raises(AttributeError, match="did you mean 'relu'"):
        op.relux


def test_operators_built_in_python_run_like_numpy(rng):
    a = rng.standard_normal((2, 3, 9, 9)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    x, k = graph.Var("x", shape=a.shape), graph.Var("k", shape=w.shape)
    conv = op.conv2d(x, k, strides=[2, 2], padding=[1])
    pooled = op.max_pool2d(op.relu(conv), pool_size=[2, 2], strides=[1, 1])
    parts = op.split(op.transpose(pooled, axes=[0, 2, 3, 1]), indices_or_sections=2, axis=3)
    out = graph.Tuple([op.concat(parts[1], parts[0], axis=3), -op.sum(pooled, axis=[1]) * 0.5])
    mod = loom.IRModule({"main": graph.Function([x, k], out)})

    # NumPy: conv 3x3 stride 2 pad 1 -> 5x5; relu; pool 2x2 stride 1 -> 4x4.
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv_ref = np.zeros((2, 4, 5, 5), np.float32)
    for i in range(5):
        for j in range(5):
            window = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            conv_ref[:, :, i, j] = np.einsum("nchw,ochw->no", window, w)
    r = np.maximum(conv_ref, 0)
    pool_ref = np.max(np.stack([r[:, :, di:di + 4, dj:dj + 4] for di in (0, 1) for dj in (0, 1)]), axis=0)
    t = pool_ref.transpose(0, 2, 3, 1)
    expected = [np.concatenate([t[..., 2:], t[..., :2]], axis=3), -pool_ref.sum(axis=1) * 0.5]
    for config in (REF, HOST):
        got = loom.build(mod, config)["main"](a, w)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-4, atol=1e-5)


def test_constants_copy_their_data_and_numbers_take_the_operand_dtype(rng):
    data = rng.standard_normal(5).astype("float32")
    c = graph.Constant(data)
    data[:] = 0  # the constant holds a copy
    x = graph.Var("x", shape=(5,))
    mod = loom.IRModule({"main": graph.Function([x], op.maximum(x * 2.0, c) - 1)})
    assert "float32" in mod.script() and not np.all(c.data.numpy() == 0)
    a = rng.standard_normal(5).astype("float32")
    got = loom.build(mod, HOST)["main"](a).numpy()
    np.testing.assert_allclose(got, np.maximum(a * 2, c.data.numpy()) - 1, rtol=1e-6)


def test_prim_function_built_with_tir_runs_and_equals_its_text(rng):
    n = 37  # odd: a vector loop needs its tail
    A, B = tir.Buffer("A", (n,)), tir.Buffer("B", (n,))
    alpha = tir.Var("alpha", "float32")
    i = tir.Var("i")
    body = tir.For(i, 0, n, tir.BufferStore(B, tir.max(A[i] * alpha + 1.0, 0.0), [i]), kind="parallel")
    k = tir.PrimFunc([A, B, alpha], body)
    text = """@k = prim_func(%A: Buffer[(37), float32], %B: Buffer[(37), float32], %alpha: float32) {
  for %i: int64 from 0 extent 37 parallel {
    %B[%i] = max(%A[%i] * %alpha + 1.0, 0.0);
  }
}
"""
    ir.assert_structural_equal(loom.IRModule({"k": k}), loom.parse(text))
    assert loom.IRModule({"k": k}).script() == text

    x = graph.Var("x", shape=(n,))
    main = graph.Function([x], graph.call_dps("k2", [x], ir.TensorType((n,))))
    # call_dps passes tensors only, so the function called has alpha = 2 inlined.
    k2 = tir.PrimFunc([A, B], tir.For(i, 0, n, tir.BufferStore(B, tir.max(A[i] * 2.0 + 1.0, 0.0), [i])))
    mod = loom.IRModule({"k2": k2, "main": main})
    assert ir.well_formed(mod) == []
    a = rng.standard_normal(n).astype("float32")
    for config in (REF, HOST):
        np.testing.assert_allclose(loom.build(mod, config)["main"](a).numpy(), np.maximum(a * 2 + 1, 0), rtol=1e-6)


def test_tir_expressions_follow_the_cores_dtype_rules():
    i32 = tir.Var("i", "int32")
    assert str((i32 + 1).dtype) == "int32" and str((i32 + 1).b.dtype) == "int32"
    assert str((2 * i32).a.dtype) == "int32"
    assert str((i32 < 4).dtype) == "bool"
    assert str(tir.const(3).dtype) == "int64" and str(tir.const(1.5).dtype) == "float32"
    assert (i32 // 2).type_key == "tir.FloorDiv" and (i32 % 2).type_key == "tir.FloorMod"
    assert (-i32).type_key == "tir.Sub"
    v = tir.Ramp(tir.const(0), 1, 4)
    assert str(v.dtype) == "int64x4"
    buf = tir.Buffer("X", (16,), "float16")
    assert str(buf[v].dtype) == "float16x4"
    assert str(tir.BufferStore(buf, 1.0, [v]).value.dtype) == "float16x4"
    with pytest.raises(loom.TypeError, match=r"operand dtypes differ \(int32 vs int64\)"):
        i32 + tir.Var("j", "int64")
    with pytest.raises(loom.TypeError, match="tir.Ramp needs 2 to 1024 lanes"):
        tir.Ramp(0, 1, 1)
    with pytest.raises(loom.TypeError, match="not iterable"):
        list(buf)


def test_extern_function_prints_parses_and_is_called_with_call_dps():
    payload = "fast_relu:\n  ret\n"
    t = ir.TensorType((16,), "float32")
    ext = ir.ExternFunc("asm", payload, [t, t], None, attrs={"isa": "x86_64"})
    x = graph.Var("x", type=t)
    main = graph.Function([x], graph.call_dps("fast_relu", [x], t))
    mod = loom.IRModule({"fast_relu": ext, "main": main})
    assert ext.kind == "asm" and ext.payload == payload and ext.convention == "dps"
    assert 'extern "asm" dps fn(Tensor[(16), float32], Tensor[(16), float32]) -> none' in mod.script()
    ir.assert_structural_equal(loom.parse(mod.script()), mod)
    ir.assert_structural_equal(ir.load_json(ir.save_json(mod)), mod)


def test_modules_are_values():
    x = graph.Var("x", shape=(3,))
    f = graph.Function([x], op.relu(x))
    mod = loom.IRModule({"main": f})
    more = ir.with_attr(ir.with_function(mod, "other", f), "note", "hi")
    assert sorted(more.functions.keys()) == ["main", "other"] and list(mod.functions.keys()) == ["main"]
    assert more.attrs["note"] == "hi" and mod["main"].same_as(f)
    assert list(more.functions) == ["main", "other"] and dict(more.attrs.items()) == {"note": "hi"}
    with pytest.raises(KeyError):
        mod["missing"]
    with pytest.raises(loom.TypeError, match="function 'main': expected ir.BaseFunc, got int 3"):
        loom.IRModule({"main": 3})


def test_rewrite_replaces_bottom_up_and_shares_what_it_keeps():
    x = graph.Var("x", shape=(4,))
    inner = op.exp(x)
    f = graph.Function([x], op.relu(op.add(op.relu(inner), inner)))
    same = ir.rewrite(f, lambda node: None)
    assert same.same_as(f)
    seen = []

    def relu_to_max(call):
        seen.append(call.callee.name)
        if call.callee.name == "relu":
            return op.maximum(call.args[0], 0.0)
        return None
    g = ir.rewrite(f, relu_to_max, "graph.Call")
    assert seen == ["exp", "relu", "add", "relu"]  # children first; exp (shared) once
    assert "relu" not in g.script() and g.script().count("maximum") == 2
    assert g.body.args[0].args[1].same_as(inner)  # untouched subtrees are shared
    with pytest.raises(loom.TypeError, match="returned str 's' for a graph.Call"):
        ir.rewrite(f, lambda node: "s", "graph.Call")
    with pytest.raises(ZeroDivisionError):
        ir.rewrite(f, lambda node: 1 / 0)
