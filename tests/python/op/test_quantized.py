"""Integer products and quantization (docs/low-precision.md): conv2d,
matmul and dense with out_dtype against NumPy's int64 sums (the
saturation case included), quantize and dequantize against ONNX's
equations, and the pass QDQToInteger: which calls it makes integer, that
the result stays within one quantization step of the float equations, and
what it leaves in float."""
import re
from pathlib import Path

import numpy as np
import pytest

import loom
from loom import graph, ir, op, transform

from conftest import integer_conv

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = [str(ROOT / "configs" / "host.yaml"), str(ROOT / "configs" / "ref.yaml"), str(ROOT / "configs" / "c.yaml")]


def module(params, body):
    return ir.IRModule({"main": graph.Function(params, body)})


def run(body, params, arrays, config=CONFIGS[0]):
    out = loom.build(module(params, body), config)["main"](*arrays)
    return out.numpy() if hasattr(out, "numpy") else [t.numpy() for t in out]


def build_without(mod, disabled):
    """A host build with the passes `disabled` off."""
    text = (ROOT / "configs" / "host.yaml").read_text()
    return loom.build(mod, loom.Config.parse(text.replace("  passes:\n", f"  disabled: [{', '.join(disabled)}]\n"
                                                                          "  passes:\n"), "host-without.yaml"))


@pytest.mark.parametrize("config", CONFIGS)
def test_an_integer_convolution_sums_exactly_in_int32_the_saturation_case_too(config):
    rng = np.random.default_rng(1)
    x = graph.Var("x", shape=(2, 8, 9, 9), dtype="uint8")
    w = graph.Var("w", shape=(6, 8, 3, 3), dtype="int8")
    a = rng.integers(0, 256, (2, 8, 9, 9)).astype(np.uint8)
    b = rng.integers(-128, 128, (6, 8, 3, 3)).astype(np.int8)
    a[0] = 255  # activations 255 against weights +127 and -128: 16-bit pair sums would saturate
    b[0], b[1], b[2] = 127, -127, -128
    got = run(op.conv2d(x, w, padding=[1, 1], strides=[2, 2], out_dtype="int32"), [x, w], [a, b], config)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, integer_conv(a, b, stride=2, pad=1))
    assert got[0, 0].max() == 255 * 127 * 8 * 9


@pytest.mark.parametrize("config", CONFIGS)
def test_grouped_and_depthwise_integer_convolutions(config):
    rng = np.random.default_rng(2)
    a = rng.integers(-300, 300, (1, 6, 7, 7)).astype(np.int16)
    for groups, cg in ((2, 3), (6, 1)):
        x = graph.Var("x", shape=(1, 6, 7, 7), dtype="int16")
        w = graph.Var("w", shape=(6, cg, 3, 3), dtype="int8")
        b = rng.integers(-128, 128, (6, cg, 3, 3)).astype(np.int8)
        got = run(op.conv2d(x, w, padding=[1, 1], groups=groups, out_dtype="int32"), [x, w], [a, b], config)
        np.testing.assert_array_equal(got, integer_conv(a, b, pad=1, groups=groups))


@pytest.mark.parametrize("config", CONFIGS)
def test_integer_matmul_and_dense_sum_in_int32(config):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (2, 5, 40)).astype(np.uint8)
    b = rng.integers(-128, 128, (40, 7)).astype(np.int8)
    a[0, 0] = 255
    b[:, 0] = -128
    x = graph.Var("x", shape=a.shape, dtype="uint8")
    w = graph.Var("w", shape=b.shape, dtype="int8")
    wt = graph.Var("wt", shape=b.T.shape, dtype="int8")
    mm, mt, dn = run(graph.Tuple([op.matmul(x, w, out_dtype="int32"), op.matmul(x, wt, transpose_b=True,
                                                                                 out_dtype="int32"),
                                  op.dense(x, wt, out_dtype="int32")]), [x, w, wt],
                     [a, b, np.ascontiguousarray(b.T)], config)
    want = a.astype(np.int64) @ b.astype(np.int64)
    for got in (mm, mt, dn):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    assert want[0, 0, 0] == -255 * 128 * 40


