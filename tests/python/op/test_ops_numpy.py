"""Every operator of the operator library against NumPy on random inputs
of several shapes (broadcasting, odd sizes), through the default pipeline
and the reference interpreter (docs/operators.md)."""
import math
import re

import numpy as np
import pytest

F32 = np.float32
SHAPES = [(1,), (7,), (3, 5), (2, 3, 4)]
BROADCAST = [((7,), (7,)), ((3, 4), (4,)), ((3, 1), (1, 5)), ((2, 3, 5), (3, 1)), ((1,), (2, 3))]

erf = np.vectorize(math.erf, otypes=[np.float64])


def close(got, want, dtype, rtol=2e-6, atol=1e-6):
    """Asserts that `got` has `want`'s shape and values and the dtype
    `dtype`: the one the operator must return, derived from its inputs'
    dtypes (the NumPy reference is often float64 for accuracy, so its dtype
    says nothing about the operator's)."""
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.dtype(dtype), (got.dtype, np.dtype(dtype))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def uniform(rng, shape, lo=-3.0, hi=3.0):
    return rng.uniform(lo, hi, size=shape).astype(F32)


UNARY = {
    "relu": (lambda x: np.maximum(x, 0), -3, 3),
    "neg": (lambda x: -x, -3, 3),
    "abs": (np.abs, -3, 3),
    "exp": (lambda x: np.exp(x.astype(np.float64)), -3, 3),
    "log": (lambda x: np.log(x.astype(np.float64)), 0.1, 5),
    "sqrt": (lambda x: np.sqrt(x.astype(np.float64)), 0.1, 5),
    "rsqrt": (lambda x: 1 / np.sqrt(x.astype(np.float64)), 0.1, 5),
    "tanh": (lambda x: np.tanh(x.astype(np.float64)), -3, 3),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), -6, 6),
    "erf": (lambda x: erf(x.astype(np.float64)), -3, 3),
    "gelu": (lambda x: x * (1 + erf(x / math.sqrt(2))) / 2, -3, 3),
    "silu": (lambda x: x / (1 + np.exp(-x.astype(np.float64))), -6, 6),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(run, rng, op):
    ref, lo, hi = UNARY[op]
    for shape in SHAPES:
        x = uniform(rng, shape, lo, hi)
        close(run(f"{op}(%a0)", x), ref(x.astype(np.float64)), x.dtype)


