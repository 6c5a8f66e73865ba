"""bfloat16 (docs/low-precision.md): its arithmetic on the llvm and c
targets bit for bit as the ref interpreter and NumPy's correctly rounded
result;
conv2d, matmul and dense of bfloat16 operands with out_dtype float32
against NumPy on the same rounded values; the pass ToMixedPrecision: what
it converts (the products, weights once at compile time) and what it
keeps in float32, and a model within 1e-2 of its float32 result."""
import platform
import re
from pathlib import Path

import numpy as np
import pytest

import loom
from loom import graph, ir, op, transform

from conftest import llvm_module, optional_import, requires

torch = optional_import("torch")
torchvision = optional_import("torchvision")

ROOT = Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")
C = str(ROOT / "configs" / "c.yaml")
REF = str(ROOT / "configs" / "ref.yaml")


def module(params, body):
    return ir.IRModule({"main": graph.Function(params, body)})


def bf16_bits(a):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_bits_exact(d):
    """float64 -> bfloat16 bits rounded once to nearest even: the nearest of
    the neighbours of float32's rounding (which is within one step)."""
    out = []
    for x in np.asarray(d, np.float64).reshape(-1):
        c = int(bf16_bits(np.float32(x))[0])
        cands = [(c + k) & 0xFFFF for k in (-1, 0, 1)]
        vals = [float(bf16_value(np.uint16(k))[0]) for k in cands]
        dist = [abs(v - x) if not np.isnan(v) else np.inf for v in vals]
        out.append(min(zip(cands, dist), key=lambda kd: (kd[1], kd[0] & 1))[0])
    return np.array(out, np.uint16).reshape(np.shape(d))


def bf16_value(bits):
    return (np.atleast_1d(bits).astype(np.uint32) << 16).view(np.float32)


def as_bf16(bits):
    """A bfloat16 NDArray holding `bits`."""
    return loom.nd.array(bits.view(np.int16)).view("bfloat16")


@pytest.mark.parametrize("config", [HOST, C], ids=["llvm", "c"])
def test_bfloat16_arithmetic_is_correctly_rounded_and_the_same_bits_as_the_ref_interpreter(config):
    rng = np.random.default_rng(2)
    ab, bb = bf16_bits(rng.standard_normal(67) * 3), bf16_bits(rng.standard_normal(67) * 3)
    ab[:3] = bf16_bits(np.array([np.nan, np.inf, -0.0]))
    x = graph.Var("x", shape=ab.shape, dtype="bfloat16")
    y = graph.Var("y", shape=bb.shape, dtype="bfloat16")
    ops = [op.add, op.subtract, op.multiply, op.divide, op.maximum, op.less]
    body = graph.Tuple([f(x, y) for f in ops] + [op.relu(x), op.sum(op.abs(y)), op.exp(y),
                                                 op.cast(op.cast(y, dtype="float64"), dtype="bfloat16"),
                                                 op.cast(op.multiply(op.cast(x, dtype="float64"),
                                                                     op.cast(y, dtype="float64")), dtype="bfloat16"),
                                                 op.cast(x, dtype="int32"), op.cast(op.cast(y, dtype="int32"),
                                                                                    dtype="bfloat16")])
    outs = {}
    for c in (config, REF):
        got = loom.build(module([x, y], body), c)["main"](as_bf16(ab), as_bf16(bb))
        outs[c] = [t.view("int16").numpy().view(np.uint16) if str(t.dtype) == "bfloat16" else t.numpy()
                   for t in got]
    # The reference interpreter's bits, everywhere.
    for k, (got, ref) in enumerate(zip(outs[config], outs[REF])):
        if k == 7:  # a sum: the order of its additions may differ
            continue
        if k in (6, 11):  # relu of -0.0 (either zero), NaN and inf to int32: no one value to agree on
            got, ref = got[3:], ref[3:]
        np.testing.assert_array_equal(got, ref, err_msg=f"output {k}")
    HOST = config
    a, b = bf16_value(ab).astype(np.float64), bf16_value(bb).astype(np.float64)
    with np.errstate(all="ignore"):
        exact = [a + b, a - b, a * b, a / b, np.maximum(a, b)]
    for k, want in enumerate(exact):
        got = outs[HOST][k]
        np.testing.assert_array_equal(got[3:], bf16_bits(want[3:]))  # one rounding of the exact result
        assert np.isnan(bf16_value(got[0]))
    np.testing.assert_array_equal(outs[HOST][5], a < b)
    np.testing.assert_array_equal(outs[HOST][6][3:], bf16_bits(np.maximum(a[3:], 0)))
    assert abs(bf16_value(outs[HOST][7])[0] - np.abs(b).sum()) <= 0.02 * np.abs(b).sum()  # summed in bfloat16
    np.testing.assert_allclose(bf16_value(outs[HOST][8]), np.exp(b), rtol=2 ** -7)
    np.testing.assert_array_equal(outs[HOST][9], bb)  # through float64 and back: the same bits
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(outs[HOST][10][3:], bf16_bits_exact(a[3:] * b[3:]))  # one rounding of a double
    np.testing.assert_array_equal(outs[HOST][11][3:], np.trunc(a[3:]).astype(np.int32))