@pytest.mark.parametrize("make, message", [
    (lambda x, w: op.conv2d(x, w), "operands have dtypes uint8 and int8 (integer operands of two dtypes need an "
                                   "integer out_dtype, such as int32)"),
    (lambda x, w: op.conv2d(x, w, out_dtype="float32"), "out_dtype float32 needs float operands no wider than it "
                                                        "(bfloat16 or float16 products summed in float32), got uint8"),
    (lambda x, w: op.conv2d(op.cast(x, dtype="float64"), op.cast(w, dtype="float64"), out_dtype="float32"),
     "out_dtype float32 needs float operands no wider than it"),
    (lambda x, w: op.conv2d(op.cast(x, dtype="float32"), w, out_dtype="int32"),
     "out_dtype int32 needs integer operands, got float32 and int8"),
    (lambda x, w: op.conv2d(x, w, out_dtype="int33"), "int33"),
])
def test_products_of_dtypes_they_cannot_take_are_refused(make, message):
    x = graph.Var("x", shape=(1, 2, 4, 4), dtype="uint8")
    w = graph.Var("w", shape=(3, 2, 3, 3), dtype="int8")
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        ir.infer_type(make(x, w))


def quantize_reference(x, scale, zero_point):
    info = np.iinfo(zero_point.dtype)
    q = np.round(x / scale) + zero_point.astype(np.float64)  # NumPy rounds half to even, as ONNX
    return np.clip(q, info.min, info.max).astype(zero_point.dtype)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint16"])
def test_quantize_and_dequantize_follow_onnx(config, dtype):
    rng = np.random.default_rng(4)
    info = np.iinfo(dtype)
    a = (rng.standard_normal((3, 4)) * 200).astype(np.float32)
    a[0] = [0.5, 1.5, 2.5, -0.5]  # ties go to even
    a[1, :2] = [1e12, -1e12]  # saturates
    s = np.array([1.0, 1.0, 0.7, 3.0], np.float32)  # per channel, along the last axis
    z = np.array([0, 3, info.min, info.max], dtype)
    x = graph.Var("x", shape=a.shape, dtype="float32")
    scale = graph.Var("s", shape=s.shape, dtype="float32")
    zp = graph.Var("z", shape=z.shape, dtype=dtype)
    q = op.quantize(x, scale, zp)
    got_q, got_d = run(graph.Tuple([q, op.dequantize(q, scale, zp)]), [x, scale, zp], [a, s, z], config)
    want = quantize_reference(a, s, z)
    assert got_q.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got_q, want)
    np.testing.assert_allclose(got_d, ((want.astype(np.int64) - z) * s).astype(np.float32), rtol=1e-6)
    assert got_q[0, 0] == 0 + z[0] and got_q[0, 1] == 2 + z[1]
    assert got_q[1, 0] == info.max and got_q[1, 1] == info.min


@pytest.mark.parametrize("make, message", [
    (lambda x, s, zi: op.quantize(x, s, op.cast(zi, dtype="float32")), "the zero point must be int8, uint8, int16, "
                                                                       "uint16, got float32"),
    (lambda x, s, zi: op.quantize(x, op.cast(s, dtype="float64"), zi), "needs x and scale of one float dtype"),
    (lambda x, s, zi: op.quantize(x, s, op.cast(zi, dtype="int32")), "the zero point must be int8, uint8, int16, "
                                                                     "uint16, got int32"),
    (lambda x, s, zi: op.dequantize(zi, s, op.cast(zi, dtype="uint8")), "the zero point must have x's dtype int8"),
    (lambda x, s, zi: op.dequantize(x, s, zi), "x must be int8, uint8, int16, uint16 or int32, got float32"),
])
def test_quantize_and_dequantize_refuse_formats_they_do_not_have(make, message):
    x = graph.Var("x", shape=(3, 4), dtype="float32")
    s = graph.Var("s", shape=(), dtype="float32")
    zi = graph.Var("zi", shape=(), dtype="int8")
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        ir.infer_type(make(x, s, zi))