BINARY = {
    "add": (np.add, -3, 3),
    "subtract": (np.subtract, -3, 3),
    "multiply": (np.multiply, -3, 3),
    "divide": (np.divide, 0.5, 3),
    "power": (np.power, 0.5, 2),
    "maximum": (np.maximum, -3, 3),
    "minimum": (np.minimum, -3, 3),
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasting(run, rng, op):
    ref, lo, hi = BINARY[op]
    for sa, sb in BROADCAST:
        a, b = uniform(rng, sa, lo, hi), uniform(rng, sb, lo, hi)
        close(run(f"{op}(%a0, %a1)", a, b), ref(a.astype(np.float64), b.astype(np.float64)), np.result_type(a, b))


@pytest.mark.parametrize("op,ref", [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                                    ("less_equal", np.less_equal), ("greater", np.greater),
                                    ("greater_equal", np.greater_equal)])
def test_comparisons(run, rng, op, ref):
    for sa, sb in BROADCAST:
        a = rng.integers(-2, 3, size=sa).astype(F32)  # small integers: many ties
        b = rng.integers(-2, 3, size=sb).astype(F32)
        got = run(f"{op}(%a0, %a1)", a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, ref(a, b))


def test_where_clip_cast(run, rng):
    c = rng.random((3, 1)) > 0.5
    x, y = uniform(rng, (3, 4)), uniform(rng, (4,))
    close(run("where(%a0, %a1, %a2)", c, x, y), np.where(c, x, y), np.result_type(x, y))
    x = uniform(rng, (2, 7), -9, 9)
    close(run("clip(%a0, a_min=-2.5, a_max=4.0)", x), np.clip(x, -2.5, 4.0), x.dtype)
    got = run('cast(%a0, dtype=int32)', x)
    assert got.dtype == np.int32, got.dtype
    np.testing.assert_array_equal(got, x.astype(np.int32))
    close(run('cast(%a0, dtype=float64)', x), x.astype(np.float64), np.float64, rtol=0, atol=0)


def test_bounds_against_constants_propagate_nan(run, rng):
    # relu, clip and maximum/minimum with a constant (the llvm target's
    # one-instruction x86 form on whole vectors) keep NaN as NumPy does.
    x = uniform(rng, (4, 64), -8, 8)
    x[0, ::5], x[1, ::7], x[2, ::3] = np.nan, np.inf, -np.inf
    for call, want in [("relu(%a0)", np.maximum(x, 0)), ("clip(%a0, a_min=-1.5, a_max=2.0)", np.clip(x, -1.5, 2.0)),
                       ("maximum(%a0, %a1)", np.maximum(x, F32(0.5))), ("minimum(%a1, %a0)", np.minimum(F32(0.5), x))]:
        args = (x, np.full((1,), 0.5, F32)) if "%a1" in call else (x,)
        got = run(call, *args)
        np.testing.assert_array_equal(got, want, err_msg=call)


def test_float64_to_float16_rounds_once(run, rng):
    # Correctly rounded as NumPy does, on every CPU (without AVX512-FP16 LLVM
    # calls __truncdfhf2, which the JIT does not link). The first values sit
    # just off float16 ties, where narrowing through float32 to nearest
    # would round twice; then overflow, subnormals, infinities and NaN.
    tie = 1 + 2.0 ** -11
    x = np.array([tie + 2.0 ** -40, tie - 2.0 ** -40, -(tie + 2.0 ** -40), 2049 + 2.0 ** -30, 65519.99, 65520.0,
                  1e300, -1e300, 2.0 ** -25 + 2.0 ** -60, 2.0 ** -26, 3e-8, 0.0, -0.0, np.inf, -np.inf, np.nan],
                 np.float64)
    x = np.concatenate([x, rng.standard_normal(200) * 10.0 ** rng.integers(-9, 6, 200)])
    if run.config.endswith(("/c.yaml", "/opencl.yaml")):
        with pytest.raises(RuntimeError, match="C has no type for float16"):
            run('cast(%a0, dtype=float16)', x)
        return
    got = run('cast(%a0, dtype=float16)', x)
    assert got.dtype == np.float16, got.dtype
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    if run.config.endswith(("/ref.yaml", "/host.yaml")):  # bfloat16: the same, against rounding the bits
        tie = 1 + 2.0 ** -8
        x = np.concatenate([[tie + 2.0 ** -50, -(tie + 2.0 ** -50), tie - 2.0 ** -50, tie + 2.0 ** -7 + 2.0 ** -45, 3.0,
                             np.inf, np.nan],
                            rng.standard_normal(100) * 10.0 ** rng.integers(-30, 30, 100)])
        bits = x.view(np.uint64)
        want = ((bits + (2 ** 44 - 1) + ((bits >> 45) & 1)) >> 45 << 45).view(np.float64).astype(np.float32)
        want[np.isinf(x) | np.isnan(x)] = x[np.isinf(x) | np.isnan(x)]
        got = run('cast(cast(%a0, dtype=bfloat16), dtype=float32)', x)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,ref", [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min)])
def test_reductions(run, rng, op, ref):
    x = uniform(rng, (2, 3, 5))
    for axis, keep in [([], False), ([1], False), ([0, 2], True), ([-1], True)]:
        attrs = f"axis={axis}" + (", keepdims=true" if keep else "")
        want = ref(x.astype(np.float64), axis=tuple(axis) if axis else None, keepdims=keep)
        close(run(f"{op}(%a0, {attrs})", x), np.asarray(want), x.dtype, rtol=1e-5)


def test_matmul_and_dense(run, rng):
    for sa, sb, ta, tb in [((4, 6), (6, 5), False, False), ((2, 3, 4), (4, 5), False, False),
                           ((2, 1, 3, 4), (3, 5, 4), False, True), ((5, 3), (5, 2), True, False)]:
        a, b = uniform(rng, sa), uniform(rng, sb)
        want = np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)
        got = run(f"matmul(%a0, %a1, transpose_a={str(ta).lower()}, transpose_b={str(tb).lower()})", a, b)
        close(got, want.astype(np.float64), np.result_type(a, b), rtol=1e-5, atol=1e-5)
    x, w = uniform(rng, (3, 7)), uniform(rng, (5, 7))
    close(run("dense(%a0, %a1)", x, w), (x.astype(np.float64) @ w.T.astype(np.float64)), np.result_type(x, w),
          rtol=1e-5, atol=1e-5)


