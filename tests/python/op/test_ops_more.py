"""The operators added for the ONNX operator set (docs/operators.md:
trigonometry, integer and logical arithmetic, prod, indexing, scans,
topk, resize, einsum, conv2d_transpose, the pools' ceil mode and
dilation, padding modes, negative steps) against NumPy and PyTorch on
random inputs, through the llvm target and the reference interpreter.
(Every other target runs them in the conformance kit, tests/e2e,
against the reference interpreter.)"""
import numpy as np
import pytest

import loom
from loom import graph, ir, op

from conftest import ROOT, optional_import, requires

torch = optional_import("torch")  # for the two tests that compare with PyTorch

CONFIGS = [str(ROOT / "configs" / "host.yaml"), str(ROOT / "configs" / "ref.yaml")]


@pytest.fixture(params=CONFIGS, ids=["llvm", "ref"])
def compute(request):
    """compute(fn, *arrays): fn's graph on the arrays (as parameters),
    built for the config, as NumPy (a list for a tuple result)."""
    def run(fn, *arrays, **kwargs):
        params = [graph.Var(f"a{k}", shape=a.shape, dtype=str(a.dtype)) for k, a in enumerate(arrays)]
        mod = ir.IRModule({"main": graph.Function(params, fn(*params, **kwargs))})
        out = loom.build(mod, request.param)["main"](*arrays)
        return out.numpy() if hasattr(out, "numpy") else [o.numpy() for o in out]
    return run


rng = np.random.default_rng(51)


def f32(*shape, lo=-3, hi=3):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


@pytest.mark.parametrize("name,ref,lo,hi", [
    ("sin", np.sin, -3, 3), ("cos", np.cos, -3, 3), ("tan", np.tan, -1.4, 1.4), ("asin", np.arcsin, -0.99, 0.99),
    ("acos", np.arccos, -0.99, 0.99), ("atan", np.arctan, -9, 9), ("sinh", np.sinh, -3, 3),
    ("cosh", np.cosh, -3, 3), ("asinh", np.arcsinh, -9, 9), ("acosh", np.arccosh, 1, 9),
    ("atanh", np.arctanh, -0.99, 0.99), ("floor", np.floor, -3, 3), ("ceil", np.ceil, -3, 3),
    ("round", np.round, -3, 3), ("trunc", np.trunc, -3, 3), ("sign", np.sign, -3, 3)])
def test_float_functions(compute, name, ref, lo, hi):
    x = f32(4, 33, lo=lo, hi=hi)
    x[0, :4] = [lo, hi, 0.5, -0.5] if name != "acosh" else [1, 2, 3, 4]
    np.testing.assert_allclose(compute(getattr(op, name), x), ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


def test_isnan_isinf_and_logic(compute):
    x = f32(3, 7)
    x[0, 0], x[1, 1], x[2, 2] = np.nan, np.inf, -np.inf
    np.testing.assert_array_equal(compute(op.isnan, x), np.isnan(x))
    np.testing.assert_array_equal(compute(op.isinf, x), np.isinf(x))
    a, b = rng.random((3, 7)) > 0.5, rng.random((7,)) > 0.5
    for name, ref in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                      ("logical_xor", np.logical_xor)]:
        np.testing.assert_array_equal(compute(getattr(op, name), a, b), ref(a, b))
    np.testing.assert_array_equal(compute(op.logical_not, a), ~a)