# ------------------------------------------------------------ QDQToInteger

class Capture:
    """Keeps the module after the named pass."""

    def __init__(self, name):
        self.name, self.text = name, None

    def after(self, info, mod):
        if info.name == self.name:
            self.text = str(mod)


def const(a):
    return graph.Constant(np.asarray(a))


def qdq_conv(rng, x, *, per_channel=True, x_zero=7, w_zero=0, act_scale_per_channel=False, layout="NCHW"):
    """quantize(relu(conv(DQ(x), DQ(w)) + bias)) with constant weights
    (OIHW, or OHWI in NHWC)."""
    c = 8
    wq = rng.integers(-127, 128, (6, c, 3, 3)).astype(np.int8)
    ws = (rng.uniform(0.5, 2, 6) * 0.01).astype(np.float32).reshape(6, 1, 1, 1) if per_channel else \
        np.float32(0.013)
    xs = np.float32(0.05) if not act_scale_per_channel else (rng.uniform(0.03, 0.06, c)
                                                              .astype(np.float32).reshape(c, 1, 1))
    bias = rng.standard_normal((6, 1, 1)).astype(np.float32) * 0.1
    if layout == "NHWC":
        wq, bias = np.ascontiguousarray(wq.transpose(0, 2, 3, 1)), bias.reshape(6)
    dx = op.dequantize(x, const(xs), const(np.uint8(x_zero)))
    dw = op.dequantize(const(wq), const(ws), const(np.int8(w_zero)))
    attrs = dict(data_layout="NHWC", kernel_layout="OHWI") if layout == "NHWC" else {}
    y = op.conv2d(dx, dw, padding=[1, 1], **attrs)
    return op.quantize(op.relu(op.add(y, const(bias))), const(np.float32(0.02)), const(np.uint8(3)))


def build_both(body, params):
    """(the module after QDQToInteger, the integer build, the float build)."""
    cap = Capture("QDQToInteger")
    with transform.PassContext(instruments=[cap]):
        lib = loom.build(module(params, body), CONFIGS[0])
    flt = build_without(module(params, body), ["QDQToInteger"])
    return cap.text, lib, flt


@pytest.mark.parametrize("case", [
    dict(), dict(per_channel=False), dict(x_zero=0), dict(w_zero=5), dict(layout="NHWC"),
])
def test_a_quantized_convolution_becomes_an_integer_one_within_one_step(case):
    rng = np.random.default_rng(5)
    shape = (2, 10, 10, 8) if case.get("layout") == "NHWC" else (2, 8, 10, 10)
    x = graph.Var("x", shape=shape, dtype="uint8")
    text, lib, flt = build_both(qdq_conv(rng, x, **case), [x])
    native = loom.target.native_intrinsics(loom.target.Target("llvm"))
    assert 'out_dtype="int32"' in text and len(re.findall(r"\bconv2d\(", text)) == 1, text
    # the centred operands: the 8-bit activation is widened to int16 (its
    # zero point subtracted, 0 too), but for int8 weights of zero point 0
    # where the CPU multiplies bytes four at a time (vpdpbusd): bytes; a
    # weight's zero point of 0 is not subtracted
    bytes_ = not case.get("w_zero") and "dot4_u8i8" in native
    assert ("subtract(cast(%x, dtype=int16)" in text) != bytes_, text
    assert ("conv2d(%x," in text or "conv2d(pad(%x," in text) == bytes_, text
    assert ("subtract(cast(meta[" in text) == (case.get("w_zero", 0) != 0), text
    for seed in range(3):
        a = np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)
        got, want = lib["main"](a).numpy(), flt["main"](a).numpy()
        assert got.dtype == np.uint8
        assert np.abs(got.astype(np.int64) - want).max() <= 1
        assert (got == want).mean() > 0.99


