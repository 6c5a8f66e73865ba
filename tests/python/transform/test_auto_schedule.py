"""AutoSchedule (docs/passes.md, "AutoSchedule") on what real models have.
Weights packed at compile time (docs/target-llvm.md, "Parameter layouts"):
a constant right operand of a tiled dense or matmul takes the panel layout
and the callers pass the constant re-laid out, so no kernel packs it per
call.  A batch of one, a residual added after a dense, a pointwise
convolution over a small map.  Each test checks the schedule it must pick
in the scheduled text and the built module's numbers against NumPy."""
import platform
import re

import numpy as np
import pytest

import loom
from loom import graph, op, transform

from conftest import ROOT, llvm_module

rng = np.random.default_rng(21)
CONFIG = loom.Config.parse((ROOT / "configs" / "host.yaml").read_text(), "host.yaml")
UP_TO_SCHEDULE = ["InferType", "FuseOps", "LegalizeOps", "FuseTIR", "DeadCodeElimination", "AutoSchedule"]


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def scheduled(mod):
    with transform.PassContext(opt_level=2):
        return transform.Sequential(UP_TO_SCHEDULE)(mod).script(show_meta=True)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("m,k,n", [(8, 64, 40), (30, 100, 72), (128, 256, 96)])
def test_a_constant_dense_weight_is_packed_once_at_compile_time(m, k, n):
    x, w, b = f32(m, k), f32(n, k), f32(n)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(op.add(op.dense(xv, graph.Constant(w)), graph.Constant(b))))})
    text = scheduled(mod)
    # The weight parameter takes panels (n // F, k, F) and nothing copies it.
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 0 % \1"\}', text)
    assert layout, text
    panel = int(layout.group(1))
    assert f"Buffer[({-(-n // panel)}, {k}, {panel}), float32]" in text, text
    assert "_local" not in text, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    want = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_weight_used_by_two_calls_is_re_laid_out_once():
    x, w = f32(16, 32), f32(48, 32)
    xv = graph.Var("x", shape=x.shape)
    wc = graph.Constant(w)
    mod = loom.IRModule({"main": graph.Function([xv], op.add(op.dense(op.relu(xv), wc), op.dense(op.tanh(xv), wc)))})
    text = scheduled(mod)
    # Two kernels (one with the add fused) take the same panels; the
    # module holds one constant, the packed weight, passed to both.
    assert len(re.findall(r'param_layouts: \{"1": "0 // (\d+), 1, 0 % \1"\}', text)) == 2, text
    assert text.count('"type":"runtime.NDArray"') == 1, text
    assert len(re.findall(r"call_dps<[^>]*>\(@\w+, \(%\w+, meta\[0\]", text)) == 2, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    want = np.maximum(x, 0) @ w.T + np.tanh(x) @ w.T
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_kernel_also_called_with_a_variable_weight_packs_it_per_call():
    x, w = f32(16, 32), f32(48, 32)
    xv, wv = graph.Var("x", shape=x.shape), graph.Var("w", shape=w.shape)
    # Both calls go to one kernel, @dense: its weight stays a parameter.
    mod = loom.IRModule({"main": graph.Function([xv, wv], graph.Tuple([op.dense(xv, graph.Constant(w)),
                                                                       op.dense(xv, wv)]))})
    text = scheduled(mod)
    assert text.count("call_dps<Tensor[(16, 48), float32]>(@dense,") == 2, text
    assert "param_layouts" not in text and "_local" in text, text
    got = loom.build(mod, CONFIG)["main"](x, w)
    for g in got:
        np.testing.assert_allclose(g.numpy(), x @ w.T, rtol=1e-4, atol=1e-4)


def test_a_constant_matmul_operand_takes_panels_even_with_few_rows():
    x, w = f32(4, 96), f32(96, 64)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.matmul(xv, graph.Constant(w)))})
    text = scheduled(mod)
    assert re.search(r'param_layouts: \{"1": "1 // \d+, 0, 1 % \d+"\}', text), text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)


def test_a_dense_over_a_batch_of_one_with_a_residual_is_register_tiled():
    # [seq, batch 1, features] as a Transformer's exported attention
    # projection, plus a residual: rows come from the sequence axis (the
    # batch loop of extent 1 gives none) and the residual does not count.
    x, w, b, r = f32(32, 1, 64), f32(48, 64), f32(48), f32(32, 1, 48)
    xv, rv = graph.Var("x", shape=x.shape), graph.Var("r", shape=r.shape)
    body = op.add(op.add(op.dense(xv, graph.Constant(w)), graph.Constant(b)), rv)
    mod = loom.IRModule({"main": graph.Function([xv, rv], body)})
    text = scheduled(mod)
    assert "param_layouts" in text and "unrolled" in text and "_rf" not in text, text
    close(loom.build(mod, CONFIG)["main"](x, r).numpy(), x @ w.T + b + r)