def test_integer_arithmetic(compute):
    a = rng.integers(-50, 50, size=(4, 9)).astype(np.int32)
    b = rng.integers(-6, 7, size=(9,)).astype(np.int32)
    b[b == 0] = 3
    np.testing.assert_array_equal(compute(op.floor_divide, a, b), a // b)
    np.testing.assert_array_equal(compute(op.floor_mod, a, b), np.mod(a, b))
    np.testing.assert_array_equal(compute(op.trunc_mod, a, b), np.fmod(a, b))
    np.testing.assert_array_equal(compute(op.divide, a, b), np.trunc(a / b).astype(np.int32))
    x, y = f32(4, 9), f32(9, lo=0.5, hi=3)
    np.testing.assert_allclose(compute(op.floor_mod, x, y), np.mod(x, y), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(compute(op.trunc_mod, x, y), np.fmod(x, y), rtol=1e-5, atol=1e-5)
    for name, ref in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor)]:
        np.testing.assert_array_equal(compute(getattr(op, name), a, b), ref(a, b))
    np.testing.assert_array_equal(compute(op.bitwise_not, a), ~a)
    u = rng.integers(0, 255, size=(4, 9)).astype(np.uint8)
    s = rng.integers(0, 12, size=(4, 9)).astype(np.uint8)  # past the width included: 0
    want_left = np.where(s < 8, (u.astype(np.uint32) << s) & 0xFF, 0).astype(np.uint8)
    np.testing.assert_array_equal(compute(op.left_shift, u, s), want_left)
    np.testing.assert_array_equal(compute(op.right_shift, u, s), np.where(s < 8, u >> np.minimum(s, 7), 0))
    signed = rng.integers(-100, 100, size=(4, 9)).astype(np.int32)
    amount = rng.integers(0, 31, size=(4, 9)).astype(np.int32)
    np.testing.assert_array_equal(compute(op.right_shift, signed, amount), signed >> amount)


def test_prod_argmax_argmin_cumsum(compute):
    x = f32(4, 6, 5, lo=0.5, hi=1.5)
    np.testing.assert_allclose(compute(op.prod, x, axis=[1]), np.prod(x, axis=1), rtol=1e-5)
    ties = rng.integers(-2, 3, size=(6, 7)).astype(np.int32)
    np.testing.assert_array_equal(compute(op.argmax, ties, axis=1, keepdims=False), np.argmax(ties, axis=1))
    np.testing.assert_array_equal(compute(op.argmin, ties, axis=0), np.argmin(ties, axis=0)[None])
    last = ties.shape[1] - 1 - np.argmax(ties[:, ::-1], axis=1)
    np.testing.assert_array_equal(compute(op.argmax, ties, axis=1, keepdims=False, select_last_index=True), last)
    y = f32(3, 8)
    y[1, 5] = np.nan  # a NaN wins, as in NumPy
    np.testing.assert_array_equal(compute(op.argmax, y, axis=1, keepdims=False), np.argmax(y, axis=1))
    np.testing.assert_allclose(compute(op.cumsum, x, axis=1), np.cumsum(x, axis=1), rtol=1e-5)
    exclusive_reverse = np.flip(np.cumsum(np.flip(x, 2), axis=2), 2) - x
    np.testing.assert_allclose(compute(op.cumsum, x, axis=2, exclusive=True, reverse=True), exclusive_reverse,
                               rtol=1e-5, atol=1e-6)


def test_topk_orders_ties_by_position(compute):
    x = rng.integers(-3, 4, size=(5, 9)).astype(np.float32)
    for largest in (True, False):
        values, positions = compute(op.topk, x, k=4, axis=1, largest=largest)
        order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :4]
        np.testing.assert_array_equal(positions, order)
        np.testing.assert_array_equal(values, np.take_along_axis(x, order, axis=1))


def test_gathers_and_scatters(compute):
    data = f32(4, 6)
    idx = rng.integers(-6, 6, size=(3, 5)).astype(np.int64)
    np.testing.assert_array_equal(compute(op.take, data, idx, axis=1), np.take(data, idx, axis=1))
    elements = rng.integers(-6, 6, size=(4, 3)).astype(np.int32)
    np.testing.assert_array_equal(compute(op.gather_elements, data, elements, axis=1),
                                  np.take_along_axis(data, elements % 6, axis=1))
    nd = rng.integers(0, 4, size=(5, 2)).astype(np.int64)
    np.testing.assert_array_equal(compute(op.gather_nd, data, nd), data[nd[:, 0], nd[:, 1]])
    updates = f32(4, 3)
    want = data.copy()
    for i in range(4):
        for j in range(3):
            want[i, elements[i, j] % 6] += updates[i, j]  # duplicates add up, in order
    np.testing.assert_allclose(compute(op.scatter_elements, data, elements, updates, axis=1, reduction="add"),
                               want, rtol=1e-6)
    rows = np.array([[3], [0], [3]], np.int64)
    row_updates = f32(3, 6)
    want = data.copy()
    for k, r in enumerate(rows[:, 0]):
        want[r] = row_updates[k]  # the last write wins
    np.testing.assert_array_equal(compute(op.scatter_nd, data, rows, row_updates), want)