@pytest.mark.parametrize("dtype, layout", [("uint8", "NCHW"), ("int8", "NHWC")])
def test_a_max_pooling_between_one_scale_pools_the_integers_with_the_float_bits(dtype, layout):
    """quantize(max_pool2d(dequantize(x, s, z)), s, z), as a QDQ graph has
    MaxPool: max_pool2d(x) on the integers, equal to the float equations on
    every element (the padding, the dtype's least value, never wins); with
    another scale after it the pooling stays in float."""
    rng = np.random.default_rng(8)
    info = np.iinfo(dtype)
    shape = (2, 5, 9, 9) if layout == "NCHW" else (2, 9, 9, 5)
    a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    a[0] = info.min  # an image of the least value: only padding and it
    # a symbolic batch in NHWC: the pooling needs only the dtype
    x = graph.Var("x", shape=(loom.tir.Var("n"),) + shape[1:] if layout == "NHWC" else shape, dtype=dtype)
    s, z = const(np.float32(0.037)), const(np.array(-7 if dtype == "int8" else 9, dtype))
    for out_scale, integer in ((s, True), (const(np.float32(0.05)), False)):
        pool = op.max_pool2d(op.dequantize(x, s, z), pool_size=[3, 3], strides=[2, 2], padding=[1, 1],
                             layout=layout)
        text, lib, flt = build_both(op.quantize(pool, out_scale, z), [x])
        assert ("max_pool2d(%x" in text) == integer, text
        np.testing.assert_array_equal(lib["main"](a).numpy(), flt["main"](a).numpy())


@pytest.mark.parametrize("kind, dtype", [("global_avg_pool2d", "uint8"), ("mean", "int8"), ("mean_nhwc", "uint8"),
                                         ("global_avg_pool2d, symbolic batch", "uint8")])
def test_a_mean_between_dequantize_and_quantize_sums_the_integers_and_requantizes_once(kind, dtype):
    """quantize(mean(dequantize(x, sx, zx)), sy, zy) over whole axes (a QDQ
    graph's GlobalAveragePool and ReduceMean): the exact int32 sum S of
    x - zx, then round(S * (sx / (sy * n))) + zy, bit for bit.  With sy = sx
    over 2 x 2 every other sum is a rounding tie, which goes to even; a
    float mean's value at a tie depends on the order of its sum."""
    rng = np.random.default_rng(13)
    info = np.iinfo(dtype)
    shape = (2, 2, 2, 6) if kind == "mean_nhwc" else (2, 6, 2, 2)
    axes, keep = ((1, 2), False) if kind == "mean_nhwc" else ((2, 3), True)
    symbolic = kind.endswith("symbolic batch")
    x = graph.Var("x", shape=((loom.tir.Var("n"),) + shape[1:]) if symbolic else shape, dtype=dtype)
    sx, zx = np.float32(0.0413), np.array(-5 if dtype == "int8" else 131, dtype)
    for sy, zy in ((sx, zx), (np.float32(0.0291), np.array(3, dtype))):
        d = op.dequantize(x, const(sx), const(zx))
        m = op.global_avg_pool2d(d) if kind.startswith("global") else op.mean(d, axis=list(axes), keepdims=keep)
        text, lib, _ = build_both(op.quantize(m, const(sy), const(zy)), [x])
        assert "sum(" in text and "mean(" not in text and "global_avg_pool2d(" not in text, text
        a = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        total = (a.astype(np.int64) - zx).sum(axis=axes, keepdims=keep)
        q = np.round(total.astype(np.float32) * (sx / (sy * np.float32(4)))) + zy
        np.testing.assert_array_equal(lib["main"](a).numpy(), np.clip(q, info.min, info.max).astype(dtype))


def test_a_mean_of_sums_float32_cannot_hold_stays_in_float():
    # 16-bit integers over 512 elements: a sum may pass 2^24.
    x = graph.Var("x", shape=(1, 2, 16, 32), dtype="int16")
    body = op.quantize(op.global_avg_pool2d(op.dequantize(x, const(np.float32(0.01)), const(np.int16(0)))),
                       const(np.float32(0.01)), const(np.int16(0)))
    text, _, _ = build_both(body, [x])
    assert "global_avg_pool2d(dequantize(" in text and "sum(" not in text, text