def test_shape_operators(run, rng):
    x = uniform(rng, (2, 3, 4))
    close(run("reshape(%a0, shape=[4, -1])", x), x.reshape(4, -1), x.dtype, rtol=0, atol=0)
    close(run("flatten(%a0)", x), x.reshape(2, -1), x.dtype, rtol=0, atol=0)
    close(run("transpose(%a0, axes=[2, 0, 1])", x), x.transpose(2, 0, 1), x.dtype, rtol=0, atol=0)
    close(run("transpose(%a0)", x), x.transpose(), x.dtype, rtol=0, atol=0)
    close(run("expand_dims(%a0, axis=1)", x), np.expand_dims(x, 1), x.dtype, rtol=0, atol=0)
    y = uniform(rng, (1, 3, 1, 5))
    close(run("squeeze(%a0)", y), np.squeeze(y), y.dtype, rtol=0, atol=0)
    close(run("squeeze(%a0, axis=[2])", y), np.squeeze(y, axis=2), y.dtype, rtol=0, atol=0)
    z = uniform(rng, (3, 1))
    close(run("broadcast_to(%a0, shape=[2, 3, 4])", z), np.broadcast_to(z, (2, 3, 4)), z.dtype, rtol=0, atol=0)
    a, b = uniform(rng, (2, 3)), uniform(rng, (2, 5))
    close(run("concat(%a0, %a1, axis=1)", a, b), np.concatenate([a, b], axis=1), np.result_type(a, b), rtol=0, atol=0)
    parts = run("split(%a0, indices_or_sections=[1, 3], axis=2)", x, outputs=3)
    for got, want in zip(parts, np.split(x, [1, 3], axis=2)):
        close(got, want, x.dtype, rtol=0, atol=0)
    s = uniform(rng, (7, 9))
    close(run("slice(%a0, begin=[1, -7], end=[6, 9], strides=[2, 3])", s), s[1:6:2, -7:9:3], s.dtype, rtol=0, atol=0)
    close(run("pad(%a0, pad_width=[1, 0, 2, 3], pad_value=0.5)", a),
          np.pad(a, ((1, 0), (2, 3)), constant_values=0.5), a.dtype, rtol=0, atol=0)


def test_normalisations(run, rng):
    x = uniform(rng, (3, 5, 7)).astype(np.float64)
    xf = x.astype(F32)
    for axis in (-1, 1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        close(run(f"softmax(%a0, axis={axis})", xf), e / e.sum(axis=axis, keepdims=True), xf.dtype, rtol=1e-5)
        close(run(f"log_softmax(%a0, axis={axis})", xf), np.log(e / e.sum(axis=axis, keepdims=True)), xf.dtype,
              rtol=1e-5, atol=1e-5)
    g, b = uniform(rng, (7,), 0.5, 2), uniform(rng, (7,))
    xd = xf.astype(np.float64)
    mean, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    close(run("layer_norm(%a0, %a1, %a2, epsilon=0.001)", xf, g, b), (xd - mean) / np.sqrt(var + 1e-3) * g + b,
          np.result_type(xf, g, b), rtol=1e-5, atol=1e-5)
    p = [uniform(rng, (5,)) for _ in range(3)] + [uniform(rng, (5,), 0.1, 2)]
    shape = (1, 5, 1)
    want = (xd - p[2].reshape(shape)) / np.sqrt(p[3].reshape(shape) + 1e-5) * p[0].reshape(shape) + p[1].reshape(shape)
    close(run("batch_norm(%a0, %a1, %a2, %a3, %a4)", xf, *p), want, np.result_type(xf, *p), rtol=1e-5, atol=1e-5)


def conv2d_ref(x, w, stride, padding, dilation, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pl + pr - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for a in range(kh):
            for b in range(kw):
                ys = a * dilation[0]
                xs = b * dilation[1]
                patch = xp[:, g * cg:(g + 1) * cg, ys:ys + stride[0] * oh:stride[0], xs:xs + stride[1] * ow:stride[1]]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, a, b])
    return out


