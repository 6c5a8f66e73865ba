"""Quantized ONNX models (docs/low-precision.md): the QOperator form's
QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger against NumPy's
integer arithmetic, with zero points, per-channel scales and biases, and
ONNX Runtime's contrib operators (QLinearAdd, ...) in a QOperator network;
the
QDQ form of torchvision's ResNet-18 and MobileNetV2 quantized by
torch.ao.quantization and exported by torch.onnx, run as integer kernels
(no float convolution left after QDQToInteger) and equal to an integer
reference of the same graph."""
import re

import numpy as np
import pytest

import loom
from loom.frontend import onnx as lonnx

from conftest import ROOT, build_integer, float_products, integer_conv, optional_import, requires

onnx = optional_import("onnx")
if onnx:
    from onnx import helper, numpy_helper

HOST = str(ROOT / "configs" / "host.yaml")
ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6}


def model(nodes, inputs, outputs, initializers=(), opset=13):
    """inputs and outputs are (name, shape, dtype)."""
    value = lambda n, s, d: helper.make_tensor_value_info(n, ONNX_TYPES[d], s)  # noqa: E731
    graph = helper.make_graph(nodes, "g", [value(*i) for i in inputs], [value(*o) for o in outputs],
                              initializer=[numpy_helper.from_array(np.asarray(a), name=n) for n, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def build(m):
    return build_integer(lonnx.from_onnx(m), HOST)


def requantized(acc, multiplier, zero_point, dtype):
    """round(acc * multiplier) + zero_point, saturated: the real-number
    result of a QLinear operator."""
    info = np.iinfo(dtype)
    return np.clip(np.round(acc * multiplier) + zero_point, info.min, info.max)


@requires("onnx")
@pytest.mark.parametrize("groups", [1, 4])
def test_qlinear_conv_with_per_channel_scales_zero_points_and_a_bias(groups):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (2, 8, 9, 9)).astype(np.uint8)
    x[0, :, :3] = 255  # the saturation corner: 255 against +-127
    w = rng.integers(-127, 128, (12, 8 // groups, 3, 3)).astype(np.int8)
    w[0], w[1] = 127, -127
    xs, xz = np.float32(0.02), np.uint8(11)
    ws = rng.uniform(0.002, 0.01, 12).astype(np.float32)
    ys, yz = np.float32(0.15), np.uint8(100)
    bias = rng.integers(-5000, 5000, 12).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 1, 1, 1], strides=[2, 2], group=groups)
    m = model([node], [("x", [2, 8, 9, 9], "uint8")], [("y", None, "uint8")],
              [("xs", xs), ("xz", xz), ("w", w), ("ws", ws), ("wz", np.zeros(12, np.int8)), ("ys", ys), ("yz", yz),
               ("b", bias)])
    lib, text = build(m)
    assert float_products(text) == [], text
    got = lib["main"](x).numpy()
    acc = integer_conv(x.astype(np.int64) - xz, w, stride=2, pad=1, groups=groups) + bias.reshape(-1, 1, 1)
    want = requantized(acc, (xs * ws.astype(np.float64) / ys).reshape(-1, 1, 1), yz, np.uint8)
    assert got.dtype == np.uint8 and got.shape == want.shape
    assert np.abs(got - want).max() <= 1 and (got == want).mean() > 0.99
    assert (want == 255).any() and (want == 0).any()  # both ends saturate


@requires("onnx")
def test_qlinear_matmul_with_per_column_scales():
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (3, 5, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 10)).astype(np.int8)
    az, bz, yz = np.int8(-4), np.full(10, 3, np.int8), np.int8(-10)
    as_, bs, ys = np.float32(0.05), rng.uniform(0.01, 0.03, 10).astype(np.float32), np.float32(0.9)
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    m = model([node], [("a", [3, 5, 64], "int8")], [("y", None, "int8")],
              [("as", as_), ("az", az), ("b", b), ("bs", bs), ("bz", bz), ("ys", ys), ("yz", yz)])
    lib, text = build(m)
    assert float_products(text) == [], text
    got = lib["main"](a).numpy()
    acc = (a.astype(np.int64) - az) @ (b.astype(np.int64) - bz)
    want = requantized(acc, as_ * bs.astype(np.float64) / ys, yz, np.int8)
    assert np.abs(got.astype(np.int64) - want).max() <= 1 and (got == want).mean() > 0.99