def test_a_per_channel_activation_scale_stays_in_float():
    rng = np.random.default_rng(6)
    x = graph.Var("x", shape=(1, 8, 6, 6), dtype="uint8")
    text, lib, flt = build_both(qdq_conv(rng, x, act_scale_per_channel=True), [x])
    assert "out_dtype" not in text and "conv2d(dequantize(" in text
    a = rng.integers(0, 256, (1, 8, 6, 6)).astype(np.uint8)
    np.testing.assert_array_equal(lib["main"](a).numpy(), flt["main"](a).numpy())


@pytest.mark.parametrize("kind", ["matmul", "matmul_tb", "dense"])
def test_quantized_matrix_products_become_integer_ones(kind):
    rng = np.random.default_rng(7)
    x = graph.Var("x", shape=(4, 48), dtype="int8")
    wq = rng.integers(-127, 128, (48, 10)).astype(np.int8)
    ws = rng.uniform(0.005, 0.02, 10).astype(np.float32)
    dx = op.dequantize(x, const(np.float32(0.1)), const(np.int8(-3)))
    if kind == "matmul":
        y = op.matmul(dx, op.dequantize(const(wq), const(ws), const(np.int8(0))))
    else:
        dw = op.dequantize(const(np.ascontiguousarray(wq.T)), const(ws.reshape(10, 1)), const(np.int8(0)))
        y = op.dense(dx, dw) if kind == "dense" else op.matmul(dx, dw, transpose_b=True)
    body = op.quantize(y, const(np.float32(0.05)), const(np.int8(0)))
    text, lib, flt = build_both(body, [x])
    assert 'out_dtype="int32"' in text, text
    a = rng.integers(-128, 128, (4, 48)).astype(np.int8)
    got, want = lib["main"](a).numpy(), flt["main"](a).numpy()
    assert np.abs(got.astype(np.int64) - want).max() <= 1 and (got == want).mean() > 0.95


# Bytes for any zero point: where the CPU multiplies uint8 by int8 four at
# a time (vpdpbusd), an 8-bit activation stays bytes whatever its zero
# point: int8 shifted by 128 to uint8, a convolution padded with the
# (shifted) zero point by an explicit pad, and zu * sum(w) taken off per
# output channel.  Run here (any CPU) as the Ice Lake module QDQToInteger
# makes, built for this CPU, against the Haswell one (int16 pairs): both
# are exact integer sums, so they agree on every bit.

def integer_forms(body, params):
    """[(text, lib)] of QDQToInteger's module for Ice Lake (bytes) and for
    Haswell (int16), each built for this CPU."""
    out = []
    for mcpu in ("icelake-server", "haswell"):
        mod = ir.with_attr(module(params, body), "target", loom.target.Target("llvm", mcpu=mcpu))
        mod = transform.Sequential(["InferType", "QDQToInteger"])(mod)
        text = str(mod)
        out.append((text, loom.build(ir.with_attr(mod, "target", loom.target.Target("llvm")), CONFIGS[0])))
    return out


BYTE_CASES = {
    # name: (x dtype, x shape, x zero point, weight shape (OIHW), conv attrs)
    "uint8, zero point 7, padded": ("uint8", (2, 8, 10, 10), 7, (6, 8, 3, 3), dict(padding=[1, 1])),
    "int8, zero point -5, padded, NHWC": ("int8", (2, 10, 10, 8), -5, (6, 3, 3, 8),
                                          dict(padding=[1, 2, 0, 1], data_layout="NHWC", kernel_layout="OHWI")),
    "int8, zero point -128 (no correction)": ("int8", (1, 8, 9, 9), -128, (6, 8, 3, 3), dict(padding=[1, 1])),
    "the stem: 3 channels, 7 x 7, stride 2": ("uint8", (1, 3, 23, 23), 114, (16, 3, 7, 7),
                                              dict(padding=[3, 3], strides=[2, 2])),
    "depthwise, int8, stride 2": ("int8", (1, 8, 9, 9), 3, (8, 1, 3, 3), dict(padding=[1, 1], strides=[2, 2],
                                                                              groups=8)),
    "1 x 1, unpadded": ("int8", (1, 16, 5, 5), 21, (24, 16, 1, 1), {}),
}