def test_conv2d(run, rng):
    for xs, ws, s, p, d, g in [((1, 3, 7, 7), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
                               ((2, 2, 9, 8), (3, 2, 3, 2), (2, 1), (0, 1, 2, 0), (2, 1), 1),
                               ((1, 4, 6, 5), (6, 2, 3, 3), (1, 2), (1, 0, 1, 2), (1, 1), 2),
                               ((1, 5, 5, 5), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5),
                               # groups of 4, 6 and 8 output channels, weights a parameter, not a
                               # constant: the host schedule splits the channels by group for 4 and
                               # 8; 6 takes no whole vectors (4 lanes) and stays untiled
                               ((1, 16, 6, 7), (16, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),
                               ((2, 12, 5, 6), (24, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),
                               ((1, 32, 9, 9), (64, 4, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),
                               # the host schedule's tiles: 16 channels, 21 = 2 x 8 + a tail of 5
                               ((2, 8, 9, 21), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)]:
        x, w = uniform(rng, xs, -2, 2), uniform(rng, ws, -2, 2)
        call = f"conv2d(%a0, %a1, strides={list(s)}, padding={list(p)}, dilation={list(d)}, groups={g})"
        close(run(call, x, w), conv2d_ref(x, w, s, p, d, g), np.result_type(x, w), rtol=1e-5, atol=1e-5)


def test_pooling(run, rng):
    x = uniform(rng, (2, 3, 7, 22))
    xd = x.astype(np.float64)
    xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 2), axis=(2, 3))[:, :, ::2, ::2]
    close(run("max_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", x),
          np.nanmax(windows, axis=(-2, -1)), x.dtype)
    close(run("avg_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1])", x),
          np.nanmean(windows, axis=(-2, -1)), x.dtype, rtol=1e-5)
    close(run("avg_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], count_include_pad=true)", x),
          np.nansum(windows, axis=(-2, -1)) / 6, x.dtype, rtol=1e-5)
    close(run("global_avg_pool2d(%a0)", x), xd.mean(axis=(2, 3), keepdims=True), x.dtype, rtol=1e-5)


def blocked(x, b):
    """NCHW -> NCHW{b}c (docs/operators.md, "Blocked layouts")."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def unblocked(y):
    n, cb, h, w, b = y.shape
    return y.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def blocked_weights(w, bi, bo):
    """OIHW -> OIHW{bi}i{bo}o."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1))


@pytest.mark.parametrize("xs,ws,b,bo,s,p,g", [
    ((1, 8, 7, 9), (12, 8, 3, 3), 4, 6, (1, 1), (1, 1, 1, 1), 1),   # one group: 2 blocks in, 2 out
    ((2, 3, 9, 9), (8, 3, 3, 3), 3, 8, (2, 2), (1, 0, 1, 2), 1),    # a 3-channel image: one block of 3
    ((1, 8, 8, 7), (8, 1, 3, 3), 4, 4, (2, 1), (1, 1, 1, 1), 8),    # depthwise
    ((1, 4, 6, 6), (8, 4, 1, 1), 2, 8, (1, 1), (0, 0, 0, 0), 1),    # pointwise
])
def test_conv2d_in_channel_blocks(run, rng, xs, ws, b, bo, s, p, g):
    x, w = uniform(rng, xs, -2, 2), uniform(rng, ws, -2, 2)
    bi = 1 if g > 1 else b
    call = (f"conv2d(%a0, %a1, strides={list(s)}, padding={list(p)}, groups={g}, data_layout=\"NCHW{b}c\", "
            f"kernel_layout=\"OIHW{bi}i{bo}o\")")
    got = run(call, blocked(x, b), blocked_weights(w, bi, bo))
    assert got.shape[-1] == bo, got.shape
    close(unblocked(got), conv2d_ref(x, w, s, p, (1, 1), g), F32, rtol=1e-5, atol=1e-5)


def test_pooling_in_channel_blocks(run, rng):
    x = uniform(rng, (2, 6, 7, 10))
    xd = x.astype(np.float64)
    xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (3, 2), axis=(2, 3))[:, :, ::2, ::2]
    xb = blocked(x, 3)
    close(unblocked(run("max_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], layout=\"NCHW3c\")", xb)),
          np.nanmax(windows, axis=(-2, -1)), x.dtype)
    close(unblocked(run("avg_pool2d(%a0, pool_size=[3, 2], strides=[2, 2], padding=[1, 1], layout=\"NCHW3c\")", xb)),
          np.nanmean(windows, axis=(-2, -1)), x.dtype, rtol=1e-5)
    close(unblocked(run("global_avg_pool2d(%a0, layout=\"NCHW3c\")", xb)), xd.mean(axis=(2, 3), keepdims=True),
          x.dtype, rtol=1e-5)


@pytest.mark.parametrize("xs,ws,attrs,message", [
    ((1, 2, 5, 5, 4), (4, 8, 3, 3), 'data_layout="NCHW4c"',
     "data layout NCHW4c needs a blocked (OIHW{i}i{o}o) kernel layout, got OIHW"),
    ((1, 2, 5, 5, 4), (2, 1, 3, 3, 4, 4), 'groups=2, data_layout="NCHW4c", kernel_layout="OIHW4i4o"',
     "a blocked convolution is one group with weights blocked as its input (OIHW4i{o}o) or depthwise"),
    ((1, 2, 5, 5, 3), (2, 2, 3, 3, 4, 4), 'data_layout="NCHW4c", kernel_layout="OIHW4i4o"',
     "needs an NCHW4c tensor, whose last extent is 4, got (1, 2, 5, 5, 3)"),
    ((1, 2, 5, 5, 4), (2, 2, 3, 3, 4, 4), 'data_layout="NCHW0c", kernel_layout="OIHW4i4o"',
     "data_layout must be NCHW, NHWC or NCHW{b}c (NCHW16c), got 'NCHW0c'"),
    ((1, 2, 5, 5, 4), (2, 2, 3, 3, 4, 4), 'data_layout="NCHW4c", kernel_layout="OIHW4o4i"',
     "kernel_layout must be OIHW, OHWI or OIHW{i}i{o}o (OIHW16i16o), got 'OIHW4o4i'"),
])
def test_conv2d_in_channel_blocks_refuses_what_does_not_fit(run, rng, xs, ws, attrs, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        run(f"conv2d(%a0, %a1, {attrs})", uniform(rng, xs), uniform(rng, ws))
