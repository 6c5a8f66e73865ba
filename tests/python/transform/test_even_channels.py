"""EvenChannels (docs/passes.md): an integer convolution summed in int32
with an odd number of input channels takes one channel of zeros on its
input and its constant weights where the target implements dot2_i16, so
PairProducts pairs every product.  The results against NumPy's int64
sums (NCHW and NHWC, 1, 3 and 5 channels, strides, padding, the
saturation case), the rewrite on the IR, and what it leaves alone."""
from pathlib import Path

import numpy as np
import pytest

import loom
from loom import graph, op, transform

ROOT = Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")
rng = np.random.default_rng(3011)


def conv_int(x, w, stride, pad):
    """Direct cross-correlation in int64: x N C H W, w K C R S."""
    xs = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    r = w.shape[2]
    out = (xs.shape[2] - r) // stride + 1, (xs.shape[3] - r) // stride + 1
    want = np.zeros((x.shape[0], w.shape[0]) + out, np.int64)
    for i in range(r):
        for j in range(r):
            patch = xs[:, :, i:i + stride * out[0]:stride, j:j + stride * out[1]:stride]
            want += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return want


def rewritten(mod, kind="llvm"):
    mod = loom.ir.with_attr(mod, "target", loom.target.Target(kind))
    with transform.PassContext(opt_level=2):
        for name in ["InferType", "EvenChannels"]:
            mod = transform.get_pass(name)(mod)
    return mod.script()


@pytest.mark.parametrize("channels, window, stride, xdtype, layout", [
    (3, 7, 2, "uint8", "NCHW"), (1, 3, 1, "int8", "NCHW"), (5, 3, 2, "int16", "NCHW"), (3, 5, 1, "uint8", "NHWC")])
def test_odd_channels_sum_exactly(channels, window, stride, xdtype, layout):
    info = np.iinfo(xdtype)
    a = rng.integers(info.min, info.max, (2, channels, 13, 11), endpoint=True).astype(xdtype)
    b = rng.integers(-128, 128, (16, channels, window, window)).astype(np.int8)
    a[0, :, :4] = info.max  # the saturation case
    b[0], b[1] = 127, -128
    pad = window // 2
    if layout == "NHWC":
        x = graph.Var("x", shape=a.transpose(0, 2, 3, 1).shape, dtype=xdtype)
        body = op.conv2d(x, graph.Constant(np.ascontiguousarray(b.transpose(0, 2, 3, 1))), strides=[stride, stride],
                         padding=[pad], data_layout="NHWC", kernel_layout="OHWI", out_dtype="int32")
        arg = np.ascontiguousarray(a.transpose(0, 2, 3, 1))
    else:
        x = graph.Var("x", shape=a.shape, dtype=xdtype)
        body = op.conv2d(x, graph.Constant(b), strides=[stride, stride], padding=[pad], out_dtype="int32")
        arg = a
    mod = loom.IRModule({"main": graph.Function([x], body)})
    assert "pad(%x" in rewritten(mod)
    got = loom.build(mod, HOST)["main"](arg).numpy()
    want = conv_int(a, b, stride, pad)
    if layout == "NHWC":
        want = want.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(got, want)


def test_what_it_leaves_alone():
    def conv(channels, xdtype="int16", wdtype=np.int8, out_dtype="int32", groups=1, **attrs):
        x = graph.Var("x", shape=(1, channels, 8, 8), dtype=xdtype)
        w = graph.Constant(np.ones((channels, channels // groups, 3, 3), wdtype))
        return loom.IRModule({"main": graph.Function([x], op.conv2d(x, w, groups=groups, out_dtype=out_dtype,
                                                                    **attrs))})

    assert "pad(" in rewritten(conv(3))
    assert "pad(" not in rewritten(conv(4))  # even already
    assert "pad(" not in rewritten(conv(3), kind="c")  # no dot2_i16: nothing would pair
    assert "pad(" not in rewritten(conv(3, groups=3))  # depthwise: one channel per group
    assert "pad(" not in rewritten(conv(3, "float32", np.float32, ""))
    assert "pad(" not in rewritten(conv(3, "uint16", np.uint16))  # int16 cannot hold uint16
    x = graph.Var("x", shape=(1, 3, 8, 8), dtype="int16")
    w = graph.Var("w", shape=(4, 3, 3, 3), dtype="int8")  # weights known only at run time
    assert "pad(" not in rewritten(loom.IRModule({"main": graph.Function([x, w], op.conv2d(x, w,
                                                                                          out_dtype="int32"))}))