def int4_dense(xv, k, n):
    """An int4 dense of `xv` (..., k) to n columns with random weights, and
    those weights as NumPy dequantizes them (float64, (n, k))."""
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    scales = rng.uniform(0.5, 2, (n, k // 32)).astype(np.float32)
    q = np.concatenate([packed.reshape(n, -1, 16) & 15, packed.reshape(n, -1, 16) >> 4], axis=2).astype(np.int64)
    w = ((q - 8) * scales[:, :, None].astype(np.float64)).reshape(n, k)
    return op.dense_int4(xv, graph.Constant(packed), graph.Constant(scales)), w


def test_a_single_row_int4_dense_takes_four_vectors_of_columns():
    # One row, so no rows to tile: a step of an int4 dense reads 32 inputs,
    # each multiplied by a converted weight, and four vectors of columns
    # (not the two of a plain one) share those loads.  Scheduled for AVX2
    # (8 lanes) whatever this machine has.
    k, n = 768, 128
    xv = graph.Var("x", shape=(1, k))
    y, w = int4_dense(xv, k, n)
    mod = loom.IRModule({"main": graph.Function([xv], y)})
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    assert '"1": "0 // 32, 1, 0 % 32"' in text, text
    assert re.search(r"extent 4 unrolled \{\s*for %\w+: int64 from 0 extent 8 vectorized", text), text
    # and the tile computes the dense (weights as dequantized in NumPy)
    x = f32(1, k)
    close(loom.build(mod, CONFIG)["main"](x).numpy(), x.astype(np.float64) @ w.T)
    # A float dense of one row keeps partial sums (no panels of columns).
    dense = loom.IRModule({"main": graph.Function([xv], op.dense(xv, graph.Constant(f32(n, k))))})
    text = scheduled(loom.ir.with_attr(dense, "target", loom.target.Target("llvm", mcpu="haswell")))
    assert "param_layouts" not in text, text


def loops_converting_bytes(asm):
    """The bodies of the assembly's loops (a label to a jump back to it)
    that convert integers to floats: an int4 dense's steps."""
    lines = asm.split("\n")
    labels = {line[:-1]: i for i, line in enumerate(lines) if re.match(r"^\.LBB\d+_\d+:$", line)}
    loops = []
    for i, line in enumerate(lines):
        m = re.match(r"\s+j\w+\s+(\.LBB\d+_\d+)$", line)
        if m and labels.get(m.group(1), i) < i:
            body = lines[labels[m.group(1)]:i]
            if any("vcvtdq2ps" in b for b in body):
                loops.append(body)
    return loops


@pytest.mark.skipif(platform.machine() != "x86_64", reason="compiles for an x86 CPU: this machine is not x86_64")
@pytest.mark.parametrize("rows", ["one", "symbolic"])
def test_an_int4_dense_keeps_its_tile_in_registers_on_avx2(rows):
    # AVX2 has 16 vector registers.  A step sums its 32 products in one
    # chain per vector of columns, so the one-row tile (four vectors) and
    # a prefill's block of rows (4 x 2) keep their accumulators in
    # registers: with four chains per vector (16 and 32 accumulators)
    # LLVM spilled and reloaded about one vector per multiply-add's
    # (96 stack accesses to 128 multiply-adds in the one-row loop), with
    # two still 99 to 248 in the block's; with one, 2 and 18-24.
    # Compiled for Haswell, not run, whatever this machine is.
    from loom import tir
    k, n = 256, 64
    xv = graph.Var("x", shape=(1 if rows == "one" else tir.Var("n"), k))
    mod = loom.IRModule({"main": graph.Function([xv], int4_dense(xv, k, n)[0])})
    lib = loom.build(mod, {"target": {"kind": "llvm", "mcpu": "haswell", "num-threads": 1}})
    loops = loops_converting_bytes(llvm_module(lib).inspect_source("asm"))
    assert loops
    for body in loops:
        stack = sum("(%rsp)" in line for line in body)
        fmas = sum(bool(re.match(r"\s+vfmadd", line)) for line in body)
        assert fmas >= 32 and stack * 8 <= fmas, "\n".join(body)


def test_the_tail_rows_of_a_light_dense_read_four_panels_at_once():
    # The rows past the last block of 32 (a decode step's one token) read
    # the packed weight along the reduction; a float dense reads four
    # panels per step (four streams from memory), an int4 one, whose step
    # is heavy, one.  Scheduled for AVX2 whatever this machine has.
    from loom import tir
    n, k = 512, 64
    xv = graph.Var("x", shape=(tir.Var("n"), k))
    w = f32(n, k)
    four = r"for %r0_t: int64 from 0 extent 64 \{\s*for %\w+: int64 from 0 extent 4 unrolled"
    for name, y in [("float", op.dense(xv, graph.Constant(w))), ("int4", int4_dense(xv, k, n)[0])]:
        mod = loom.IRModule({"main": graph.Function([xv], y)})
        text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
        assert "%n % 32" in text, text
        assert bool(re.search(four, text)) == (name == "float"), text
    f = loom.build(loom.IRModule({"main": graph.Function([xv], op.dense(xv, graph.Constant(w)))}), CONFIG)["main"]
    for rows in (1, 3, 35):
        x = f32(rows, k)
        close(f(x).numpy(), x.astype(np.float64) @ w.T.astype(np.float64))


def test_a_heavy_step_over_a_symbolic_row_count_packs_panels_its_tail_reads_four_vectors_at_a_time():
    # An int4 dense over %n tokens: the block's tile is 4 rows x 2 vectors,
    # its panels 4 vectors wide (two column tiles each, split around the
    # panel so that the block reads it at an affine index), and the tail
    # rows (a decode step's one token) read a whole panel per step.
    # Scheduled for AVX2 (8 lanes) whatever this machine has.
    from loom import tir
    k, n = 256, 128
    xv = graph.Var("x", shape=(tir.Var("n"), k))
    y, w = int4_dense(xv, k, n)
    mod = loom.IRModule({"main": graph.Function([xv], y)})
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    assert '"1": "0 // 32, 1, 0 % 32"' in text, text
    # the tail: four vectors of 8 per step
    assert re.search(r"%r0_1_t: int64 from 0 extent 8 \{\s*for %\w+: int64 from 0 extent 4 unrolled \{\s*"
                     r"for %\w+: int64 from 0 extent 8 vectorized", text), text
    # the block's index within a panel is affine (no // or % of the column)
    within = [m.split(", ")[-1] for m in re.findall(r"%W\[([^\]]*)\]", text) if "_t" not in m]
    assert within and not any(" // " in m or " % " in m for m in within), within
    f = loom.build(mod, CONFIG)["main"]
    for rows in (1, 3, 32, 37):
        x = f32(rows, k)
        close(f(x).numpy(), x.astype(np.float64) @ w.T)


def test_the_row_blocks_of_a_symbolic_row_count_run_inside_the_column_tiles():
    # A prefill's dense over %n tokens: its blocks of 32 rows run inside
    # the column tiles, which the threads share, so each weight panel is
    # read once for all the blocks and a single block (32-63 tokens) still
    # runs on every thread.
    from loom import tir
    columns, k = 256, 64  # 16 column tiles: the parallel loop is theirs alone
    xv = graph.Var("x", shape=(tir.Var("n"), k))
    w = f32(columns, k)
    mod = loom.IRModule({"main": graph.Function([xv], op.dense(xv, graph.Constant(w)))})
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    assert re.search(r"for %\w+: int64 from 0 extent \d+ parallel \{\s*for %\w+: int64 from 0 extent %n // 32 \{",
                     text), text
    f = loom.build(mod, CONFIG)["main"]
    for rows in (1, 37, 100):
        x = f32(rows, k)
        close(f(x).numpy(), x.astype(np.float64) @ w.T.astype(np.float64))


def test_a_pointwise_convolution_over_a_small_map_vectorizes_the_whole_map_with_its_epilogue():
    # 1x1 convolution, 7x7 map (MobileNetV2's last layers): the rows and
    # columns are fused into one vector axis of 49 values, and bias and
    # clip run in the tile (the add's broadcast bias no longer reads the
    # batch axis at index 0 while the convolution loops over it).
    x, w, b = f32(1, 32, 7, 7), f32(64, 32, 1, 1), f32(64, 1, 1)
    xv = graph.Var("x", shape=x.shape)
    body = op.clip(op.add(op.conv2d(xv, graph.Constant(w)), graph.Constant(b)), a_min=0.0, a_max=6.0)
    mod = loom.IRModule({"main": graph.Function([xv], body)})
    text = scheduled(mod)
    fused = text[text.index("@fused_conv2d_add_clip"):text.index("@main")]
    assert re.search(r"for %i2_i3\w*: int64 from 0 extent", fused), fused
    assert fused.count("alloc") == 1, fused  # the accumulator only: no epilogue temporaries
    assert re.search(r"%Out\[[^\]]*\] = min\(max\(%t\d+\[", fused), fused
    want = np.clip(np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]) + b, 0, 6)
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