@pytest.mark.parametrize("name", list(BYTE_CASES))
def test_an_activation_of_any_zero_point_stays_bytes_where_bytes_multiply_in_fours(name):
    dtype, shape, zero, wshape, attrs = BYTE_CASES[name]
    rng = np.random.default_rng(17)
    info = np.iinfo(dtype)
    x = graph.Var("x", shape=shape, dtype=dtype)
    wq = rng.integers(-128, 128, wshape).astype(np.int8)
    wq.reshape(wshape[0], -1)[0] = -128  # the saturation case: 255 (or 127 + 128) by -128
    ws = (rng.uniform(0.5, 2, wshape[0]) * 0.01).astype(np.float32).reshape(-1, 1, 1, 1)
    y = op.conv2d(op.dequantize(x, const(np.float32(0.05)), const(np.array(zero, dtype))),
                  op.dequantize(const(wq), const(ws), const(np.int8(0))), **attrs)
    (fours, fours_lib), (pairs, pairs_lib) = integer_forms(op.quantize(y, const(np.float32(0.3)),
                                                                       const(np.uint8(128))), [x])
    assert "subtract(cast(%x, dtype=int16)" in pairs and "subtract(cast(%x" not in fours, fours
    shifted = "add(cast(%x, dtype=int16)" in fours
    assert shifted == (dtype == "int8"), fours
    zu = zero + (128 if dtype == "int8" else 0)
    padded = zu != 0 and "padding" in attrs
    assert ("pad(" in fours) == padded and (f"pad_value={zu}" in fours) == padded, fours
    assert ("subtract(conv2d(" in fours) == (zu != 0), fours
    for seed in range(2):
        a = np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        a.flat[:64] = info.max
        np.testing.assert_array_equal(fours_lib["main"](a).numpy(), pairs_lib["main"](a).numpy())


@pytest.mark.parametrize("kind", ["matmul", "matmul_tb", "dense", "batched matmul"])
def test_matrix_products_of_int8_activations_stay_bytes_with_the_shift(kind):
    rng = np.random.default_rng(19)
    xshape = (2, 4, 48) if kind == "batched matmul" else (4, 48)
    x = graph.Var("x", shape=xshape, dtype="int8")
    wshape = (2, 48, 10) if kind == "batched matmul" else (48, 10)
    wq = rng.integers(-128, 128, wshape).astype(np.int8)
    ws = rng.uniform(0.005, 0.02, 10).astype(np.float32)
    dx = op.dequantize(x, const(np.float32(0.1)), const(np.int8(-3)))
    if kind in ("matmul", "batched matmul"):
        y = op.matmul(dx, op.dequantize(const(wq), const(ws), const(np.int8(0))))
    else:
        dw = op.dequantize(const(np.ascontiguousarray(wq.T)), const(ws.reshape(10, 1)), const(np.int8(0)))
        y = op.dense(dx, dw) if kind == "dense" else op.matmul(dx, dw, transpose_b=True)
    (fours, fours_lib), (_, pairs_lib) = integer_forms(op.quantize(y, const(np.float32(0.05)), const(np.int8(0))),
                                                       [x])
    assert "add(cast(%x, dtype=int16)" in fours and "subtract(" in fours, fours
    a = rng.integers(-128, 128, xshape).astype(np.int8)
    a[..., 0, :] = 127
    np.testing.assert_array_equal(fours_lib["main"](a).numpy(), pairs_lib["main"](a).numpy())


