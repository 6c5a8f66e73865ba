"""AMX tiles (docs/low-precision.md, "AMX"): the runtime's tile kernel
(runtime.amx.*) against NumPy, with its tile instructions emulated on any
CPU and run on AMX where the CPU has it, and the pass AMXMatmul: which
products it sends there, for a CPU with AMX (Sapphire Rapids) and one
without, and that the module it makes computes the products (on a CPU
without AMX the kernel emulates the tiles)."""
import numpy as np
import pytest

import loom
from loom import graph, ir, op, transform
from loom._ffi import call

RNG = np.random.default_rng(29)
HOST_AMX = call("runtime.amx.available")


def bf16_bits(*shape):
    return (RNG.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bf16_array(bits):
    return loom.nd.array(bits.view(np.int16)).view("bfloat16")


def ints(dtype, shape):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    a.flat[:70] = info.max if dtype == np.uint8 else info.min  # the extreme products
    return a


# (M, K, N): whole tiles, every tail (rows, columns, reduction), a batch
SHAPES = [((64, 128), 64), ((37, 70), 45), ((3, 5), 7), ((2, 33, 100), 40)]


@pytest.mark.parametrize("kernel", ["runtime.amx.matmul_emulated", "runtime.amx.matmul"])
@pytest.mark.parametrize("a_shape, n", SHAPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_the_tile_kernel_computes_bfloat16_products_summed_in_float32(kernel, a_shape, n, transposed):
    k = a_shape[-1]
    a, b = bf16_bits(*a_shape), bf16_bits(*((n, k) if transposed else (k, n)))
    got = call(kernel, bf16_array(a), bf16_array(b), transposed).numpy()
    want = bf16_values(a) @ (bf16_values(b).T if transposed else bf16_values(b))
    assert got.dtype == np.float32 and got.shape == want.shape
    # float32 sums of exact products: within float32's rounding of the sum
    assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("kernel", ["runtime.amx.matmul_emulated", "runtime.amx.matmul"])
@pytest.mark.parametrize("da, db", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8),
                                    (np.int8, np.uint8)])
@pytest.mark.parametrize("a_shape, n", SHAPES)
def test_the_tile_kernel_sums_8_bit_products_exactly_in_int32(kernel, da, db, a_shape, n):
    k = a_shape[-1]
    a, b = ints(da, a_shape), ints(db, (k, n))
    got = call(kernel, loom.nd.array(a), loom.nd.array(b), False).numpy()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


def test_weights_packed_once_give_the_same_sums():
    a, b = ints(np.uint8, (3, 40, 130)), ints(np.int8, (50, 130))
    packed = call("runtime.amx.pack", loom.nd.array(b), True)
    # panels of 16 columns, an even count; rows of 4 bytes of k per
    # column, k padded to whole tile steps of 64
    assert packed.numpy().shape == (4, 48, 16, 4)
    got = call("runtime.amx.matmul_packed", loom.nd.array(a), packed, 50).numpy()
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.T.astype(np.int64))