def scheduled_with(mod, config):
    with transform.PassContext(opt_level=2, config=config):
        return transform.Sequential(UP_TO_SCHEDULE)(mod).script(show_meta=True)


@pytest.mark.parametrize("n,parallel", [(1024, False), (8192, False), (1 << 16, True)])
def test_a_nest_is_parallel_only_when_its_work_pays_for_a_region(n, parallel):
    a, b = f32(n), f32(n)
    av, bv = graph.Var("a", shape=a.shape), graph.Var("b", shape=b.shape)
    mod = loom.IRModule({"main": graph.Function([av, bv], op.add(av, bv))})
    text = scheduled(mod)
    assert ("parallel" in text) == parallel, text
    assert "vectorized" in text, text
    # The threshold is the pass's option: 0 makes every nest parallel.
    assert "parallel" in scheduled_with(mod, {"AutoSchedule.parallel_min_work": 0})
    np.testing.assert_array_equal(loom.build(mod, CONFIG)["main"](a, b).numpy(), a + b)


def test_the_work_counts_every_loop_around_a_store():
    # 64 rows of 512: the row loop alone is short, the nest is not.
    x = f32(64, 512)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(xv))})
    assert "parallel" in scheduled(mod)
    assert "parallel" not in scheduled_with(mod, {"AutoSchedule.parallel_min_work": 64 * 512 + 1})


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("shape", [(128, 1024), (1, 128, 256), (3, 37), (2, 1000)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layer_norm"])
def test_row_reductions_run_each_pass_over_the_row_in_vectors(name, shape):
    x = f32(*shape) * 4
    g, b = f32(shape[-1]), f32(shape[-1])
    xv = graph.Var("x", shape=x.shape)
    body = op.layer_norm(xv, graph.Constant(g), graph.Constant(b)) if name == "layer_norm" else getattr(op, name)(xv)
    mod = loom.IRModule({"main": graph.Function([xv], body)})
    text = scheduled(mod)
    # Every loop over a row of 16 or more is in vectors: the max and the
    # sums as per-lane partial results, the other steps vectorized.
    if shape[-1] >= 16:
        assert "_rf" in text, text
        scalar_rows = re.findall(rf"for %a\w*: int64 from 0 extent {shape[-1]} \{{", text)
        assert not scalar_rows, text
    if name != "layer_norm":
        assert ("max_rf" in text) == (shape[-1] >= 16), text
        # exp is computed once per element.
        assert text.count('"exp"') == 1, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    xd = x.astype(np.float64)
    if name == "softmax":
        want = softmax_ref(xd)
    elif name == "log_softmax":
        want = np.log(softmax_ref(xd))
    else:
        mu = xd.mean(-1, keepdims=True)
        want = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    close(got, want)


# (1, 4) and (4, 1): batch axes of 1 (GPT attention's (1, heads, n, d)),
# whose packing copies lose their unit loops; they once went untiled.
@pytest.mark.parametrize("batch", [(), (4,), (1, 4), (4, 1)])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_transposed_matmuls_are_register_tiled_like_the_plain_form(batch, ta, tb):
    m, k, n = 64, 48, 32
    a = f32(*batch, *((k, m) if ta else (m, k)))
    b = f32(*batch, *((n, k) if tb else (k, n)))
    av, bv = graph.Var("a", shape=a.shape), graph.Var("b", shape=b.shape)
    mod = loom.IRModule({"main": graph.Function([av, bv], op.matmul(av, bv, transpose_a=ta, transpose_b=tb))})
    text = scheduled(mod)
    # A register tile (unrolled rows of whole vectors), not a dot product
    # per element (partial sums per lane, "_rf").
    assert "_rf" not in text and "unrolled" in text, text
    if tb:  # B read [..., j, r]: packed into panels per column tile
        assert "B_local" in text, text
    if ta:  # A read [..., r, i]: packed once per call, rows of a tile together
        # (..., i // ti, r, i % ti), a batch axis of 1 wherever it lands.
        packed = re.search(r"alloc %A_local: Buffer\[\(([\d, ]+)\)", text)
        dims = [int(d) for d in packed.group(1).split(", ")] if packed else []
        for d in (*batch, k):
            assert d in dims, text
            dims.remove(d)
        assert int(np.prod(dims)) == m, text
    got = loom.build(mod, CONFIG)["main"](a, b).numpy()
    at = np.swapaxes(a, -1, -2) if ta else a
    bt = np.swapaxes(b, -1, -2) if tb else b
    close(got, at.astype(np.float64) @ bt.astype(np.float64))


@pytest.mark.parametrize("batch", [(), (4,), (1, 4)])
@pytest.mark.parametrize("n", [16, 32, 64])
@pytest.mark.parametrize("tb", [False, True])
def test_a_matmul_no_wider_than_a_panel_is_register_tiled(batch, n, tb):
    # Attention's probabilities times V (head dim 64): the right operand's
    # panel would be the whole row, a copy whose panel axis has one value;
    # AutoSchedule once gave up the tile there and ran 60 times slower.
    m, k = 128, 128
    a = f32(*batch, m, k)
    b = f32(*batch, *((n, k) if tb else (k, n)))
    av, bv = graph.Var("a", shape=a.shape), graph.Var("b", shape=b.shape)
    mod = loom.IRModule({"main": graph.Function([av, bv], op.matmul(av, bv, transpose_b=tb))})
    seen = []

    class AfterSchedule:  # the schedule for this machine's vector width
        def after(self, info, module):
            if info.name == "AutoSchedule":
                seen.append(module.script(show_meta=True))

    with transform.PassContext(instruments=[AfterSchedule()]):
        lib = loom.build(mod, CONFIG)
    text = seen[0]
    assert "_rf" not in text and "unrolled" in text and "vectorized" in text, text
    assert " parallel {" in text, text  # the row tiles when there is one column tile
    got = lib["main"](a, b).numpy()
    close(got, a.astype(np.float64) @ (np.swapaxes(b, -1, -2) if tb else b).astype(np.float64))


def conv_ref(x, w, pad, groups=1):
    # NCHW / OIHW, stride 1, float64.
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, co, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1))
    per = co // groups
    for o in range(co):
        g = o // per
        for a in range(kh):
            for b in range(kw):
                patch = xp[:, g * ci:(g + 1) * ci, a:a + out.shape[2], b:b + out.shape[3]]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, a, b])
    return out