def test_convert_layout_carries_the_zero_point_padding_into_the_convolutions_layout():
    """Two padded convolutions of a nonzero zero point in a row: the pad
    between them runs channels-last (or in channel blocks) as they do, no
    transposes around it."""
    rng = np.random.default_rng(23)
    x = graph.Var("x", shape=(1, 16, 12, 12), dtype="uint8")
    y = x
    for k in range(2):
        wq = rng.integers(-127, 128, (16, 16, 3, 3)).astype(np.int8)
        ws = np.float32(0.01)
        c = op.conv2d(op.dequantize(y, const(np.float32(0.05)), const(np.uint8(9 + k))),
                      op.dequantize(const(wq), const(ws), const(np.int8(0))), padding=[1, 1])
        y = op.quantize(c, const(np.float32(0.2)), const(np.uint8(10)))
    mod = ir.with_attr(module([x], y), "target", loom.target.Target("llvm", mcpu="icelake-server"))
    mod = transform.Sequential(["InferType", "QDQToInteger"])(mod)
    cap = Capture("ConvertLayout")
    with transform.PassContext(instruments=[cap]):
        lib = loom.build(ir.with_attr(mod, "target", loom.target.Target("llvm")), CONFIGS[0])
    text = cap.text
    pads = re.findall(r"pad\([^\n]*?pad_width=\[([0-9, ]+)\]", text)
    assert len(pads) == 2, text
    # the first pads the network's NCHW input; the second the first
    # convolution's result in its converted layout
    assert pads[0] == "0, 0, 0, 0, 1, 1, 1, 1", pads
    assert pads[1] in ("0, 0, 1, 1, 1, 1, 0, 0", "0, 0, 0, 0, 1, 1, 1, 1, 0, 0"), pads
    assert len(re.findall(r"\btranspose\(", text)) == 2, text  # into the layout and out of it
    flt = build_without(module([x], y), ["QDQToInteger"])
    a = rng.integers(0, 256, (1, 16, 12, 12)).astype(np.uint8)
    got, want = lib["main"](a).numpy(), flt["main"](a).numpy()
    assert np.abs(got.astype(np.int64) - want).max() <= 1 and (got == want).mean() > 0.98


# The epilogue's roundings: the llvm target fuses a multiply into an add
# only in a reduction's sum, so a quantized layer's scale-and-bias and
# dequantize(a) + dequantize(b) round as their equations in float32 do,
# on every CPU (with the product fused into the sum, a last-bit
# difference flipped a rounding now and then, and a ResNeXt-50 strayed 15
# steps from its integer reference over its 50 layers).

def test_a_quantized_layers_epilogue_has_the_float32_equations_bits():
    rng = np.random.default_rng(11)
    shape = (1, 16, 24, 24)
    x = graph.Var("x", shape=shape, dtype="uint8")
    wq = rng.integers(-127, 128, (32, 16, 3, 3)).astype(np.int8)
    sx, sw = np.float32(0.0372), (rng.uniform(0.5, 2, 32) * 0.01).astype(np.float32)
    bias = (rng.standard_normal(32) * 3).astype(np.float32)
    y = op.conv2d(op.dequantize(x, const(sx), const(np.uint8(9))),
                  op.dequantize(const(wq), const(sw.reshape(32, 1, 1, 1)), const(np.int8(0))), padding=[1, 1])
    body = op.add(y, const(bias.reshape(32, 1, 1)))  # float32 out: every bit shows
    text, lib, _ = build_both(body, [x])
    assert 'out_dtype="int32"' in text
    a = rng.integers(0, 256, shape).astype(np.uint8)
    acc = integer_conv(a.astype(np.int64) - 9, wq, pad=1)
    scale = (sx * sw).reshape(32, 1, 1)  # QDQToInteger's sx * sw, one float32 per channel
    want = acc.astype(np.float32) * scale + bias.reshape(32, 1, 1)  # two roundings
    np.testing.assert_array_equal(lib["main"](a).numpy(), want)


def test_an_int8_residual_add_has_the_float32_equations_bits():
    rng = np.random.default_rng(12)
    a, b = (graph.Var(n, shape=(64, 64), dtype="uint8") for n in "ab")
    sa, sb = np.float32(0.0731), np.float32(0.0469)
    body = op.add(op.dequantize(a, const(sa), const(np.uint8(61))), op.dequantize(b, const(sb), const(np.uint8(130))))
    av, bv = (rng.integers(0, 256, (64, 64)).astype(np.uint8) for _ in range(2))
    want = (av.astype(np.float32) - 61) * sa + (bv.astype(np.float32) - 130) * sb
    np.testing.assert_array_equal(run(body, [a, b], [av, bv]), want)