@pytest.mark.parametrize("config", [HOST, C, REF], ids=["llvm", "c", "ref"])
def test_bfloat16_products_sum_in_float32(config):
    rng = np.random.default_rng(0)
    xb, wb = bf16_bits(rng.standard_normal((2, 4, 7, 7))), bf16_bits(rng.standard_normal((5, 4, 3, 3)))
    ab, bb = bf16_bits(rng.standard_normal((6, 40))), bf16_bits(rng.standard_normal((40, 3)))
    x = graph.Var("x", shape=xb.shape, dtype="bfloat16")
    w = graph.Var("w", shape=wb.shape, dtype="bfloat16")
    a = graph.Var("a", shape=ab.shape, dtype="bfloat16")
    b = graph.Var("b", shape=bb.shape, dtype="bfloat16")
    bt = graph.Var("bt", shape=bb.T.shape, dtype="bfloat16")
    body = graph.Tuple([op.conv2d(x, w, padding=[1, 1], out_dtype="float32"), op.matmul(a, b, out_dtype="float32"),
                        op.dense(a, bt, out_dtype="float32")])
    lib = loom.build(module([x, w, a, b, bt], body), config)
    conv, mm, dn = (t.numpy() for t in lib["main"](as_bf16(xb), as_bf16(wb), as_bf16(ab), as_bf16(bb),
                                                    as_bf16(np.ascontiguousarray(bb.T))))
    xf, wf = bf16_value(xb).astype(np.float64), bf16_value(wb).astype(np.float64)
    want = torch_free_conv(xf, wf)
    assert conv.dtype == np.float32
    np.testing.assert_allclose(conv, want, rtol=1e-5, atol=1e-5)
    want = bf16_value(ab).astype(np.float64) @ bf16_value(bb).astype(np.float64)
    np.testing.assert_allclose(mm, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dn, want, rtol=1e-5, atol=1e-5)


def test_a_bfloat16_ndarray_makes_a_bfloat16_constant():
    """graph.Constant of a bfloat16 NDArray (NumPy has no such dtype) keeps
    its dtype and bits, and copies them: the array may change after."""
    bits = bf16_bits(np.random.default_rng(2).standard_normal((3, 5)))
    source = bits.copy()
    c = graph.Constant(as_bf16(source))  # an NDArray over source's memory
    source[:] = 0
    got = loom.build(module([], op.cast(c, dtype="float32")), HOST)["main"]().numpy()
    np.testing.assert_array_equal(got, bf16_value(bits).reshape(bits.shape))


def torch_free_conv(x, w):
    """Padding 1, stride 1 cross-correlation in float64 (NCHW, OIHW)."""
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return y


def mixed_config(dtype="bfloat16"):
    text = (ROOT / "configs" / "host.yaml").read_text().replace(
        "    - default", "    - ToMixedPrecision\n    - default").replace(
        "  passes:\n", f"  config:\n    ToMixedPrecision.dtype: {dtype}\n  passes:\n")
    return loom.Config.parse(text, "host-mixed.yaml")


class Capture:
    def __init__(self, *names):
        self.names, self.text = names, {}

    def after(self, info, mod):
        if info.name in self.names:
            self.text[info.name] = str(mod)