@pytest.mark.parametrize("cin,cout,k,groups", [(16, 32, 3, 1), (24, 48, 1, 1), (32, 32, 3, 32)])
def test_channels_last_convolutions_are_tiled_with_their_weights_packed(cin, cout, k, groups):
    x = f32(1, 14, 14, cin)
    w = f32(cout, k, k, cin // groups)  # OHWI
    xv = graph.Var("x", shape=x.shape)
    conv = op.conv2d(xv, graph.Constant(w), padding=[k // 2] * 4, groups=groups, data_layout="NHWC",
                     kernel_layout="OHWI")
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(conv))})
    text = scheduled(mod)
    # Channels are the vector axis; the constant weight takes panels of
    # them at compile time (output channels last), so no kernel reads it
    # one strided element at a time.
    assert "vectorized" in text and "unrolled" in text, text
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 2, 3, 0 % \1"\}', text)
    assert layout, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    want = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), k // 2, groups).transpose(0, 2, 3, 1)
    close(got, np.maximum(want, 0))


@pytest.mark.parametrize("cin,cout,k,hw,stride,groups,in_place", [
    (32, 32, 3, 15, 1, 32, True),   # depthwise: about 9 multiply-adds per padded element
    (24, 24, 5, 13, 2, 24, True),   # depthwise 5x5, stride 2, odd map: borders on both sides
    (3, 16, 3, 17, 2, 1, True),     # a stem with 3 input channels
    (64, 64, 3, 9, 1, 1, False),    # about 500 per element: the copy stays
])
def test_a_channels_last_padded_input_is_read_in_place_where_the_copy_dominates(cin, cout, k, hw, stride, groups,
                                                                                in_place):
    # AutoSchedule inlines the padded copy of a channels-last input where
    # its readers do little work per element (docs/passes.md, AutoSchedule),
    # and LoopPartition splits the padded reads' checks off the interior.
    x = f32(1, hw, hw, cin)
    w = f32(cout, k, k, cin // groups)  # OHWI
    b = f32(1, 1, cout)
    xv = graph.Var("x", shape=x.shape)
    conv = op.conv2d(xv, graph.Constant(w), strides=[stride, stride], padding=[k // 2] * 4, groups=groups,
                     data_layout="NHWC", kernel_layout="OHWI")
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(op.add(conv, graph.Constant(b))))})
    text = scheduled(mod)
    assert ("alloc %X_pad" not in text) == in_place, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    full = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), k // 2, groups)[:, :, ::stride, ::stride]
    close(got, np.maximum(full.transpose(0, 2, 3, 1) + b, 0))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_max_pooling_reads_its_input_in_place_padded_with_the_least_value(dtype):
    # The padding of a max pooling is -inf (the dtype's least value for
    # integers), not 0: read in place all the same (ResNet-50's 3x3,
    # stride-2 pooling over 112x112x64 wrote a 3.3 MB padded copy first:
    # 0.58 -> 0.20 ms), every border window's maximum right.
    rng = np.random.default_rng(31)
    x = (rng.standard_normal((1, 15, 15, 32)) * 40).astype(dtype)
    x[0, :, 0] = x[0, 0] = np.iinfo(dtype).min if dtype == "int8" else -1e30  # borders where padding must lose
    xv = graph.Var("x", shape=x.shape, dtype=dtype)
    pool = op.max_pool2d(xv, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], layout="NHWC")
    mod = loom.IRModule({"main": graph.Function([xv], pool)})
    text = scheduled(mod)
    assert "alloc %X_pad" not in text, text
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    want = np.max([padded[:, i:i + 15:2, j:j + 15:2] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_array_equal(loom.build(mod, CONFIG)["main"](x).numpy(), want.astype(dtype))


@pytest.mark.parametrize("c,hw,k,stride", [(8, 14, 5, 1), (8, 7, 5, 1), (12, 9, 3, 1), (8, 13, 5, 2), (4, 6, 7, 1)])
def test_a_window_read_in_place_unrolls_its_columns_so_border_tiles_check_only_the_outer_taps(c, hw, k, stride):
    # Depthwise in channel blocks of 4, the padded input read in place:
    # the window's column loop (the innermost loop its checks use) is
    # unrolled, so LoopPartition splits it in the border tiles too
    # (docs/passes.md, AutoSchedule), and its row loop stays a loop.
    x = f32(1, c // 4, hw, hw, 4)
    w = f32(c // 4, 1, k, k, 1, 4)
    xv = graph.Var("x", shape=x.shape)
    conv = op.conv2d(xv, graph.Constant(w), strides=[stride] * 2, padding=[k // 2] * 4, groups=c,
                     data_layout="NCHW4c", kernel_layout="OIHW1i4o")
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(conv))})
    text = scheduled(mod)
    assert "alloc %X_pad" not in text, text
    window = re.findall(rf"for %r\d+: int64 from 0 extent {k}( unrolled)? {{", text)
    assert window == ["", " unrolled"], text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    plain = x.transpose(0, 1, 4, 2, 3).reshape(1, c, hw, hw)
    want = conv_ref(plain, w.transpose(0, 5, 1, 2, 3, 4).reshape(c, 1, k, k), k // 2, c)[:, :, ::stride, ::stride]
    n, cb, h, wd, b = got.shape
    close(got.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, wd), np.maximum(want, 0))


@pytest.mark.parametrize("cin,cout,k,stride", [(8, 24, 1, 1), (12, 16, 3, 1), (12, 16, 3, 2)])
def test_channel_blocked_convolutions_tile_several_blocks(cin, cout, k, stride):
    # NCHW4c (4 lanes: one vector on any x86 width): the tile's columns are
    # output blocks, a vector each, so a step's input broadcast serves
    # several of them (docs/passes.md, AutoSchedule, "Channel blocks").
    x = f32(1, cin, 14, 14)
    w = f32(cout, cin, k, k)
    xb = np.ascontiguousarray(x.reshape(1, cin // 4, 4, 14, 14).transpose(0, 1, 3, 4, 2))
    wb = np.ascontiguousarray(w.reshape(cout // 4, 4, cin // 4, 4, k, k).transpose(0, 2, 4, 5, 3, 1))
    xv = graph.Var("x", shape=xb.shape)
    conv = op.conv2d(xv, graph.Constant(wb), strides=[stride] * 2, padding=[k // 2] * 4, data_layout="NCHW4c",
                     kernel_layout="OIHW4i4o")
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(conv))})
    text = scheduled(mod)
    # The register tile: pixels x blocks (the output's axis i1), unrolled
    # around the vector of 4 lanes.  Without a target the model counts 16
    # registers: a row of 14 pixels takes 2 x 4 tiles of 4 blocks, but is
    # fused with the output's rows into one axis of pixels where that
    # rates a quarter better (196: 4 x 3 tiles of 6 blocks; 7 pixels at
    # stride 2, 49: 5 x 2 of 4).
    loops = re.findall(r"for %(\w+): int64 from 0 extent (\d+) unrolled \{\s*"
                       r"for %(\w+): int64 from 0 extent (\d+) unrolled \{\s*for %\w+: int64 from 0 extent 4 vectorized",
                       text)
    [(rows, ti, blocks, tj)] = [t for t in loops if not t[0].endswith(("_init", "_post"))]
    assert blocks.startswith("i1") and int(tj) > 1 and int(ti) > 1, text
    assert rows.startswith("i2_i3") == (cout == 24 or stride == 2), text
    got = loom.build(mod, CONFIG)["main"](xb).numpy()
    want = conv_ref(x, w, k // 2, 1)[:, :, ::stride, ::stride]
    n, cb, h, wd, b = got.shape
    close(got.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, wd), np.maximum(want, 0))


def test_a_blocked_convolution_with_its_blocks_in_one_tile_still_runs_its_rows_in_parallel():
    # 8 output channels in 2 blocks of 4: one tile holds them all, so
    # the loop over the block tiles has one iteration; the output rows
    # below it take the threads (they ran on one before).
    x = graph.Var("x", shape=(1, 2, 56, 56, 4))
    w = graph.Constant(f32(2, 2, 3, 3, 4, 4))
    conv = op.conv2d(x, w, padding=[1] * 4, data_layout="NCHW4c", kernel_layout="OIHW4i4o")
    text = scheduled(loom.IRModule({"main": graph.Function([x], op.relu(conv))}))
    assert re.search(r"alloc %\w+: Buffer\[\(1, 2, 1, \d+, 4\), float32\]", text), text
    extents = [int(e) for e in re.findall(r"from 0 extent (\d+) parallel", text)]
    assert 56 in extents, text


def pointwise_nhwc(x, w, b, r=None):
    """relu(conv1x1(x, w) + b [+ r]) channels last: the module and the
    float64 reference."""
    xv = graph.Var("x", shape=x.shape)
    y = op.add(op.conv2d(xv, graph.Constant(w), data_layout="NHWC", kernel_layout="OHWI"), graph.Constant(b))
    params = [xv]
    if r is not None:
        rv = graph.Var("r", shape=r.shape)
        y = op.add(y, rv)
        params.append(rv)
    want = np.einsum("nhwc,oc->nhwo", x.astype(np.float64), w[:, 0, 0, :].astype(np.float64)) + b
    return loom.IRModule({"main": graph.Function(params, op.relu(y))}), np.maximum(want + (0 if r is None else r), 0)


def test_rows_without_a_good_divisor_take_a_guarded_last_tile():
    # A 1x1 convolution channels last over a 13x13 map: 13 rows divide
    # only into tiles of 1 row (one chain of multiply-adds per vector), so
    # the tile takes several rows and a guarded last tile (docs/passes.md,
    # AutoSchedule, "Tile shape"): of the 169 pixels, the row fused with
    # the output's rows ("Pixel rows"); the result stays exact.
    x = f32(1, 13, 13, 64)
    mod, want = pointwise_nhwc(x, f32(200, 1, 1, 64), f32(1, 1, 200))
    text = scheduled(mod)
    guard = re.search(r"if %\w+ \* (\d) \+ %\w+ < 169 \{", text)
    assert guard and int(guard.group(1)) > 1, text
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


@pytest.mark.parametrize("h,w,cin,cout,residual,panels_outer", [
    (7, 2, 256, 512, True, True),    # 512 KB of weights over 7 short rows (with any vector width)
    (6, 2, 96, 200, False, True),    # channels that end in a partial panel
    (28, 28, 16, 64, True, False),   # 4 KB of weights over a 28x28 map: the rows stay outside
])
def test_weights_that_outweigh_the_map_are_read_once_per_panel(h, w, cin, cout, residual, panels_outer):
    # Channels last, the tile's rows are pixels of one output row and the
    # column tiles panels of output channels.  Where the weights would be
    # read again for every output row and outweigh the map, the column
    # tiles go outside the rows (docs/passes.md, AutoSchedule, "Loop
    # order"): each panel is read once and serves every row from cache.
    x, r = f32(1, h, w, cin), f32(1, h, w, cout)
    mod, want = pointwise_nhwc(x, f32(cout, 1, 1, cin), f32(1, 1, cout), r if residual else None)
    text = scheduled(mod)
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 2, 3, 0 % \1"\}', text)
    assert layout, text
    panels = -(-cout // int(layout.group(1)))
    outermost = re.search(r"prim_func.*\n(?:\s*alloc.*\n)*\s*for %(\w+): int64 from 0 extent (\d+)", text)
    assert outermost, text
    # The panels' loop (j split by the lanes, then by the tile's vectors),
    # fused with the batch of one where it is outermost.
    assert (outermost.group(1).endswith("_o_o") and int(outermost.group(2)) == panels) == panels_outer, text
    close(loom.build(mod, CONFIG)["main"](*([x, r] if residual else [x])).numpy(), want)


def test_weights_beyond_the_cache_over_an_input_within_it_are_read_once_per_panel():
    # ResNet-50's strided 1x1 convolution from 1024 to 2048 channels over
    # 14x14 (here 7 output rows): 8 MB of weights, 800 KB of input.  By
    # bytes alone the input read again by each of 64 column tiles (50 MB)
    # outweighs the weights read again on each of 7 passes over the rows
    # (48 MB); but the input stays in a core's cache and the weights do
    # not: the column tiles go outside.
    x = f32(1, 14, 14, 1024)
    w, b = f32(2048, 1, 1, 1024), f32(2048)
    xv = graph.Var("x", shape=x.shape)
    y = op.add(op.conv2d(xv, graph.Constant(w), strides=[2, 2], data_layout="NHWC", kernel_layout="OHWI"),
               graph.Constant(b))
    mod = loom.IRModule({"main": graph.Function([xv], y)})
    text = scheduled(mod)
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 2, 3, 0 % \1"\}', text)
    assert layout, text
    outermost = re.search(r"prim_func.*\n(?:\s*alloc.*\n)*\s*for %(\w+): int64 from 0 extent (\d+)", text)
    assert outermost and outermost.group(1).endswith("_o_o"), text
    assert int(outermost.group(2)) == 2048 // int(layout.group(1)), text
    want = np.einsum("nhwc,oc->nhwo", x[:, ::2, ::2].astype(np.float64), w[:, 0, 0, :].astype(np.float64)) + b
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


def test_a_long_row_of_constant_weights_keeps_full_vectors_and_a_guarded_tail():
    # A 1x1 convolution to 102 channels (SqueezeNet's 1000-class classifier,
    # scaled to 4-lane vectors): full vectors with a guarded tail rather
    # than vectors of 2 lanes; the weight's panels are padded with zeros at
    # compile time and LoopPartition leaves the guard to the last vector
    # (docs/passes.md, AutoSchedule, "Tile shape").
    x = f32(1, 5, 5, 64)
    mod, want = pointwise_nhwc(x, f32(102, 1, 1, 64), f32(1, 1, 102))
    text = scheduled(mod)
    layout = re.search(r'param_layouts: \{"1": "0 // (\d+), 1, 2, 3, 0 % \1"\}', text)
    assert layout and int(layout.group(1)) % 4 == 0, text
    assert "extent 4 vectorized" in text and "extent 2 vectorized" not in text, text
    assert re.search(r"if .* < 102 \{", text), text
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


def test_a_row_of_constant_weights_that_only_narrow_vectors_divide_keeps_full_ones():
    # 11 output channels (R(2+1)D's 45, scaled to 4-lane vectors): no
    # vector of at least half the width divides them, so full vectors and a
    # guarded tail rather than no tile (a 45-channel convolution ran at 3
    # GFLOP/s; docs/passes.md, AutoSchedule).
    x = f32(1, 5, 5, 16)
    mod, want = pointwise_nhwc(x, f32(11, 1, 1, 16), f32(1, 1, 11))
    text = scheduled(mod)
    assert "extent 4 vectorized" in text and re.search(r"if .* < 11\b", text), text
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


def conv_stride_ref(x, w, pad, stride):
    full = conv_ref(x, w, pad)
    return full[:, :, ::stride, ::stride]


@pytest.mark.parametrize("cin,cout,k,hw,stride,residual", [
    (32, 64, 3, 7, 1, True),    # ResNet's last stage: a 7-pixel row is 4-lane vectors and a tail
    (16, 32, 3, 14, 1, False),  # 14 pixels: 8 lanes and 6
    (3, 16, 7, 32, 2, False),   # the stem: stride 2, a wide load and a shuffle per vector
])
def test_nchw_convolutions_over_short_or_strided_rows_vectorize_output_channels(cin, cout, k, hw, stride, residual):
    # The channel tile (docs/passes.md, AutoSchedule): the output channels
    # are the vector axis, the constant weight takes panels of them at
    # compile time, the accumulator is laid out with channels last, and
    # the epilogue (bias, residual, relu) stores the NCHW output lane by
    # lane.
    x, w, b = f32(1, cin, hw, hw), f32(cout, cin, k, k), f32(cout, 1, 1)
    out_hw = (hw + 2 * (k // 2) - k) // stride + 1
    r = f32(1, cout, out_hw, out_hw)
    xv, rv = graph.Var("x", shape=x.shape), graph.Var("r", shape=r.shape)
    y = op.add(op.conv2d(xv, graph.Constant(w), strides=[stride] * 2, padding=[k // 2] * 4), graph.Constant(b))
    if residual:
        y = op.add(y, rv)
    params = [xv, rv] if residual else [xv]
    mod = loom.IRModule({"main": graph.Function(params, op.relu(y))})
    # The choice depends on the vector width: scheduled for AVX2 (8 lanes)
    # whatever this machine has; the numbers on this machine's own.
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    fused = text[text.index("@fused_conv2d"):text.index("@main")]
    assert re.search(r'param_layouts: \{"1": "0 // (8|16|24|32), 1, 2, 3, 0 % \1"\}', fused), fused
    # The accumulator channels last, one tile of it (a row of pixels x the
    # tile's channels) allocated per tile.
    assert re.search(r"alloc %t\d*: Buffer\[\(1, 1, \d+, (8|16|24|32)\), float32\]", fused), fused
    assert "unrolled" in fused and "vectorized" in fused, fused
    want = np.maximum(conv_stride_ref(x, w, k // 2, stride) + b + (r if residual else 0), 0)
    got = loom.build(mod, CONFIG)["main"](*([x, r] if residual else [x])).numpy()
    close(got, want)


def test_a_short_reduction_over_a_wide_map_keeps_the_row_tile():
    # A 1x1 convolution with 24 input channels over a 56x56 map (MobileNetV2's
    # expansion): the channel tile's multiply-adds would run faster, but its
    # epilogue stores every element on its own, which a reduction of 24
    # does not pay for (7.5 % of MobileNetV2's time against 5.0 % as a row
    # tile).
    x, w, b = f32(1, 24, 56, 56), f32(144, 24, 1, 1), f32(144, 1, 1)
    xv = graph.Var("x", shape=x.shape)
    y = op.clip(op.add(op.conv2d(xv, graph.Constant(w)), graph.Constant(b)), a_min=0.0, a_max=6.0)
    mod = loom.IRModule({"main": graph.Function([xv], y)})
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    fused = text[text.index("@fused_conv2d"):text.index("@main")]
    assert "param_layouts" not in fused and "Buffer[(1, 56, 56, 144), float32]" not in fused, fused
    # the row (the last index) is the vector axis of the output's stores
    assert re.search(r"%Out\[0, [^\]]*, %i3_o_o \* 8 \+ %i3_i", fused), fused
    want = np.clip(conv_ref(x, w, 0) + b, 0, 6)
    close(loom.build(mod, CONFIG)["main"](x).numpy(), want)


@pytest.mark.parametrize("stride", [1, 2])
def test_a_depthwise_convolution_pads_each_channel_right_before_reading_it(stride):
    # Each iteration of the depthwise convolution's channel loop reads one
    # channel of the padded input: the padding nest moves into that loop
    # (compute_at), cut to the part it reads, instead of a pass over the
    # whole input before the convolution.  A dense convolution reads every
    # channel per iteration: its padding stays a nest of its own.
    x, w = f32(1, 16, 20, 20), f32(16, 1, 3, 3)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.relu(op.conv2d(
        xv, graph.Constant(w), strides=[stride] * 2, padding=[1] * 4, groups=16)))})
    text = scheduled(loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="haswell")))
    fused = text[text.index("@fused_conv2d"):text.index("@main")]
    loops = re.findall(r"for %(\w+): int64 from 0 extent (\d+)", fused)
    assert loops[0][0].startswith("i"), fused  # the convolution's loop is outermost...
    assert re.search(r"%X_pad\[[^\]]*\] = select", fused), fused
    assert fused.index("%X_pad[") > fused.index("for %" + loops[0][0]), fused  # ...and pads inside it
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    for c in range(16):
        want = np.maximum(conv_stride_ref(x[:, c:c + 1], w[c:c + 1], 1, stride), 0)
        close(got[:, c:c + 1], want)
    dense = loom.IRModule({"main": graph.Function([xv], op.conv2d(xv, graph.Constant(f32(16, 16, 3, 3)), padding=[1] * 4))})
    text = scheduled(loom.ir.with_attr(dense, "target", loom.target.Target("llvm", mcpu="haswell")))
    assert re.search(r"for %p\w*: int64 from 0 extent \d+", text.split("alloc %X_pad")[1].split("\n")[1]), text


SEQUENCES = '''
@two = prim_func(%A: Buffer[(64,), float32], %B: Buffer[(64,), float32], %C: Buffer[(64,), float32]) {
  for %i: int64 from 0 extent 64 {
    %B[%i] = %A[%i] + 1.0;
    %C[%i] = %A[%i] * 2.0;
  }
}

@chain = prim_func(%A: Buffer[(64,), float32], %B: Buffer[(65,), float32], %C: Buffer[(64,), float32]) {
  for %i: int64 from 0 extent 64 {
    %B[%i + 1] = %A[%i] + 1.0;
    %C[%i] = %B[%i] * 2.0;
  }
}
'''


def test_a_sequence_of_stores_vectorizes_unless_it_reads_what_it_writes():
    # Several outputs from the values read once (winograd_input's 16): the
    # loop is vectorized with every store in it; a statement reading a
    # buffer another writes (at another index) keeps the loop scalar.
    with transform.PassContext(opt_level=2):
        text = transform.get_pass("AutoSchedule")(loom.parse(SEQUENCES)).script()
    two, chain = text.split("@two")[1], text.split("@two")[0]
    assert "vectorized" in two and two.count("%i_o * 4 + %i_i] =") == 2, text
    assert "vectorized" not in chain, text


def test_winograd_input_is_one_vectorized_nest_over_tiles_and_channels():
    x = f32(1, 14, 14, 32)
    xv = graph.Var("x", shape=x.shape)
    mod = loom.IRModule({"main": graph.Function([xv], op.winograd_input(xv, padding=[1]))})
    text = scheduled(mod)
    body = text[text.index("@winograd_input = "):]
    assert body.count("vectorized") == 1 and body.count("%V[") == 16, text
    got = loom.build(mod, CONFIG)["main"](x).numpy()
    bt = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
    xp = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    want = np.stack([np.einsum("ia,abc,jb->ijc", bt, xp[0, 2 * ty:2 * ty + 4, 2 * tx:2 * tx + 4], bt)
                     for ty in range(7) for tx in range(7)], axis=2)
    close(got, want)
