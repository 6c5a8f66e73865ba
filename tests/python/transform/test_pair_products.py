"""PairProducts (docs/passes.md, docs/low-precision.md): integer reductions
over products of 8- and 16-bit integers take two steps at a time, each pair
one dot2_i16 (x86's pmaddwd), and uint8 by int8 four at a time where the
CPU has vpdpbusd (dot4_u8i8).  The sums are exact in any order, so every
result equals NumPy's int64 sums: odd and even reduction lengths, the
saturation case (255 x +-127, 128 in a pair), int16 operands at their
limits (int32 sums wrap, pmaddwd's pair sums too), a convolution whose channels are odd (the stem's 3) or even, and
the packed panels AutoSchedule lays out for the pairs."""
import platform
import re
from pathlib import Path

import numpy as np
import pytest

import loom
from loom import graph, ir, op, transform

from conftest import llvm_module

ROOT = Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")


def module(params, body):
    return ir.IRModule({"main": graph.Function(params, body)})



def cpu_flags():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.parametrize("k", [1, 2, 3, 7, 64, 129])
@pytest.mark.parametrize("dtypes", [("uint8", "int8"), ("int16", "int8"), ("int8", "int16"), ("int16", "int16")])
def test_integer_matmuls_sum_exactly_at_odd_and_even_lengths(k, dtypes):
    rng = np.random.default_rng(k)
    xd, wd = dtypes
    a = rng.integers(np.iinfo(xd).min, np.iinfo(xd).max, (9, k), endpoint=True).astype(xd)
    b = rng.integers(np.iinfo(wd).min, np.iinfo(wd).max, (k, 24), endpoint=True).astype(wd)
    a[0] = np.iinfo(xd).max  # the saturation case: a pair's 16-bit sum would overflow
    b[:, 0] = np.iinfo(wd).max
    b[:, 1] = np.iinfo(wd).min
    x = graph.Var("x", shape=a.shape, dtype=xd)
    w = graph.Var("w", shape=b.shape, dtype=wd)
    got = loom.build(module([x, w], op.matmul(x, w, out_dtype="int32")), HOST)["main"](a, b).numpy()
    # int32 sums wrap (int16 x int16 over 3 steps may pass 2^31): the
    # int64 sums modulo 2^32, as pmaddwd's pair sums are
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("channels, window, stride", [(3, 7, 2), (8, 3, 1), (5, 1, 1)])
def test_integer_convolutions_with_constant_weights_sum_exactly(channels, window, stride):
    """Constant weights take the paired panels at compile time; the stem's
    3 channels and a 7-tap window pair with a last step of their own."""
    rng = np.random.default_rng(channels)
    a = rng.integers(0, 256, (1, channels, 15, 15)).astype(np.uint8)
    b = rng.integers(-128, 128, (16, channels, window, window)).astype(np.int8)
    a[0, :, :4] = 255
    b[0], b[1] = 127, -128
    x = graph.Var("x", shape=a.shape, dtype="uint8")
    pad = window // 2
    body = op.conv2d(op.subtract(op.cast(x, dtype="int16"), graph.Constant(np.array(3, np.int16))), graph.Constant(b),
                     strides=[stride, stride], padding=[pad, pad], out_dtype="int32")
    got = loom.build(module([x], body), HOST)["main"](a).numpy()
    xs = np.pad(a.astype(np.int64) - 3, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = (xs.shape[2] - window) // stride + 1
    want = np.zeros((1, 16, out, out), np.int64)
    for i in range(window):
        for j in range(window):
            patch = xs[:, :, i:i + stride * out:stride, j:j + stride * out:stride]
            want += np.einsum("nchw,oc->nohw", patch, b[:, :, i, j].astype(np.int64))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("columns", [1, 5, 16, 40])
@pytest.mark.parametrize("dtypes", [("uint8", "int8"), ("int8", "uint8")])
def test_byte_matmuls_in_fours_sum_exactly_at_every_width(columns, dtypes):
    """uint8 by int8 (either side) four steps at a time where the CPU has
    vpdpbusd (dot4_u8i8), pairs elsewhere: a scalar column, a width that
    is not whole vectors, reduction lengths that leave 1, 2 and 3 steps
    after the last group, the saturation case (255 x -128 four times)."""
    rng = np.random.default_rng(columns)
    xd, wd = dtypes
    for k in (4, 13, 30, 67):
        a = rng.integers(np.iinfo(xd).min, np.iinfo(xd).max, (7, k), endpoint=True).astype(xd)
        b = rng.integers(np.iinfo(wd).min, np.iinfo(wd).max, (k, columns), endpoint=True).astype(wd)
        a[0], b[:, 0] = np.iinfo(xd).max, np.iinfo(wd).min
        a[1], b[:, -1] = np.iinfo(xd).min, np.iinfo(wd).max
        x = graph.Var("x", shape=a.shape, dtype=xd)
        w = graph.Var("w", shape=b.shape, dtype=wd)
        got = loom.build(module([x, w], op.matmul(x, w, out_dtype="int32")), HOST)["main"](a, b).numpy()
        np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64), err_msg=f"k={k}")