def small_model(rng):
    """A convolution, a layer norm, a dense layer and a softmax."""
    x = graph.Var("x", shape=(2, 3, 8, 8), dtype="float32")
    c = lambda *s: graph.Constant(rng.standard_normal(s).astype(np.float32) * 0.3)  # noqa: E731
    y = op.relu(op.add(op.conv2d(x, c(8, 3, 3, 3), padding=[1, 1]), c(8, 1, 1)))
    y = op.reshape(y, shape=[2, -1])
    y = op.layer_norm(y, c(512), c(512))
    y = op.softmax(op.add(op.dense(y, c(10, 512)), c(10)))
    return module([x], y)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_to_mixed_precision_converts_the_products_and_keeps_the_rest_in_float32(dtype):
    rng = np.random.default_rng(1)
    mod = small_model(rng)
    cap = Capture("ToMixedPrecision", "FoldConstant")
    with transform.PassContext(instruments=[cap]):
        lib = loom.build(mod, mixed_config(dtype))
    after = cap.text["ToMixedPrecision"]
    assert len(re.findall(r'out_dtype="float32"', after)) == 2, after
    assert after.count(f"dtype={dtype}") == 4  # both operands of both products
    for kept in ("softmax(", "layer_norm(", "relu("):
        assert kept in after
    # the weights are converted once: constants of the narrow dtype, no cast of them left
    folded = cap.text["FoldConstant"]
    assert f'"dtype":"{dtype}"' in folded and folded.count(f"dtype={dtype}") == 2, folded
    a = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    got = lib["main"](a).numpy()
    want = loom.build(mod, HOST)["main"](a).numpy()
    assert got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
    assert not np.array_equal(got, want)  # it did compute in the narrow dtype


@requires("torch", "torchvision", "onnx")
def test_a_resnet_in_mixed_precision_is_within_1e_2_of_float32():
    import io
    from loom.frontend import onnx as lonnx
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    f = io.BytesIO()
    torch.onnx.export(model, x, f, opset_version=13)
    mod = lonnx.from_onnx(f.getvalue())
    got = loom.build(mod, mixed_config())["main"](x.numpy()).numpy()
    with torch.no_grad():
        want = model(x).numpy()
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


# ---- vdpbf16ps (AVX-512 BF16): PairProducts' dot2_bf16 -----------------------------------------------------------

BF16_CPUS = ["cooperlake", "sapphirerapids"]  # AVX-512 BF16; compiled for, not run (this CPU may lack it)
LOOP_PASSES = ["LowerIntrinsics", "FlattenBuffer", "Simplify", "LoopPartition", "VectorizeLoop", "UnrollLoop",
               "StorageRewrite", "Simplify"]



def bf16_products(rng):
    """Each product kind with bfloat16 operands summed in float32 (runtime
    and constant weights), its inputs as bit patterns and its float64
    reference."""
    def bits(*shape):
        return bf16_bits(rng.standard_normal(shape))
    xb, wb, ab, bb, cb, db, eb = bits(1, 16, 9, 9), bits(8, 16, 3, 3), bits(12, 64), bits(64, 24), bits(40, 64), \
        bits(3, 10, 32), bits(3, 32, 16)
    x = graph.Var("x", shape=xb.shape, dtype="bfloat16")
    a = graph.Var("a", shape=ab.shape, dtype="bfloat16")
    b = graph.Var("b", shape=bb.shape, dtype="bfloat16")
    d = graph.Var("d", shape=db.shape, dtype="bfloat16")
    e = graph.Var("e", shape=eb.shape, dtype="bfloat16")
    const = lambda v: graph.Constant(loom.nd.array(v.view(np.int16)).view("bfloat16"))  # noqa: E731
    body = graph.Tuple([
        op.conv2d(x, const(wb), padding=[1, 1], out_dtype="float32"),
        op.matmul(a, b, out_dtype="float32"),
        op.dense(a, const(cb), out_dtype="float32"),
        op.matmul(d, e, out_dtype="float32"),  # a batch of products
    ])
    f = lambda v: bf16_value(v).astype(np.float64).reshape(v.shape)  # noqa: E731
    xp = np.pad(f(xb), ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 9, j:j + 9], f(wb)[:, :, i, j]) for i in range(3) for j in range(3))
    want = [conv, f(ab) @ f(bb), f(ab) @ f(cb).T, f(db) @ f(eb)]
    return module([x, a, b, d, e], body), [as_bf16(v) for v in (xb, ab, bb, db, eb)], want


def VDPBF16PS_CONFIG(mcpu):  # noqa: N802
    """The llvm target's own kernels for `mcpu`, one thread: without
    AMXMatmul, which sends Sapphire Rapids' larger products to its AMX
    tiles (test_amx.py)."""
    return {"target": {"kind": "llvm", "mcpu": mcpu, "num-threads": 1}, "pipeline": {"disabled": ["AMXMatmul"]}}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="compiles for x86 CPUs: this machine is not x86_64")
