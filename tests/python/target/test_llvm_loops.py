"""Which loops the llvm target lets LLVM unroll on its own
(docs/target-llvm.md, "Loops"): innermost loops and small reduction loops
(a window's taps), not a loop over outputs around other loops.  Measured on
the optimized LLVM IR (inspect_source("ll")) of models built at LLVM's
opt level 3."""
import re

import numpy as np

import loom
from loom import graph, op
from conftest import llvm_module

CONFIG = {"target": {"kind": "llvm", "num-threads": 1}}


def largest_block(ll, function, opcode=None):
    """The most instructions (or instructions of `opcode`) in one basic
    block of the functions whose name contains `function`."""
    largest, count, inside = 0, 0, False
    for line in ll.splitlines():
        if line.startswith("define"):
            inside, count = function in line, 0
        elif re.match(r"^[\w.\-]+:", line) or line.startswith("}"):
            count = 0
        elif inside and line.startswith("  ") and (opcode is None or re.match(rf"\s+%\S+ = {opcode} ", line)):
            count += 1
            largest = max(largest, count)
    return largest


def test_a_concatenation_stays_in_loops_and_agrees_with_numpy():
    # DenseNet's pattern: many inputs concatenated, an activation, a
    # convolution.  LLVM used to unroll each input's copy nest whole and
    # merge them into one block (567 instructions here, thousands in
    # DenseNet-121, whose build took 180 s of scheduling); 186 then.  The
    # concatenation, its relu and the transpose to the convolution's
    # channels-last layout are one kernel now (FuseOps), whose largest
    # block gathers one 8 x 8 tile (64 loads, 427 instructions): one
    # input's, not twelve.
    xs = [graph.Var(f"x{i}", shape=(1, 32, 14, 14)) for i in range(12)]
    w = np.random.default_rng(0).standard_normal((16, 384, 1, 1)).astype("float32")
    y = op.conv2d(op.relu(op.concat(*xs, axis=1)), graph.Constant(w))
    lib = loom.build(loom.IRModule({"main": graph.Function(xs, y)}), CONFIG)
    assert largest_block(llvm_module(lib).inspect_source("ll"), "concat") < 500
    assert largest_block(llvm_module(lib).inspect_source("ll"), "concat", "load") <= 64

    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1, 32, 14, 14)).astype("float32") for _ in xs]
    relu = np.maximum(np.concatenate(inputs, axis=1), 0)
    want = np.einsum("oc,nchw->nohw", w[:, :, 0, 0], relu)
    np.testing.assert_allclose(lib["main"](*inputs).numpy(), want, rtol=1e-4, atol=1e-4)


def test_a_pooling_window_keeps_its_tile_in_registers():
    # The 3x3 window's tap loops (%r0, %r1) are reductions around the
    # vectors of a tile: LLVM may unroll them (it unrolls both with 256-bit
    # vectors; with 512-bit ones the tile of 14 vectors leaves the row
    # loop a loop, its body past LLVM's threshold), and a loop that stays
    # carries the tile's maxima in registers: no store in its block.
    x = graph.Var("x", shape=(1, 64, 56, 56))
    pool = op.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    lib = loom.build(loom.IRModule({"main": graph.Function([x], pool)}), CONFIG)
    ll = llvm_module(lib).inspect_source("ll")
    for block in re.split(r"\n\n", ll):
        if re.search(r"%r\d[\w.]* = phi", block):
            assert "store " not in block and re.search(r"= phi <\d+ x float>", block), block[:2000]
    rng = np.random.default_rng(2)
    data = rng.standard_normal((1, 64, 56, 56)).astype("float32")
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.max([padded[:, :, i:i + 56:2, j:j + 56:2] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(lib["main"](data).numpy(), want)


def test_a_reduction_whose_unrolling_would_hoist_many_weights_stays_a_loop():
    # A 1x1 convolution over channel blocks of 8: the reduction over the
    # 3 input blocks, around the one over their channels, reads 3 x 8 x 3
    # weight vectors that do not change along the pixels; unrolled, LLVM
    # hoisted all 72 out of the pixel loop and spilled them (2.2-3x the
    # time).  The block loop stays a loop; the values agree with NumPy.
    x = graph.Var("x", shape=(1, 24, 28, 28))
    rng = np.random.default_rng(2)
    w = rng.standard_normal((48, 24, 1, 1)).astype("float32")
    y = op.sigmoid(op.conv2d(x, graph.Constant(w)))
    config = dict(CONFIG, pipeline={"config": {"ConvertLayout.layout": "NCHWc"}})
    lib = loom.build(loom.IRModule({"main": graph.Function([x], y)}), config)
    ll = llvm_module(lib).inspect_source("ll")
    assert re.findall(r"%r0[\w.]* = phi", ll), "the reduction over input blocks was unrolled"

    xs = rng.standard_normal((1, 24, 28, 28)).astype("float32")
    want = 1 / (1 + np.exp(-np.einsum("oc,nchw->nohw", w[:, :, 0, 0], xs)))
    np.testing.assert_allclose(lib["main"](xs).numpy(), want, rtol=1e-5, atol=1e-6)
