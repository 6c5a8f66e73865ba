"""ConvertLayout (docs/passes.md) in its two layouts, channels-last and
channel blocks (`ConvertLayout.layout: NCHWc`), on networks written the
way the importers give them (NCHW, constants for weights): every form a
model has -- a 3-channel stem, depthwise and pointwise convolutions, a
residual add, squeeze-and-excitation, concats, pools, a flatten and a
classifier -- built each way and compared with the same model built
channels-first, on random inputs."""
import re
import subprocess

import numpy as np
import pytest

import loom
from loom import graph, op

from conftest import LOOMC

rng = np.random.default_rng(53)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def const(*shape):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return graph.Constant(f32(*shape, scale=1.0 / np.sqrt(fan_in)))


def config(layout, threads=1):
    pipeline = ("  disabled: [ConvertLayout]\n" if layout is None else
                f"  config:\n    ConvertLayout.layout: {layout}\n")
    return loom.Config.parse(f"target:\n  kind: llvm\n  num-threads: {threads}\npipeline:\n{pipeline}", "t.yaml")


def mobile_block(x, cin, cexp, cout, k, stride, se):
    """An inverted residual block (MobileNetV2/V3, EfficientNet)."""
    h = op.clip(op.conv2d(x, const(cexp, cin, 1, 1)), a_min=0.0, a_max=6.0)
    h = op.conv2d(h, const(cexp, 1, k, k), strides=[stride] * 2, padding=[k // 2], groups=cexp)
    h = op.multiply(h, op.sigmoid(h))  # swish
    if se:
        s = op.global_avg_pool2d(h)
        s = op.relu(op.add(op.conv2d(s, const(cexp // 4, cexp, 1, 1)), const(cexp // 4, 1, 1)))
        h = op.multiply(h, op.sigmoid(op.conv2d(s, const(cexp, cexp // 4, 1, 1))))
    y = op.add(op.conv2d(h, const(cout, cexp, 1, 1)), const(cout, 1, 1))
    return op.add(y, x) if stride == 1 and cin == cout else y


def network(n=1, hw=32):
    x = graph.Var("x", shape=(n, 3, hw, hw))
    h = op.relu(op.add(op.conv2d(x, const(16, 3, 3, 3), strides=[2, 2], padding=[1]), const(16, 1, 1)))
    h = mobile_block(h, 16, 48, 24, 3, 1, False)
    h = mobile_block(h, 24, 72, 24, 5, 1, True)   # 72 channels: blocks of 8
    h = mobile_block(h, 24, 96, 40, 3, 2, True)
    # a Fire module: two branches joined along the channels, then a pool
    s = op.relu(op.conv2d(h, const(16, 40, 1, 1)))
    h = op.concat(op.relu(op.conv2d(s, const(32, 16, 1, 1))), op.relu(op.conv2d(s, const(32, 16, 3, 3), padding=[1])),
                  axis=1)
    h = op.max_pool2d(h, pool_size=[3], strides=[2], padding=[1])
    h = op.avg_pool2d(op.concat(h, op.relu(h), axis=1), pool_size=[2], strides=[1])
    h = op.reshape(op.global_avg_pool2d(h), shape=[n, 128])
    return loom.IRModule({"main": graph.Function([x], op.add(op.dense(h, const(10, 128)), const(10)))})


def test_channel_blocks_and_channels_last_compute_what_channels_first_does():
    x, mod = f32(2, 3, 32, 32), network(2)
    want = loom.build(mod, config(None))["main"](x).numpy()
    for layout in ["NHWC", "NCHWc", "auto"]:
        got = loom.build(mod, config(layout))["main"](x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(), err_msg=layout)


@pytest.mark.parametrize("mcpu,lanes", [("skylake-avx512", 16), ("haswell", 8)])
def test_channel_blocks_follow_the_vector_width_and_the_channels(tmp_path, mcpu, lanes):
    # Compiled for a named CPU (never run), so the vector width is known.
    loom.ir.save(network(), tmp_path / "m.loom")
    (tmp_path / "c.yaml").write_text(f"target:\n  kind: llvm\n  mcpu: {mcpu}\npipeline:\n  config:\n"
                                     "    ConvertLayout.layout: NCHWc\n")
    done = subprocess.run([str(LOOMC), "build", tmp_path / "m.loom", "--config", tmp_path / "c.yaml", "-o",
                           tmp_path / "out.loom", "--emit", "ir", "--dump-ir", tmp_path / "ir"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = next((tmp_path / "ir").glob("*ConvertLayout_after.loom")).read_text()
    layouts = set(re.findall(r'data_layout="NCHW(\d+)c"', text))
    # The stem reads its 3 channels as one block; the others take blocks
    # of the lanes, the last padded (72 channels: 5 blocks of 16, or 9 of 8).
    assert layouts == {"3", str(lanes)}, layouts
    kernels = set(re.findall(r'kernel_layout="(OIHW\d+i\d+o)"', text))
    assert kernels == {f"OIHW1i{lanes}o", f"OIHW3i{lanes}o", f"OIHW{lanes}i{lanes}o"}, kernels
    # A depthwise convolution's groups count its padded channels.
    assert f"groups={-(-72 // lanes) * lanes}" in text, text
    # Weights are re-laid out once, here: no transposes of constants left.
    assert not re.search(r"(transpose|reshape)\(meta", text), text


def test_a_batch_of_several_and_two_threads():
    x, mod = f32(3, 3, 32, 32), network(3)
    want = loom.build(mod, config(None))["main"](x).numpy()
    got = loom.build(mod, config("NCHWc", threads=2))["main"](x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_an_unknown_layout_is_refused_by_name():
    with pytest.raises(loom.LoomError, match=re.escape("config option 'ConvertLayout.layout' must be one of auto, NHWC, NCHWc, got 'NCHW8c'; did you mean 'NCHWc'?")):
        loom.build(network(), config("NCHW8c"))


def test_padding_channels_never_hold_what_would_not_be_finite():
    # 40 channels are padded to whole blocks; the padding of `h` holds
    # zero, so 1 / h there would be infinite and the zero weights of the
    # next convolution would not cancel it (0 * inf): that division runs
    # channels-first, the rest in blocks, and the result is finite.
    x = graph.Var("x", shape=(1, 8, 12, 12))
    h = op.conv2d(x, const(40, 8, 1, 1))
    h = op.conv2d(h, const(40, 1, 3, 3), padding=[1], groups=40)
    g = op.divide(graph.Constant(np.array(1.0, np.float32)), h)
    y = op.conv2d(op.add(g, const(40, 1, 1)), const(16, 40, 1, 1))
    mod = loom.IRModule({"main": graph.Function([x], y)})
    xv = f32(1, 8, 12, 12)
    want = loom.build(mod, config(None))["main"](xv).numpy()
    got = loom.build(mod, config("NCHWc"))["main"](xv).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def reductions_network():
    """Reductions over axes the way models write them: a squeeze-and-
    excitation block's squeeze as a mean (timm), a sum over H and W of a
    value whose padding channels hold 0.5, a spatial-attention map as the
    mean over the channels, and a global max without keepdims feeding a
    classifier. 20 channels: padded in blocks of 8 or 16."""
    x = graph.Var("x", shape=(2, 8, 14, 14))
    h = op.sigmoid(op.conv2d(x, const(20, 8, 1, 1)))
    h = op.conv2d(h, const(20, 1, 3, 3), padding=[1], groups=20)
    s = op.mean(h, axis=[2, 3], keepdims=True)
    h = op.multiply(h, op.sigmoid(op.conv2d(s, const(20, 20, 1, 1))))
    t = op.sum(op.sigmoid(h), axis=[-1, -2], keepdims=True)
    h = op.multiply(h, op.divide(t, graph.Constant(np.array(196.0, np.float32))))
    h = op.multiply(h, op.sigmoid(op.mean(h, axis=[1], keepdims=True)))
    m = op.max(op.relu(op.conv2d(h, const(20, 20, 1, 1))), axis=[2, 3])
    return loom.IRModule({"main": graph.Function([x], op.add(op.dense(m, const(10, 20)), const(10)))})


def test_reductions_over_axes_stay_in_the_converted_layout():
    mod, x = reductions_network(), f32(2, 8, 14, 14)
    want = loom.build(mod, config(None))["main"](x).numpy()
    for layout in ["NHWC", "NCHWc"]:
        converted = []

        class Capture:
            def after(self, info, module):
                if info.name == "ConvertLayout":
                    converted.append(str(module))

        with loom.transform.PassContext(instruments=[Capture()]):
            got = loom.build(mod, config(layout))["main"](x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(), err_msg=layout)
        text = converted[0]
        # Every spatial reduction reads the converted value; only the
        # input's conversion transposes, and with blocks the mean over the
        # channels, which reads the value channels-first.
        assert len(re.findall(r"\b(?:mean|sum|max)\(%\w+_n(?:hw|chw)c(?:_\d+)?\b", text)) == (4 if layout == "NHWC" else 3), text
        assert text.count("transpose(") == (1 if layout == "NHWC" else 3), text