@requires("onnx")
def test_conv_integer_and_matmul_integer_are_int32_sums_with_zero_points():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
    w = rng.integers(0, 256, (5, 4, 3, 3)).astype(np.uint8)
    wz = rng.integers(0, 256, 5).astype(np.uint8)  # per output channel
    conv = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])
    m = model([conv], [("x", [1, 4, 6, 6], "uint8")], [("y", None, "int32")],
              [("w", w), ("xz", np.uint8(128)), ("wz", wz)])
    got = loom.build(lonnx.from_onnx(m), HOST)["main"](x).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, integer_conv(x.astype(np.int64) - 128, w.astype(np.int64) - wz.reshape(-1, 1, 1, 1),
                                                pad=1))

    a = rng.integers(-128, 128, (7, 33)).astype(np.int8)
    b = rng.integers(-128, 128, (33, 9)).astype(np.int8)
    az = rng.integers(-128, 128, 7).astype(np.int8)  # per row
    bz = rng.integers(-128, 128, 9).astype(np.int8)  # per column
    mm = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    m = model([mm], [("a", [7, 33], "int8")], [("y", None, "int32")], [("b", b), ("az", az), ("bz", bz)])
    got = loom.build(lonnx.from_onnx(m), HOST)["main"](a).numpy()
    np.testing.assert_array_equal(got, (a.astype(np.int64) - az.reshape(-1, 1)) @ (b.astype(np.int64) - bz))


@requires("onnx")
def test_a_quantize_to_a_format_loom_has_not_is_refused_naming_the_node():
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q0")
    m = model([node], [("x", [4], "float32")], [("y", None, "int32")], [("s", np.float32(1)), ("z", np.int32(0))])
    with pytest.raises(loom.LoomError, match=re.escape("QuantizeLinear 'q0': a zero point of type int32 is not "
                                                       "supported")):
        lonnx.from_onnx(m)


@requires("onnx", "torch", "torchvision")
# MobileNetV3-Large and EfficientNet-B0: squeeze-and-excitation blocks,
# whose global average pools of 2 x 2 here made a rounding tie of every
# other sum (12 steps from the reference before the pools summed the
# integers), hard-sigmoid and sigmoid.
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0"])
def test_a_quantized_torchvision_model_runs_integer_kernels_equal_to_the_integer_reference(name):
    import qdq_reference
    data, _, _ = qdq_reference.quantized_model(name)
    lib, text = build(data)
    convs = len(re.findall(r"\bconv2d\(", text))
    assert convs >= 20 and float_products(text) == [], float_products(text)
    step = qdq_reference.output_step(data)
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((1, 3, qdq_reference.SIZE, qdq_reference.SIZE))
        x = x.astype(np.float32)
        want = qdq_reference.evaluate(data, x)[0]
        got = lib["main"](x).numpy()
        assert np.abs(got - want).max() <= step * 1.01
        assert (np.abs(got - want) < step / 2).mean() > 0.99
        assert want.std() > 10 * step  # not a network whose output quantizes to a constant



@requires("onnx", "torch", "torchvision")
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_int8_activations_give_the_uint8_models_output_bit_for_bit(name):
    """ONNX Runtime's quantizer writes int8 activations with zero points
    that are not 0: the model of the test above with each activation's
    zero point z - 128 holds the same real values, so Loom's output is
    the uint8 model's on every bit (where the CPU has vpdpbusd, through
    the +128 shift to bytes, the zero point padding and the weights' sums
    taken off), and within one step of the integer reference."""
    import qdq_reference
    data, _, _ = qdq_reference.quantized_model(name)
    signed = qdq_reference.with_int8_activations(data)
    (lib_u, _), (lib_s, text) = build(data), build(signed)
    assert float_products(text) == [], float_products(text)
    step = qdq_reference.output_step(signed)
    x = np.random.default_rng(3).standard_normal((1, 3, qdq_reference.SIZE, qdq_reference.SIZE)).astype(np.float32)
    got = lib_s["main"](x).numpy()
    np.testing.assert_array_equal(got, lib_u["main"](x).numpy())
    assert np.abs(got - qdq_reference.evaluate(signed, x)[0]).max() <= step * 1.01

def contrib_model(nodes, inputs, outputs, initializers=()):
    m = model(nodes, inputs, outputs, initializers)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def quantize_ref(y, scale, zero_point, dtype=np.uint8):
    info = np.iinfo(dtype)
    return np.clip(np.round(y / scale) + zero_point, info.min, info.max)