@pytest.mark.parametrize("make, message", [
    (lambda: call("runtime.amx.matmul", loom.nd.array(np.ones((4, 4), np.float32)),
                  loom.nd.array(np.ones((4, 4), np.float32)), False),
     "runtime.amx: b must be bfloat16 or 8-bit integers, got float32"),
    (lambda: call("runtime.amx.matmul", loom.nd.array(np.ones((4, 4), np.uint8)),
                  loom.nd.array(np.ones((2, 4, 4), np.int8)), False), "runtime.amx: b must have rank 2, got 3"),
    (lambda: call("runtime.amx.matmul", bf16_array(bf16_bits(4, 4)), loom.nd.array(np.ones((4, 4), np.int8)), False),
     "runtime.amx.matmul: operands must be bfloat16 and bfloat16, or 8-bit integers, got bfloat16 and int8"),
    (lambda: call("runtime.amx.matmul_packed", loom.nd.array(np.ones((4, 200), np.uint8)),
                  call("runtime.amx.pack", loom.nd.array(np.ones((64, 16), np.int8)), False), 16),
     "runtime.amx.matmul: a's 200 columns against a packed b of shape [2, 16, 16, 4] for 16 columns"),
])
def test_operands_the_kernel_cannot_take_are_refused(make, message):
    with pytest.raises(loom.TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        make()


# ---------------------------------------------------------------- AMXMatmul

def after_amx_matmul(params, body, mcpu, min_products=1):
    """The module after AMXMatmul for `mcpu` (min_products 1: the small
    products here go to the tiles)."""
    mod = ir.with_attr(ir.IRModule({"main": graph.Function(params, body)}), "target",
                       loom.target.Target("llvm", mcpu=mcpu))
    with transform.PassContext(opt_level=2, config={"AMXMatmul.min_products": min_products}):
        return transform.Sequential(["InferType", "FoldConstant", "AMXMatmul"])(mod)


def products():
    """[(name, params, body, inputs, reference)] of the products AMXMatmul takes."""
    a, w = bf16_bits(2, 40, 96), bf16_bits(96, 72)
    x = graph.Var("x", shape=a.shape, dtype="bfloat16")
    bias = RNG.standard_normal(72).astype(np.float32)
    out = [("bfloat16 matmul, constant weights, a bias after it", [x],
            op.add(op.matmul(x, graph.Constant(bf16_array(w)), out_dtype="float32"), graph.Constant(bias)),
            [bf16_array(a)], bf16_values(a) @ bf16_values(w) + bias)]
    ia, ib = ints(np.int8, (50, 64)), ints(np.uint8, (30, 64))
    va, vb = graph.Var("a", shape=ia.shape, dtype="int8"), graph.Var("b", shape=ib.shape, dtype="uint8")
    out.append(("int8 by uint8 dense, both parameters", [va, vb], op.dense(va, vb, out_dtype="int32"), [ia, ib],
                ia.astype(np.int64) @ ib.T.astype(np.int64)))
    u, s = ints(np.uint8, (32, 200)), ints(np.int8, (60, 200))
    vu = graph.Var("u", shape=u.shape, dtype="uint8")
    out.append(("uint8 by int8 matmul, transposed constant weights", [vu],
                op.matmul(vu, graph.Constant(s), transpose_b=True, out_dtype="int32"), [u],
                u.astype(np.int64) @ s.T.astype(np.int64)))
    return out


@pytest.mark.parametrize("case", range(3))
def test_amx_matmul_sends_bfloat16_and_8_bit_products_to_the_tiles_on_a_cpu_with_amx(case):
    name, params, body, inputs, want = products()[case]
    assert {"amx-tile", "amx-bf16", "amx-int8"} <= set(loom.target.cpu_features(
        loom.target.Target("llvm", mcpu="sapphirerapids")))
    mod = after_amx_matmul(params, body, "sapphirerapids")
    text = str(mod)
    packed = "constant" in name
    assert ('name="runtime.amx.matmul_packed"' in text) == packed, text
    assert ('name="runtime.amx.matmul"' in text) != packed, text
    assert "matmul(" not in text and "dense(" not in text, text
    # built for this CPU: the tiles where it has AMX, their emulation elsewhere
    lib = loom.build(ir.with_attr(mod, "target", loom.target.Target("llvm")), {"target": {"kind": "llvm"}})
    got = lib["main"](*inputs).numpy()
    if got.dtype == np.int32:
        np.testing.assert_array_equal(got, want)
    else:
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_amx_matmul_leaves_other_products_and_cpus_alone():
    x = graph.Var("x", shape=(40, 96), dtype="bfloat16")
    y = graph.Var("y", shape=(96, 72), dtype="bfloat16")
    f = graph.Var("f", shape=(40, 96), dtype="float32")
    small = graph.Var("s", shape=(4, 96), dtype="bfloat16")  # 4 rows: mostly padding in a tile
    body = graph.Tuple([op.matmul(x, y, out_dtype="float32"), op.matmul(f, graph.Constant(np.ones((96, 8), "float32"))),
                        op.matmul(small, y, out_dtype="float32")])
    text = str(after_amx_matmul([x, y, f, small], body, "sapphirerapids"))
    assert text.count("call_packed") == 1 and text.count("matmul(") == 2, text
    # a CPU without AMX: nothing
    text = str(after_amx_matmul([x, y, f, small], body, "skylake-avx512"))
    assert "call_packed" not in text, text


def test_the_default_min_products_keeps_small_products_with_the_vector_kernels():
    """A call of the tile kernel costs about 2 us more than the vector kernel
    with its epilogue fused (a dense of int8 by constant weights and a bias,
    one thread on an Intel Xeon: 32 x 64 x 32 at 1.6x the vector kernel's
    time, 64 x 128 x 128 at 1.2x, 64 x 256 x 256 at 0.7-1.0x, 128 x 768 x
    768 at 0.4x): by default only products of 2^22 multiply-adds go there,
    a symbolic row count counting as 64 rows."""
    def rewritten(rows, k, n):
        a = graph.Var("a", shape=(rows, k), dtype="uint8")
        b = graph.Var("b", shape=(n, k), dtype="int8")
        return "call_packed" in str(after_amx_matmul([a, b], op.dense(a, b, out_dtype="int32"), "sapphirerapids",
                                                     min_products=1 << 22))
    assert not rewritten(32, 64, 32) and not rewritten(64, 128, 128)
    assert rewritten(64, 256, 256) and rewritten(128, 768, 768)
    assert rewritten(loom.tir.Var("n"), 256, 256) and not rewritten(loom.tir.Var("n"), 128, 128)


@pytest.mark.skipif(not HOST_AMX, reason="this CPU has no AMX (or the system does not grant it)")
def test_on_this_cpu_with_amx_the_default_pipeline_runs_the_tiles():
    a, w = bf16_bits(256, 128), bf16_bits(128, 256)  # 2^23 multiply-adds
    params = [graph.Var("x", shape=a.shape, dtype="bfloat16")]
    body = op.matmul(params[0], graph.Constant(bf16_array(w)), out_dtype="float32")
    inputs, want = [bf16_array(a)], bf16_values(a) @ bf16_values(w)
    cap = []

    class Capture:
        def after(self, info, mod):
            if info.name == "AMXMatmul":
                cap.append(str(mod))

    with transform.PassContext(instruments=[Capture()]):
        lib = loom.build(ir.IRModule({"main": graph.Function(params, body)}), {"target": {"kind": "llvm"}})
    assert "runtime.amx.matmul_packed" in cap[0]
    assert np.abs(lib["main"](*inputs).numpy() - want).max() <= 1e-5 * np.abs(want).max()