@pytest.mark.parametrize("mcpu", BF16_CPUS)
def test_for_a_bf16_cpu_every_product_kind_multiplies_pairs_with_vdpbf16ps(mcpu):
    """conv2d, matmul, dense and a batched matmul of bfloat16 summed in float32:
    on a CPU with AVX-512 BF16 each pair of products is one vdpbf16ps
    added to its float32 lane, and no product is widened and multiplied
    one by one (every reduction here is of even length)."""
    assert "dot2_bf16" in loom.target.native_intrinsics(loom.target.Target("llvm", mcpu=mcpu))
    mod, _, _ = bf16_products(np.random.default_rng(3))
    lib = loom.build(mod, VDPBF16PS_CONFIG(mcpu))
    asm = llvm_module(lib).inspect_source("asm")
    functions = re.split(r"\n(?=\s*\.type\s+\S+,@function)", asm)  # one chunk per function
    reducing = [re.search(r"\.type\s+(\S+),@function", f).group(1) for f in functions if "vdpbf16ps" in f]
    assert len(reducing) >= 4, reducing  # the convolution's body, the matmul, the dense, the batched matmul
    # no bfloat16 widened (a shift by 16) and multiplied
    assert not re.search(r"\bvfmadd\w*ps\b|\bvmulps\b|\bvpslld\s+\$16\b", asm), "a product left widened"


@pytest.mark.skipif(platform.machine() != "x86_64", reason="compiles for x86 CPUs: this machine is not x86_64")
@pytest.mark.parametrize("mcpu", BF16_CPUS)
def test_for_a_bf16_cpu_the_sums_stay_in_registers_across_the_reduction(mcpu):
    """vdpbf16ps is inline assembly, which LLVM takes as touching memory
    unless told otherwise: then each sum was stored at every step of the
    reduction (a 1024^3 matmul at 0.74x the float32 time on a Zen 5).  No
    block that runs vdpbf16ps stores a vector."""
    a = graph.Var("a", shape=(64, 256), dtype="bfloat16")
    b = graph.Var("b", shape=(256, 64), dtype="bfloat16")
    lib = loom.build(module([a, b], op.matmul(a, b, out_dtype="float32")),
                     VDPBF16PS_CONFIG(mcpu))
    # a block: from a label to its first jump
    blocks = re.findall(r"^\.LBB\d+_\d+:.*?^\s+j\w+\s", llvm_module(lib).inspect_source("asm"), re.M | re.S)
    reducing = [blk for blk in blocks if "vdpbf16ps" in blk]
    assert reducing
    for blk in reducing:
        assert not re.search(r"\bvmov\w*\s+%[xyz]mm\d+,\s*-?\w*\(", blk), blk


@pytest.mark.skipif(platform.machine() != "x86_64", reason="compiles for x86 CPUs: this machine is not x86_64")
def test_without_avx512_bf16_bfloat16_products_stay_widened():
    """Skylake-AVX512 has AVX-512 but not its BF16 extension: no dot2_bf16,
    the products widened to float32 and summed with FMAs."""
    assert "dot2_bf16" not in loom.target.native_intrinsics(loom.target.Target("llvm", mcpu="skylake-avx512"))
    mod, _, _ = bf16_products(np.random.default_rng(3))
    lib = loom.build(mod, {"target": {"kind": "llvm", "mcpu": "skylake-avx512", "num-threads": 1}})
    asm = llvm_module(lib).inspect_source("asm")
    assert "vdpbf16ps" not in asm and re.search(r"\bvfmadd\w*ps\b", asm)


@pytest.mark.parametrize("mcpu", BF16_CPUS)
def test_the_pairs_a_bf16_cpu_gets_compute_the_float32_sums(mcpu):
    """What that CPU runs, short of the instruction: the module scheduled
    and paired for it (panels of pairs, constant weights re-laid out at
    compile time), then built for this machine, where dot2_bf16 expands
    to its two widened products; against NumPy on the same rounded
    values."""
    mod, args, want = bf16_products(np.random.default_rng(4))
    mod = loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu=mcpu, num_threads=1))
    with transform.PassContext(opt_level=2):
        mod = transform.Sequential(["InferType", "FuseOps", "LegalizeOps", "FuseTIR", "DeadCodeElimination",
                                    "AutoSchedule", "PairProducts"])(mod)
    text = mod.script()
    assert text.count('"dot2_bf16"') >= 4, text
    lib = loom.build(mod, {"target": {"kind": "llvm"}, "pipeline": {"passes": LOOP_PASSES}})
    for got, w in zip(lib["main"](*args), want):
        assert got.numpy().dtype == np.float32
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-5)