def test_einsum(compute):
    a, b = f32(3, 5), f32(5, 4)
    np.testing.assert_allclose(compute(op.einsum, a, b, equation="ij,jk->ik"), a @ b, rtol=1e-5, atol=1e-5)
    batch = f32(2, 3, 3)
    np.testing.assert_allclose(compute(op.einsum, batch, equation="...ii->...i"),
                               np.einsum("...ii->...i", batch), rtol=1e-6)
    v = f32(7)
    np.testing.assert_allclose(compute(op.einsum, v, v, equation="i,i"), np.einsum("i,i", v, v), rtol=1e-5)
    c = f32(2, 1, 4)
    d = f32(3, 4)
    np.testing.assert_allclose(compute(op.einsum, c, d, equation="bij,kj->bik"), np.einsum("bij,kj->bik", c, d),
                               rtol=1e-5, atol=1e-5)


def test_padding_modes_and_negative_steps(compute):
    x = f32(4, 5)
    np.testing.assert_array_equal(compute(op.pad, x, pad_width=[2, 1, 3, 4], mode="reflect"),
                                  np.pad(x, ((2, 1), (3, 4)), mode="reflect"))
    np.testing.assert_array_equal(compute(op.pad, x, pad_width=[2, 1, 3, 4], mode="edge"),
                                  np.pad(x, ((2, 1), (3, 4)), mode="edge"))
    np.testing.assert_array_equal(compute(op.slice, x, begin=[-1, 4], end=[-10, 0], strides=[-2, -1]),
                                  x[-1:-10:-2, 4:0:-1])


@requires("torch")
def test_transposed_convolution_and_pools_against_pytorch(compute):
    F = torch.nn.functional
    x = f32(2, 4, 7, 6)
    w = f32(4, 3, 3, 2)
    got = compute(op.conv2d_transpose, x, w, strides=[2, 3], padding=[1, 0, 1, 0], output_padding=[1, 2],
                  dilation=[1, 2])
    want = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), stride=(2, 3), padding=(1, 0),
                              output_padding=(1, 2), dilation=(1, 2)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    wg = f32(4, 1, 3, 3)
    np.testing.assert_allclose(compute(op.conv2d_transpose, x, wg, groups=2),
                               F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(wg), groups=2).numpy(),
                               rtol=1e-5, atol=1e-5)
    t = torch.from_numpy(x)
    np.testing.assert_array_equal(
        compute(op.max_pool2d, x, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], dilation=[1, 2], ceil_mode=True),
        F.max_pool2d(t, (3, 2), (2, 2), (1, 1), dilation=(1, 2), ceil_mode=True).numpy())
    for include in (False, True):
        np.testing.assert_allclose(
            compute(op.avg_pool2d, x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True,
                    count_include_pad=include),
            F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=include).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode,transform,align", [("nearest", "asymmetric", None),
                                                  ("linear", "half_pixel", False),
                                                  ("linear", "align_corners", True),
                                                  ("cubic", "half_pixel", False)])
@requires("torch")
def test_resize_against_pytorch_interpolate(compute, mode, transform, align):
    x = f32(1, 2, 5, 7)
    sizes = [1, 2, 9, 4]
    attrs = dict(sizes=sizes, mode=mode, coordinate_transformation_mode=transform)
    torch_mode = {"nearest": "nearest", "linear": "bilinear", "cubic": "bicubic"}[mode]
    kwargs = {} if align is None else {"align_corners": align}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=sizes[2:], mode=torch_mode, **kwargs).numpy()
    np.testing.assert_allclose(compute(op.resize, x, **attrs), want, rtol=1e-5, atol=1e-5)