def matmul_asm(xd, config=None):
    """The assembly of a (64, 256) x (256, 64) matmul of xd by int8 summed in int32, by the llvm
    target's own kernels (without AMXMatmul, which sends it to AMX tiles where the CPU has them)."""
    config = config or {"target": {"kind": "llvm"}, "pipeline": {"disabled": ["AMXMatmul"]}}
    x = graph.Var("x", shape=(64, 256), dtype=xd)
    w = graph.Var("w", shape=(256, 64), dtype="int8")
    return llvm_module(loom.build(module([x, w], op.matmul(x, w, out_dtype="int32")), config)).inspect_source("asm")


@pytest.mark.skipif("avx2" not in cpu_flags(), reason="pmaddwd on 256-bit vectors needs AVX2; this CPU has none")
def test_the_llvm_kernel_multiplies_pairs_with_vpmaddwd():
    asm = matmul_asm("int16")
    # a VNNI CPU fuses the pair and its sum into vpdpwssd
    assert re.search(r"\b(vpmaddwd|vpdpwssd)\b", asm)
    # one instruction per pair of steps: a 256-long sum has no 32-bit multiply left
    assert not re.search(r"\bvpmulld\b", asm)


@pytest.mark.skipif(not {"avx512_vnni", "avx_vnni"} & cpu_flags(),
                    reason="vpdpbusd needs AVX-512 VNNI or AVX-VNNI; this CPU has neither")
def test_on_this_vnni_cpu_bytes_multiply_in_fours_with_vpdpbusd():
    asm = matmul_asm("uint8")
    assert re.search(r"\bvpdpbusd\b", asm)
    assert not re.search(r"\b(vpmulld|vpmaddwd|vpdpwssd)\b", asm)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="compiles for x86 CPUs: this machine is not x86_64")
@pytest.mark.parametrize("mcpu, register", [("icelake-server", "zmm"), ("alderlake", "ymm")])
@pytest.mark.parametrize("xd, instruction", [("uint8", "vpdpbusd"), ("int16", "vpdpwssd")])
def test_for_a_vnni_cpu_each_group_and_its_sum_are_one_instruction(mcpu, register, xd, instruction):
    """Compiled (not run: this CPU may lack it) for AVX-512 VNNI and for
    AVX-VNNI: uint8 by int8 four steps at a time, one vpdpbusd each
    (dot4_u8i8); int16 by int8 in pairs, where LLVM fuses pmaddwd and the
    int32 add into vpdpwssd."""
    asm = matmul_asm(xd, {"target": {"kind": "llvm", "mcpu": mcpu, "num-threads": 1}})
    assert re.search(r"\b" + instruction + r"\s+%" + register, asm), asm[:2000]
    assert not re.search(r"\bvpmaddwd\b", asm)


def test_the_fours_a_vnni_cpu_gets_compute_the_sums_where_dot4_expands():
    """What a VNNI CPU runs, short of the instruction: a uint8 x int8 matmul
    scheduled and grouped in fours for Ice Lake (panels of fours), then
    built for Haswell, which lacks vpdpbusd, so LowerIntrinsics expands
    dot4_u8i8 to its four widened products; against NumPy, the saturation
    case included."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, (6, 40)).astype(np.uint8)
    b = rng.integers(-128, 128, (40, 32)).astype(np.int8)
    a[0], b[:, 0] = 255, -128
    x = graph.Var("x", shape=a.shape, dtype="uint8")
    mod = module([x], op.matmul(x, graph.Constant(b), out_dtype="int32"))
    mod = loom.ir.with_attr(mod, "target", loom.target.Target("llvm", mcpu="icelake-server", num_threads=1))
    with transform.PassContext(opt_level=2):
        mod = transform.Sequential(["InferType", "FuseOps", "LegalizeOps", "FuseTIR", "DeadCodeElimination",
                                    "AutoSchedule", "PairProducts"])(mod)
    assert '"dot4_u8i8"' in mod.script()
    passes = ["LowerIntrinsics", "FlattenBuffer", "Simplify", "LoopPartition", "VectorizeLoop", "UnrollLoop",
              "StorageRewrite", "Simplify"]
    lib = loom.build(mod, {"target": {"kind": "llvm", "mcpu": "haswell"}, "pipeline": {"passes": passes}})
    np.testing.assert_array_equal(lib["main"](a).numpy(), a.astype(np.int64) @ b.astype(np.int64))