@requires("onnx")
def test_onnx_runtime_contrib_operators_of_the_qoperator_form():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (2, 4, 5, 5)).astype(np.uint8)
    b = rng.integers(0, 256, (2, 4, 5, 5)).astype(np.uint8)
    sa, za, sb, zb, sc, zc = np.float32(0.03), np.uint8(120), np.float32(0.05), np.uint8(3), np.float32(0.07), \
        np.uint8(128)
    consts = [("sa", sa), ("za", za), ("sb", sb), ("zb", zb), ("sc", sc), ("zc", zc)]
    ms = "com.microsoft"
    nodes = [helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["add"], domain=ms),
             helper.make_node("QLinearMul", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["mul"], domain=ms),
             helper.make_node("QLinearGlobalAveragePool", ["a", "sa", "za", "sc", "zc"], ["gap"], domain=ms),
             helper.make_node("QLinearSigmoid", ["a", "sa", "za", "sc", "zc"], ["sig"], domain=ms),
             helper.make_node("QLinearLeakyRelu", ["a", "sa", "za", "sc", "zc"], ["leaky"], domain=ms, alpha=0.2),
             helper.make_node("QLinearConcat", ["sc", "zc", "a", "sa", "za", "b", "sb", "zb"], ["cat"], domain=ms,
                              axis=1)]
    outs = ["add", "mul", "gap", "sig", "leaky", "cat"]
    m = contrib_model(nodes, [("a", list(a.shape), "uint8"), ("b", list(b.shape), "uint8")],
                      [(o, None, "uint8") for o in outs], consts)
    got = loom.build(lonnx.from_onnx(m), HOST)["main"](a, b)
    da, db = (a.astype(np.float64) - za) * sa, (b.astype(np.float64) - zb) * sb
    wants = [da + db, da * db, da.mean(axis=(2, 3), keepdims=True), 1 / (1 + np.exp(-da)),
             np.where(da < 0, 0.2 * da, da), np.concatenate([da, db], axis=1)]
    for name, g, want in zip(outs, got, wants):
        g = g.numpy()
        w = quantize_ref(want, sc, zc)
        assert g.dtype == np.uint8 and g.shape == w.shape, name
        assert np.abs(g.astype(np.int64) - w).max() <= 1, name


@requires("onnx")
def test_a_qoperator_network_imports_with_no_float_convolution():
    """QuantizeLinear, QLinearConv, a residual QLinearAdd, a uint8 MaxPool,
    QLinearGlobalAveragePool, QLinearMatMul, DequantizeLinear: the form of
    the ONNX model zoo's int8 CNNs."""
    rng = np.random.default_rng(4)
    w1 = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    w2 = rng.integers(-127, 128, (8, 8, 3, 3)).astype(np.int8)
    fc = rng.integers(-127, 128, (8, 5)).astype(np.int8)
    c = {"s_in": np.float32(0.02), "z_in": np.uint8(128), "s_w1": np.float32(0.01), "s_w2": np.float32(0.004),
         "z_w": np.int8(0), "s_1": np.float32(0.05), "s_2": np.float32(0.05), "z_1": np.uint8(0),
         "s_add": np.float32(0.08), "s_fc": np.float32(0.003), "s_out": np.float32(0.1), "z_out": np.uint8(100),
         "w1": w1, "w2": w2, "fc": fc}
    ms = "com.microsoft"
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "s_in", "z_in", "w1", "s_w1", "z_w", "s_1", "z_1"], ["c1"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("QLinearConv", ["c1", "s_1", "z_1", "w2", "s_w2", "z_w", "s_2", "z_1"], ["c2"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("QLinearAdd", ["c1", "s_1", "z_1", "c2", "s_2", "z_1", "s_add", "z_1"], ["r"], domain=ms),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("QLinearGlobalAveragePool", ["p", "s_add", "z_1", "s_add", "z_1"], ["g"], domain=ms),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("QLinearMatMul", ["f", "s_add", "z_1", "fc", "s_fc", "z_w", "s_out", "z_out"], ["y"]),
        helper.make_node("DequantizeLinear", ["y", "s_out", "z_out"], ["out"]),
    ]
    m = contrib_model(nodes, [("x", [1, 3, 12, 12], "float32")], [("out", None, "float32")], list(c.items()))
    lib, text = build(m)
    assert len(re.findall(r"\bconv2d\(", text)) == 2 and float_products(text) == [], text
    x = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
    got = lib["main"](x).numpy()

    # NumPy, as the operators' equations read, in float64
    def dq(q, s, z):
        return (q.astype(np.float64) - z) * s

    def qconv(q, s, z, w, sw, so, zo):
        acc = integer_conv(q.astype(np.int64) - z, w, pad=1)
        return quantize_ref(acc * (s * sw) / so, 1, zo)

    xq = quantize_ref(x, c["s_in"], c["z_in"])
    c1 = qconv(xq, c["s_in"], c["z_in"], w1, c["s_w1"], c["s_1"], 0)
    c2 = qconv(c1, c["s_1"], 0, w2, c["s_w2"], c["s_2"], 0)
    r = quantize_ref(dq(c1, c["s_1"], 0) + dq(c2, c["s_2"], 0), c["s_add"], 0)
    p = r.reshape(1, 8, 6, 2, 6, 2).max(axis=(3, 5))
    g = quantize_ref(dq(p, c["s_add"], 0).mean(axis=(2, 3)), c["s_add"], 0)
    y = quantize_ref(g @ fc.astype(np.float64) * (c["s_add"] * c["s_fc"]) / c["s_out"], 1, c["z_out"])
    want = dq(y, c["s_out"], c["z_out"])
    # (an intermediate rounding may differ by a step, which can move the result by one)
    assert np.abs(got - want).max() <= c["s_out"] * 1.01
    assert want.std() > 2 * c["s_out"]
