"""Winograd (docs/passes.md): stride-1 3x3 convolutions channels-last
become winograd_input, a batched matmul with weights transformed at
compile time, and winograd_output; the transforms against NumPy's B^T d B
and A^T m A, the rewrite against a direct convolution in NumPy on random
inputs (odd sizes, asymmetric padding, a bias, a residual add, relu),
a large map in strips of tile rows (the same bits as in one piece), and
the convolutions it must leave alone."""
import re

import numpy as np
import pytest

import loom
from loom import graph, op, transform

rng = np.random.default_rng(2611)

BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv_nchw(x, w, pad):
    """Direct cross-correlation in float64: x N C H W, w K C 3 3, pad (top, left, bottom, right)."""
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])])
    n, c, h, wd = xp.shape
    oh, ow = h - 2, wd - 2
    out = np.zeros((n, w.shape[0], oh, ow))
    for a in range(3):
        for b in range(3):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, a:a + oh, b:b + ow], w[:, :, a, b].astype(np.float64))
    return out


def config(text=""):
    return loom.Config.parse("target:\n  kind: llvm\n  num-threads: 1\npipeline:\n" + (text or "  passes: [default]\n"),
                             "t.yaml")


def rewritten(mod, text=""):
    """The ops of @main after the llvm target's graph passes up to Winograd."""
    with transform.PassContext(opt_level=2, config=text or {}):
        for name in ["InferType", "ConvertLayout", "InferType", "Winograd"]:
            mod = transform.get_pass(name)(mod)
    return mod.script()


def test_the_transforms_are_winogradss_matrices():
    # winograd_input: B^T d B of every 4x4 tile of the padded input at stride 2.
    x = f32(2, 5, 6, 3)
    pad = [1, 0, 1, 2]
    v = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([v], op.winograd_input(v, padding=pad))})
    got = loom.build(mod, config())["main"](x).numpy()
    xp = np.pad(x.astype(np.float64), [(0, 0), (pad[0], pad[2] + 1), (pad[1], pad[3] + 1), (0, 0)])
    th, tw = (5 + 2 - 2 + 1) // 2, (6 + 2 - 2 + 1) // 2
    want = np.zeros((4, 4, 2 * th * tw, 3))
    for n in range(2):
        for ty in range(th):
            for tx in range(tw):
                d = xp[n, 2 * ty:2 * ty + 4, 2 * tx:2 * tx + 4, :]
                want[:, :, (n * th + ty) * tw + tx, :] = np.einsum("ia,abc,jb->ijc", BT, d, BT)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # winograd_output: A^T m A of each tile, clipped to height x width.
    m = f32(4, 4, 12, 3)
    v = graph.Var("m", shape=m.shape)
    mod = loom.IRModule({"main": graph.Function([v], op.winograd_output(v, height=5, width=3))})
    got = loom.build(mod, config())["main"](m).numpy()
    tiles = np.einsum("pa,abtk,qb->tpqk", AT, m.astype(np.float64), AT).reshape(2, 3, 2, 2, 2, 3)
    want = tiles.transpose(0, 1, 3, 2, 4, 5).reshape(2, 6, 4, 3)[:, :5, :3]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_strip_of_tile_rows_is_those_rows_tiles():
    # tile_rows=(begin, end): the tiles of those rows of tiles, every image's, in the full transform's order.
    x = f32(2, 9, 6, 3)
    pad = [1, 0, 1, 2]
    v = graph.Var("x", shape=x.shape)
    whole = loom.build(loom.IRModule({"main": graph.Function([v], op.winograd_input(v, padding=pad))}),
                       config())["main"](x).numpy()
    th, tw = 5, 3  # H' = 9 + 2 - 2, W' = 6 + 2 - 2
    for begin, end in [(0, 2), (1, 4), (4, 5)]:
        mod = loom.IRModule({"main": graph.Function([v], op.winograd_input(v, padding=pad,
                                                                             tile_rows=[begin, end]))})
        got = loom.build(mod, config())["main"](x).numpy()
        want = whole.reshape(4, 4, 2, th, tw, 3)[:, :, :, begin:end].reshape(4, 4, -1, 3)
        np.testing.assert_array_equal(got, want)
    for rows, message in [([0, 6], r"tile_rows \(0, 6\) is not a strip of the 5 rows of tiles"),
                          ([3, 3], r"tile_rows \(3, 3\) is not a strip"), ([1], "takes \\(begin, end\\)")]:
        mod = loom.IRModule({"main": graph.Function([v], op.winograd_input(v, padding=pad, tile_rows=rows))})
        with pytest.raises(loom.LoomError, match=message):
            loom.build(mod, config())


