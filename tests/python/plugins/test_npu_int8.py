"""The reference NPU's integer mode (docs/npu-spec.md, "Integers"): the
layers QDQToInteger leaves of a quantized model (int8 convolutions,
depthwise and dense, matmul, the int8 add) compiled for the NPU and run
on its simulator give the same bits as the llvm build of the same graph
(both round the scale's product and the bias's sum apart, on any CPU), on random
inputs with zero points, padding, tiling on a small scratchpad and the
saturation case; a golden int8 stream; streams written by hand and their
refusals; a quantized ResNet-18 and MobileNetV2 made with torch.ao."""
import json
import os
import re
import struct
import sys

import numpy as np
import pytest

import loom
from loom import graph, ir, op
from conftest import ROOT, requires

from test_npu import npu_module, small_scratchpad_config, header, instruction

NPU = str(ROOT / "configs" / "npu.yaml")
HOST = str(ROOT / "configs" / "host.yaml")
GOLDEN = ROOT / "tests" / "fixtures" / "npu"


def const(a):
    return graph.Constant(loom.nd.array(np.asarray(a)))


def assert_same_bits(got, want):
    """The same bits."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def quantized_layer(rng, kind, x_dtype="uint8", x_zero=3, bias=True, act="relu", out_dtype="uint8", scales="channel"):
    """(params, body, inputs): dequantize -> kind -> [bias] -> [act] ->
    [quantize] as an ONNX QDQ graph reads, for QDQToInteger to make integer."""
    lo, hi = (0, 256) if x_dtype == "uint8" else (-128, 128)
    if kind in ("conv2d", "depthwise"):
        C, O = (6, 6) if kind == "depthwise" else (5, 7)
        xshape, wshape = (2, C, 9, 11), ((O, 1, 3, 3) if kind == "depthwise" else (O, C, 3, 3))
        channels, cshape = O, (O, 1, 1)
    elif kind == "dense":
        xshape, wshape, channels, cshape = (3, 40), (9, 40), 9, (9,)
    else:  # matmul, weights transposed
        xshape, wshape, channels, cshape = (4, 24), (10, 24), 10, (10,)
    x = graph.Var("x", shape=xshape, dtype=x_dtype)
    xv = rng.integers(lo, hi, xshape).astype(x_dtype)
    w = rng.integers(-127, 128, wshape).astype(np.int8)
    sw = (rng.random(channels) * 0.02 + 0.005).astype(np.float32)
    if scales != "channel":
        sw = sw[:1]
    wscale = sw.reshape((-1,) + (1,) * (len(wshape) - 1)) if scales == "channel" else sw.reshape(())
    dx = op.dequantize(x, const(np.float32(0.05)), const(np.array(x_zero, x_dtype)))
    dw = op.dequantize(const(w), const(wscale), const(np.zeros((), np.int8)))
    if kind == "conv2d":
        h = op.conv2d(dx, dw, padding=[1, 1], strides=[2, 1])
    elif kind == "depthwise":
        h = op.conv2d(dx, dw, padding=[1, 1], groups=6)
    elif kind == "dense":
        h = op.dense(dx, dw)
    else:
        h = op.matmul(dx, dw, transpose_b=True)
    if bias:
        h = op.add(h, const((rng.standard_normal(channels) * 0.5).astype(np.float32).reshape(cshape)))
    if act == "relu":
        h = op.relu(h)
    elif act == "relu6":
        h = op.clip(h, a_min=0.0, a_max=6.0)
    if out_dtype:
        scale = np.float32(0.04 if kind in ("conv2d", "depthwise") else 0.5)  # keeps the results inside the range
        h = op.quantize(h, const(scale), const(np.array(2 if out_dtype == "uint8" else -1, out_dtype)))
    return [x], h, [xv]


def build_both(params, body, npu=NPU):
    mod = ir.IRModule({"main": graph.Function(params, body)})
    return loom.build(mod, npu), loom.build(mod, HOST)


def composites(lib):
    text = npu_module(lib).inspect_source("npu")
    return text


LAYERS = {
    "conv2d-zero-point-padding-bias-relu": dict(kind="conv2d"),
    "conv2d-int8-no-zero-point-relu6-int8-out": dict(kind="conv2d", x_dtype="int8", x_zero=0, bias=False,
                                                     act="relu6", out_dtype="int8"),
    "conv2d-one-scale-fp32-out": dict(kind="conv2d", scales="tensor", act=None, out_dtype=None),
    "depthwise-bias-relu6": dict(kind="depthwise", act="relu6"),
    "dense-bias": dict(kind="dense", act=None),
    "dense-int8-in-fp32-out": dict(kind="dense", x_dtype="int8", x_zero=-4, out_dtype=None),
    "matmul-transposed": dict(kind="matmul", bias=False, act=None),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_an_integer_layer_on_the_npu_gives_the_llvm_builds_bits(name):
    rng = np.random.default_rng(sorted(LAYERS).index(name))
    params, body, inputs = quantized_layer(rng, **LAYERS[name])
    npu, host = build_both(params, body)
    streams = composites(npu)
    assert "MATMUL.int8" in streams, streams  # the whole layer is the npu's, the product in int8
    got, want = npu["main"](*inputs).numpy(), host["main"](*inputs).numpy()
    assert_same_bits(got, want)
    if got.dtype != np.float32:
        assert len(np.unique(got)) > 4  # not saturated to a constant


def test_tiles_and_input_chunks_on_a_small_scratchpad_accumulate_in_int32(tmp_path):
    # 2 KiB: the convolution's 64 input channels come in chunks, whose int32
    # sums continue across MATMULs; padding filled with the zero point.
    rng = np.random.default_rng(5)
    x = graph.Var("x", shape=(1, 64, 6, 6), dtype="uint8")
    xv = rng.integers(0, 256, (1, 64, 6, 6)).astype(np.uint8)
    w = rng.integers(-127, 128, (8, 64, 3, 3)).astype(np.int8)
    body = op.dequantize(x, const(np.float32(0.02)), const(np.uint8(128)))
    body = op.conv2d(body, op.dequantize(const(w), const(np.float32(0.01)), const(np.int8(0))), padding=[1, 1])
    body = op.quantize(op.relu(body), const(np.float32(0.5)), const(np.uint8(0)))
    npu, host = build_both([x], body, small_scratchpad_config(tmp_path, 2))
    text = composites(npu)
    assert text.count("accumulate") > 4, text
    assert_same_bits(npu["main"](xv).numpy(), host["main"](xv).numpy())


def test_the_saturation_case_is_exact():
    # Activations 255 against weights +127 and -128 (no zero point): sums
    # of 8 bits by 8 bits that 16-bit pair sums would saturate.
    x = graph.Var("x", shape=(1, 16, 4, 4), dtype="uint8")
    xv = np.full((1, 16, 4, 4), 255, np.uint8)
    w = np.full((3, 16, 3, 3), 127, np.int8)
    w[1] = -128
    w[2, :8] = -127
    body = op.conv2d(op.dequantize(x, const(np.float32(1.0)), const(np.uint8(0))),
                     op.dequantize(const(w), const(np.float32(1.0)), const(np.int8(0))), padding=[1, 1])
    npu, host = build_both([x], body)  # the fp32 result: every sum visible
    got = npu["main"](xv).numpy()
    np.testing.assert_array_equal(got, host["main"](xv).numpy())
    assert got[0, 0, 1, 1] == 255 * 127 * 16 * 9 and got[0, 1, 1, 1] == -255 * 128 * 16 * 9


def test_an_int8_residual_add_dequantizes_adds_and_requantizes():
    rng = np.random.default_rng(9)
    shape = (1, 4, 7, 9)
    a, b = (graph.Var(n, shape=shape, dtype="uint8") for n in "ab")
    av, bv = (rng.integers(0, 256, shape).astype(np.uint8) for _ in range(2))
    body = op.add(op.dequantize(a, const(np.float32(0.03)), const(np.uint8(120))),
                  op.dequantize(b, const(np.float32(0.05)), const(np.uint8(7))))
    body = op.quantize(op.relu(body), const(np.float32(0.06)), const(np.uint8(0)))
    npu, host = build_both([a, b], body)
    text = composites(npu)
    assert "dequantize" in text and "quantize" in text and "\tadd " in text and "scale_add" not in text, text
    assert_same_bits(npu["main"](av, bv).numpy(), host["main"](av, bv).numpy())


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_an_int8_activation_and_max_pooling_with_padding(x_dtype):
    # quantize(clip(dequantize(x))) and quantize(max_pool2d(dequantize(x)))
    # as a QDQ graph has them around ReLU6 and MaxPool: padding must never win.
    rng = np.random.default_rng(11)
    lo, hi, zero = (0, 256, 100) if x_dtype == "uint8" else (-128, 128, -20)
    shape = (1, 5, 9, 8)
    # Two inputs: one dequantize read by two layers would be computed once,
    # on the CPU, and each layer would take it in fp32.
    x, y = (graph.Var(n, shape=shape, dtype=x_dtype) for n in "xy")
    xv, yv = (rng.integers(lo, hi, shape).astype(x_dtype) for _ in range(2))
    xv[0, 0] = yv[0, 0] = lo  # a channel of the least value: the padding's
    dq = lambda v: op.dequantize(v, const(np.float32(0.04)), const(np.array(zero, x_dtype)))
    q = lambda h, s: op.quantize(h, const(np.float32(s)), const(np.array(zero // 2, x_dtype)))
    act = q(op.clip(dq(x), a_min=0.0, a_max=6.0), 0.03)
    pooled = q(op.max_pool2d(dq(y), pool_size=[3, 3], strides=[2, 2], padding=[1, 1]), 0.05)
    npu, host = build_both([x, y], graph.Tuple([act, pooled]))
    text = composites(npu)
    assert text.count("dequantize") >= 2 and "POOL" in text and "FILL.int32" in text, text
    for got, want in zip(npu["main"](xv, yv), host["main"](xv, yv)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())  # no multiply-add: exact anywhere


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_a_max_pooling_of_the_integers_runs_on_the_npu(x_dtype):
    # quantize(max_pool2d(dequantize(x, s, z)), s, z): QDQToInteger pools
    # the integers; the NPU takes that pooling (npu.int8_max_pool2d).
    rng = np.random.default_rng(12)
    lo, hi, zero = (0, 256, 100) if x_dtype == "uint8" else (-128, 128, -20)
    shape = (1, 5, 9, 8)
    x = graph.Var("x", shape=shape, dtype=x_dtype)
    xv = rng.integers(lo, hi, shape).astype(x_dtype)
    xv[0, 0] = lo  # a channel of the least value: the padding's
    s, z = const(np.float32(0.04)), const(np.array(zero, x_dtype))
    body = op.quantize(op.max_pool2d(op.dequantize(x, s, z), pool_size=[3, 3], strides=[2, 2], padding=[1, 1]), s, z)
    npu, host = build_both([x], body)
    text = composites(npu)
    assert "POOL" in text and "FILL.int32" in text, text
    np.testing.assert_array_equal(npu["main"](xv).numpy(), host["main"](xv).numpy())


def test_the_int8_stream_matches_its_golden_file():
    rng = np.random.default_rng(3)
    x = graph.Var("x", shape=(1, 3, 6, 6), dtype="uint8")
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    body = op.dequantize(x, const(np.float32(0.1)), const(np.uint8(5)))
    body = op.conv2d(body, op.dequantize(const(w), const(np.float32(0.02)), const(np.int8(0))), padding=[1, 1])
    body = op.add(body, const(np.arange(4, dtype=np.float32).reshape(4, 1, 1)))
    body = op.quantize(op.relu(body), const(np.float32(0.1)), const(np.uint8(0)))
    npu, host = build_both([x], body)
    got = composites(npu)
    golden = GOLDEN / "int8_conv2d.txt"
    if not golden.exists() and os.environ.get("LOOM_WRITE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text(), f"{golden} differs; the stream now reads:\n{got}"
    xv = rng.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    assert_same_bits(npu["main"](xv).numpy(), host["main"](xv).numpy())


def test_what_the_integer_mode_does_not_take_stays_on_the_cpu():
    # A zero point that is not a constant scalar: the product stays on the
    # CPU (as an int32 kernel), the rest is unchanged.
    rng = np.random.default_rng(4)
    x = graph.Var("x", shape=(1, 3, 5, 5), dtype="uint8")
    z = graph.Var("z", shape=(), dtype="uint8")
    w = rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8)
    body = op.conv2d(op.dequantize(x, const(np.float32(0.1)), z),
                     op.dequantize(const(w), const(np.float32(0.02)), const(np.int8(0))))
    body = op.quantize(body, const(np.float32(0.1)), const(np.uint8(0)))
    npu, host = build_both([x, z], body)
    xv, zv = rng.integers(0, 256, (1, 3, 5, 5)).astype(np.uint8), np.array(3, np.uint8)
    np.testing.assert_array_equal(npu["main"](xv, zv).numpy(), host["main"](xv, zv).numpy())
    try:
        text = composites(npu)
    except AssertionError:
        return  # no npu module at all
    assert "MATMUL.int8" not in text


# ---- streams by hand ---------------------------------------------------------

def buffer(kind, index, words, dtype=0):
    return struct.pack("<BBHIQQQ", kind, dtype, 0, index, 0, words, 0)


def int8_stream(za=0, zb=3, minor=1, b_dtype=2):
    """c (2 x 3, int32 -> uint8) = quantize((a - za) . (b - zb) * 0.5): a int8
    (2 x 4) at spad 0, b uint8 (4 x 3) at 8, c at 20."""
    bufs = [buffer(0, 0, 8, 1), buffer(0, 1, 12, b_dtype), buffer(1, 0, 6, 2)]
    half = struct.unpack("<i", struct.pack("<f", 0.5))[0]
    insts = [instruction(1, [0, 0, 0, 8, 1, 1, 1, 0, 0, 1, 0, 0], dtype=1),
             instruction(1, [1, 0, 8, 12, 1, 1, 1, 0, 0, 1, 0, 0], dtype=b_dtype, signal=1),
             instruction(4, [0, 2, 3, 4, 0, 8, 20, 0] + [0] * 10 + [za, zb], dtype=1, wait=1, signal=2),
             instruction(5, [9, 6, 20, 20], wait=2),
             instruction(5, [8, 6, 20, 20, 0, 0, 0, half]),
             instruction(5, [11, 6, 20, 20, 0, 0, 0, struct.unpack("<i", struct.pack("<f", 1.0))[0], 1], dtype=2,
                         signal=4),
             instruction(2, [2, 0, 20, 6, 1, 1, 1, 0, 0, 1, 0, 0], dtype=2, wait=4),
             instruction(8, [])]
    return header(bufs, insts, 32, minor=minor) + b"".join(bufs) + b"".join(insts)


def run_int8(stream, a, b):
    out = loom.nd.array(np.zeros(6, np.uint8))
    report = json.loads(loom.runtime.get_global_func("npu.run_stream")(stream, [loom.nd.array(a), loom.nd.array(b)],
                                                                       [out], 1))
    return out.numpy(), report


def test_an_int8_stream_written_by_hand_runs_and_moves_bytes():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, 8).astype(np.int8)
    b = rng.integers(0, 256, 12).astype(np.uint8)
    out, report = run_int8(int8_stream(za=-2, zb=3), a, b)
    acc = (a.reshape(2, 4).astype(np.int64) + 2) @ (b.reshape(4, 3).astype(np.int64) - 3)
    want = np.clip(np.round(acc.astype(np.float32) * np.float32(0.5)) + 1, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(out, want.reshape(-1))
    assert report["dma_bytes"] == 8 + 12 + 6  # one byte an element
    text = loom.runtime.get_global_func("npu.disassemble")(int8_stream(za=-2, zb=3))
    assert "MATMUL.int8\tmatrix M=2 N=3 K=4 a=0 b=8 c=20 zero points -2,3" in text, text
    assert "VEC.uint8\tquantize n=6" in text and "buffer 1: input 1, 12 uint8" in text, text


@pytest.mark.parametrize("stream, message", ids=["in-1.0", "dtype", "load-dtype"], argvalues=[
    (int8_stream(minor=0), "at byte 65: buffer 0 has dtype int8, which version 1.0 does not have "
                           "(the integer mode is version 1.1)"),
    (int8_stream()[:64 + 96 * 0 + 32] + bytes([0, 7]) + int8_stream()[64 + 32 + 2:],
     "at byte 97: buffer 1 has unknown dtype 7"),
    (int8_stream(b_dtype=2)[:64 + 96 + 96 + 1] + bytes([1]) + int8_stream(b_dtype=2)[64 + 96 + 96 + 2:],
     "instruction 1 (LOAD): a int8 transfer of buffer 1, which is uint8"),
])
def test_malformed_int8_streams_are_refused_with_where(stream, message):
    a, b = np.zeros(8, np.int8), np.zeros(12, np.uint8)
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        run_int8(stream, a, b)


def test_an_int8_matmul_refuses_an_operand_that_is_not_8_bits():
    # b's buffer as int32 holding 300: the MAC array takes 8-bit operands.
    stream = bytearray(int8_stream(b_dtype=3))
    a, b = np.zeros(8, np.int8), np.full(12, 300, np.int32)
    with pytest.raises(loom.LoomError, match=re.escape("instruction 2 (MATMUL): operand b holds 300 at word 8, "
                                                       "not an 8-bit value (int8 MATMUL)")):
        run_int8(bytes(stream), a, b)


def test_a_region_argument_of_another_dtype_is_refused():
    with pytest.raises(loom.LoomError, match=re.escape("npu: region input 1 is int8, the stream's buffer is uint8")):
        run_int8(int8_stream(), np.zeros(8, np.int8), np.zeros(12, np.int8))
    with pytest.raises(loom.LoomError, match="npu.run_stream takes float32, int8, uint8 and int32 tensors, got int16"):
        run_int8(int8_stream(), np.zeros(8, np.int8), np.zeros(12, np.int16))


# ---- quantized models ----------------------------------------------------------

@requires("onnx", "torch", "torchvision")
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_a_quantized_torchvision_model_runs_its_integer_layers_on_the_npu_with_the_llvm_builds_bits(name):
    sys.path.insert(0, str(ROOT / "tests" / "python" / "frontend"))
    import qdq_reference
    from loom.frontend import onnx as lonnx
    data, _, _ = qdq_reference.quantized_model(name)
    mod = lonnx.from_onnx(data)
    npu, host = loom.build(mod, NPU), loom.build(mod, HOST)
    text = composites(npu)
    int8_products = text.count("MATMUL.int8")
    assert int8_products >= 20 and "MATMUL\t" not in text, text[:2000]  # every product integer
    step = qdq_reference.output_step(data)
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((1, 3, qdq_reference.SIZE, qdq_reference.SIZE))
        x = x.astype(np.float32)
        got, want = npu["main"](x).numpy(), host["main"](x).numpy()
        assert_same_bits(got, want)
        assert want.std() > 10 * step