@pytest.mark.parametrize("dtype", ["float32", "uint8"])
def test_a_large_map_runs_in_strips_with_the_same_bits(dtype, tmp_path):
    # More tiles and products than Winograd.strip_bytes: strips of tile
    # rows, each transformed, multiplied and transformed back, joined along
    # the height; every output is computed as without strips (an odd
    # height: the last strip is one output row).
    c, k, h, w = 16, 24, 13, 10
    if dtype == "float32":
        x = f32(2, c, h, w)
        v = graph.Var("x", shape=x.shape)
        mod = loom.IRModule({"main": graph.Function([v], op.relu(op.conv2d(
            v, graph.Constant(f32(k, c, 3, 3, scale=(9 * c) ** -0.5)), padding=[1])))})
    else:  # as QDQToInteger leaves a quantized convolution
        x = rng.integers(0, 256, (2, c, h, w)).astype(np.uint8)
        v = graph.Var("x", shape=x.shape, dtype="uint8")
        shifted = op.subtract(op.cast(v, dtype="int16"), graph.Constant(np.array(7, np.int16)))
        wq = graph.Constant(rng.integers(-128, 128, (k, c, 3, 3)).astype(np.int8))
        mod = loom.IRModule({"main": graph.Function([v], op.conv2d(shifted, wq, padding=[1], out_dtype="int32"))})
    # 7 rows of tiles; one row of tiles: 16 * 2 images * 5 tiles * (c + k) values
    row = 16 * 2 * 5 * (c * (4 if dtype == "float32" else 2) + k * 4)
    script = rewritten(mod, {"Winograd.strip_bytes": 3 * row})
    assert script.count("winograd_input(") == 3 and "tile_rows=[0, 3]" in script and "tile_rows=[6, 7]" in script
    assert "height=1" in script and "concat(" in script
    assert "concat(" not in rewritten(mod, {"Winograd.strip_bytes": 7 * row})
    assert "tile_rows" not in rewritten(mod, {"Winograd.strip_bytes": 0})
    strips = loom.build(mod, config("  passes: [default]\n  config:\n    Winograd.strip_bytes: %d\n" % row))
    whole = loom.build(mod, config("  passes: [default]\n  config:\n    Winograd.strip_bytes: 0\n"))
    code = strips.inspect_source("bytecode")
    assert "concat" in code and "concat" not in whole.inspect_source("bytecode")
    # The 7 strips load one array of transformed weights (the last, shorter
    # strip's matmul may take it in another layout): one pool entry for
    # the loads of each array, so at least 5 loads repeat an entry.
    loads = re.findall(r"<- constant (\d+)", code)
    assert len(loads) - len(set(loads)) >= 5, code
    got = strips["main"](x).numpy()
    np.testing.assert_array_equal(got, whole["main"](x).numpy())
    strips.export_library(str(tmp_path / "strips.so"))
    np.testing.assert_array_equal(loom.runtime.load_module(str(tmp_path / "strips.so"))["main"](x).numpy(), got)
    direct = loom.build(mod, config("  disabled: [Winograd]\n"))["main"](x).numpy()
    scale = np.abs(direct).max()
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("hw,pad", [((9, 7), [1, 1, 1, 1]), ((8, 8), [0, 2, 1, 0]), ((1, 5), [1, 1, 1, 1])])
def test_a_residual_block_computes_the_direct_convolution(hw, pad):
    c, k = 16, 16
    x = f32(2, c, *hw)
    w1, w2 = f32(k, c, 3, 3, scale=(9 * c) ** -0.5), f32(k, k, 3, 3, scale=(9 * k) ** -0.5)
    b1, b2 = f32(k, 1, 1), f32(k, 1, 1)
    v = graph.Var("x", shape=x.shape)
    h = op.relu(op.add(op.conv2d(v, graph.Constant(w1), padding=pad), graph.Constant(b1)))
    y = op.add(op.conv2d(h, graph.Constant(w2), padding=[1]), graph.Constant(b2))
    residual = pad == [1, 1, 1, 1]
    mod = loom.IRModule({"main": graph.Function([v], op.relu(op.add(y, v)) if residual else y)})
    assert rewritten(mod).count("winograd_input(") == 2
    got = loom.build(mod, config())["main"](x).numpy()
    h = np.maximum(conv_nchw(x, w1, pad) + b1, 0)
    want = conv_nchw(h, w2, [1, 1, 1, 1]) + b2
    if residual:
        want = np.maximum(want + x, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    direct = loom.build(mod, config("  disabled: [Winograd]\n"))["main"](x).numpy()
    np.testing.assert_allclose(got, direct, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def conv_module(cin=32, cout=32, k=3, **attrs):
    v = graph.Var("x", shape=(1, cin * attrs.get("groups", 1) if attrs.get("groups") else cin, 12, 12))
    groups = attrs.get("groups", 1)
    w = graph.Constant(f32(cout, v.annotation.shape[1].value // groups, k, k))
    return loom.IRModule({"main": graph.Function([v], op.conv2d(v, w, padding=[k // 2], **attrs))})


@pytest.mark.parametrize("attrs", [dict(strides=[2, 2]), dict(dilation=[2, 2]), dict(groups=2), dict(k=5),
                                   dict(cin=8), dict(cout=8)])
def test_what_it_leaves_direct(attrs):
    assert "winograd" not in rewritten(conv_module(**attrs))


def test_strides_and_dilation_of_one_entry_are_rewritten_too():
    assert "winograd_input(" in rewritten(conv_module(strides=[1], dilation=[1]))


def test_the_channel_threshold_is_an_option_and_blocks_stay_direct():
    mod = conv_module(cin=8, cout=8)
    assert "winograd_input(" in rewritten(mod, {"Winograd.min_channels": 8})
    assert "winograd" not in rewritten(conv_module(), {"ConvertLayout.layout": "NCHWc"})
    with pytest.raises(loom.LoomError, match="min_channels"):
        rewritten(mod, {"Winograd.min_channels": 0})


def test_bad_transform_calls_are_type_errors():
    m = graph.Var("m", shape=(4, 4, 7, 3))
    with pytest.raises(loom.LoomError, match=r"7 tiles are not a whole number of 5x3 images \(6 tiles each\)"):
        loom.build(loom.IRModule({"main": graph.Function([m], op.winograd_output(m, height=5, width=3))}), config())
    x = graph.Var("x", shape=(5, 6, 3))
    with pytest.raises(loom.LoomError, match=r"needs x N H W C, got \(5, 6, 3\)"):
        loom.build(loom.IRModule({"main": graph.Function([x], op.winograd_input(x))}), config())
    u = graph.Var("u", shape=(1, 6, 6, 3), dtype="uint8")
    with pytest.raises(loom.LoomError, match="needs floats or signed integers, got uint8"):
        loom.build(loom.IRModule({"main": graph.Function([u], op.winograd_input(u))}), config())


# Integers: a quantized model's convolution, conv2d(x - z, w) summed in
# int32 with x 8-bit, runs on weights transformed by 2G (4U, whole
# numbers) and shifts the result right by 2 -- the same integers as the
# direct convolution, wherever the ranges let it (x's from what it is
# made of).

def conv_int(x, w, pad):
    """Direct cross-correlation in int64: x N C H W, w K C 3 3."""
    xp = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])])
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
    for a in range(3):
        for b in range(3):
            out += np.einsum("nchw,kc->nkhw", xp[:, :, a:a + oh, b:b + ow], w[:, :, a, b].astype(np.int64))
    return out


def integer_conv(xdtype, zero, w, pad, out_dtype="int32"):
    """conv2d(cast(x, int16) - zero, w): what QDQToInteger makes of a quantized convolution."""
    v = graph.Var("x", shape=(2, w.shape[1], 9, 7), dtype=xdtype)
    shifted = op.subtract(op.cast(v, dtype="int16"), graph.Constant(np.array(zero, np.int16)))
    return loom.IRModule({"main": graph.Function([v], op.conv2d(shifted, graph.Constant(w), padding=pad,
                                                                  out_dtype=out_dtype))})


@pytest.mark.parametrize("xdtype,zero,wdtype,pad", [("uint8", 131, "int8", [1, 1, 1, 1]),
                                                   ("int8", 0, "int8", [0, 2, 1, 0]),
                                                   ("uint8", 0, "uint8", [1, 1, 1, 1])])
def test_an_integer_convolution_is_exact(xdtype, zero, wdtype, pad):
    c, k = 48, 32
    lo, hi = np.iinfo(wdtype).min, np.iinfo(wdtype).max
    w = rng.integers(lo, hi + 1, (k, c, 3, 3)).astype(wdtype)
    w[0] = hi  # the extremes: a filter of the largest weights, one of the least
    w[1] = lo
    mod = integer_conv(xdtype, zero, w, pad)
    script = rewritten(mod)
    assert script.count("winograd_input(") == 1 and "right_shift(" in script
    info = np.iinfo(xdtype)
    x = rng.integers(info.min, info.max + 1, (2, c, 9, 7)).astype(xdtype)
    x[0, :, :4] = info.max
    x[1, :, :4] = info.min
    got = loom.build(mod, config())["main"](x).numpy()
    want = conv_int(x.astype(np.int64) - zero, w, pad)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    direct = loom.build(mod, config("  disabled: [Winograd]\n"))["main"](x).numpy()
    np.testing.assert_array_equal(direct, want)


def test_integer_convolutions_it_leaves_direct():
    w = rng.integers(-128, 128, (32, 32, 3, 3)).astype(np.int8)
    # x of int16 of any value: the input transform's sums would not fit int16
    v = graph.Var("x", shape=(1, 32, 8, 8), dtype="int16")
    free = loom.IRModule({"main": graph.Function([v], op.conv2d(v, graph.Constant(w), padding=[1],
                                                                  out_dtype="int32"))})
    assert "winograd" not in rewritten(free)
    # summed in int16, not int32: the products wrap
    assert "winograd" not in rewritten(integer_conv("uint8", 0, w.astype(np.int16), [1], out_dtype=""))
    # weights whose transform does not fit int16
    big = rng.integers(-20000, 20000, (32, 32, 3, 3)).astype(np.int16)
    assert "winograd" not in rewritten(integer_conv("uint8", 0, big, [1]))
    # a result 4x of which would not fit int32: 16-bit weights over 8-bit inputs, 512 channels
    wide = np.full((16, 512, 3, 3), 1000, np.int16)
    assert "winograd" not in rewritten(integer_conv("uint8", 0, wide, [1]))
    # but one that fits is rewritten
    assert "winograd_input(" in rewritten(integer_conv("uint8", 0, wide[:, :16], [1]))


def test_an_8_bit_input_is_widened_to_int16_for_the_tiles():
    w = rng.integers(-128, 128, (16, 24, 3, 3)).astype(np.int8)
    v = graph.Var("x", shape=(1, 24, 6, 10), dtype="uint8")
    mod = loom.IRModule({"main": graph.Function([v], op.conv2d(v, graph.Constant(w), padding=[1],
                                                               out_dtype="int32"))})
    assert "winograd_input(cast(" in rewritten(mod).replace("\n", " ")
    x = rng.integers(0, 256, (1, 24, 6, 10)).astype(np.uint8)
    np.testing.assert_array_equal(loom.build(mod, config())["main"](x).numpy(), conv_int(x, w, [1, 1, 1, 1]))
