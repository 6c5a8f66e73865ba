"""Target c (docs/target-c.md): prim functions printed as C99 and compiled
with the system C compiler.  The operator suite runs on it through
conftest.CONFIGS; these tests cover what the suite does not reach: the
IR's integer and float semantics (against Python's own arithmetic, on the
llvm target too), control flow, parallel loops, workspaces, let, a scalar
result, the argument checks, export to a library run in a fresh process,
variables named as each dialect's keywords, types and built-ins (c,
opencl, vulkan), and the errors."""
import numpy as np
import pytest

import loom
from conftest import ROOT, run_fresh

C_CONFIG = str(ROOT / "configs" / "c.yaml")
LOWER_ONLY = {"passes": ["LowerIntrinsics"]}

SEMANTICS = """
@ints = prim_func(%A: Buffer[(8), int32], %B: Buffer[(8), int32], %Q: Buffer[(8), int32], %F: Buffer[(8), int32],
                  %M: Buffer[(8), int32], %W: Buffer[(8), int8]) {
  for %i: int64 from 0 extent 8 {
    %Q[%i] = %A[%i] / %B[%i];
    %F[%i] = %A[%i] // %B[%i];
    %M[%i] = %A[%i] % %B[%i];
    %W[%i] = cast(int8, %A[%i]) * int8(3) + int8(100);
  }
}

@floats = prim_func(%X: Buffer[(8), float32], %Y: Buffer[(8), float32], %Lo: Buffer[(8), float32],
                    %Hi: Buffer[(8), float32], %Z: Buffer[(8), bool]) {
  for %i: int64 from 0 extent 8 {
    %Lo[%i] = min(%X[%i], %Y[%i]);
    %Hi[%i] = max(%X[%i], %Y[%i]);
    %Z[%i] = %X[%i] != %Y[%i];
  }
}

@control = prim_func(%X: Buffer[(%n), float32], %Y: Buffer[(%n), float32], %n: int64) -> float32 {
  alloc %T: Buffer[(%n), float32] {
    for %i: int64 from 0 extent %n parallel {
      %T[%i] = (let %x: float32 = %X[%i] * 2.0 in select(%x > 0.0, %x, 0.0 - %x));
    }
    alloc %S: Buffer[(1), float32, scope="local"] {
      %S[0] = 0.0;
      for %i: int64 from 0 extent %n {
        if %i % 2 == 0 {
          %S[0] = %S[0] + %T[%i];
          %Y[%i] = 0.0;
        } else {
          let %e: int64 = %i // 2 {
            %Y[%i] = %T[%i] + cast(float32, %e);
          }
        }
      }
      eval call(float32, "ret", %S[0]);
    }
  }
}
"""


def c_module(lib):
    """The module of kind c in a built module's tree."""
    if lib.type_key == "c.Module":
        return lib
    return next(c_module(child) for child in lib.imports)


def wrap(value, bits):
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def trunc_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, 32)


def floor_div(a, b):
    return 0 if b == 0 else wrap(a // b, 32)


def floor_mod(a, b):
    return 0 if b == 0 else a % b


@pytest.fixture(scope="module")
def semantics():
    return loom.parse(SEMANTICS)


@pytest.mark.parametrize("kind", ["c", "llvm"])
def test_integer_and_float_semantics(semantics, kind):
    """Division by zero gives 0 and MIN / -1 wraps (never a trap: the llvm
    target used to die of SIGFPE there); floor division and modulo round
    towards minus infinity; int8 arithmetic wraps; min/max propagate NaN
    as NumPy's minimum/maximum; != is true for NaN."""
    lib = loom.build(semantics, {"target": {"kind": kind}, "pipeline": LOWER_ONLY})
    a = np.array([7, -7, 7, -7, 0, 5, -2**31, -2**31], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, -1, 0], np.int32)
    outs = [loom.nd.array(np.zeros(8, np.int32)) for _ in range(3)] + [loom.nd.array(np.zeros(8, np.int8))]
    lib["ints"](loom.nd.array(a), loom.nd.array(b), *outs)
    q, f, m, w = (o.numpy().tolist() for o in outs)
    pairs = list(zip(a.tolist(), b.tolist()))
    assert q == [trunc_div(x, y) for x, y in pairs]
    assert f == [floor_div(x, y) for x, y in pairs]
    assert m == [floor_mod(x, y) for x, y in pairs]
    assert w == [wrap(wrap(x, 8) * 3 + 100, 8) for x in a.tolist()]

    x = np.array([1, np.nan, 3, -np.inf, 0, 2, np.nan, -1], np.float32)
    y = np.array([np.nan, 1, 2, 5, -0.0, np.inf, np.nan, -1], np.float32)
    lo, hi, ne = (loom.nd.array(np.zeros(8, t)) for t in (np.float32, np.float32, np.bool_))
    lib["floats"](loom.nd.array(x), loom.nd.array(y), lo, hi, ne)
    np.testing.assert_array_equal(lo.numpy(), np.minimum(x, y))
    np.testing.assert_array_equal(hi.numpy(), np.maximum(x, y))
    np.testing.assert_array_equal(ne.numpy(), x != y)


def test_control_flow_parallel_loop_workspace_let_and_result(semantics, rng):
    lib = loom.build(semantics, {"target": {"kind": "c", "num-threads": 2}, "pipeline": LOWER_ONLY})
    source = c_module(lib).inspect_source("c")
    assert "__loom_host_api->parallel_for(" in source  # the parallel loop is a closure run by the pool
    assert "alloc_workspace(" in source  # %T has a symbolic size
    assert "float S_data[1]" in source  # %S is small and constant: on the stack
    for n in (1, 11, 1000):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y = loom.nd.array(np.full(n, 7, np.float32))
        got = lib["control"](loom.nd.array(x), y, n)
        t = np.abs(2 * x)
        assert got == pytest.approx(float(t[0::2].astype(np.float64).sum()), rel=1e-5)
        want = np.zeros(n, np.float32)
        want[1::2] = t[1::2] + (np.arange(1, n, 2) // 2)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)


MODEL = """
@main = fn(%a: Tensor[(%n: int64, 6), float32], %b: Tensor[(6, 5), float32]) {
  softmax(add(matmul(%a, %b), expand_dims(sum(%b, axis=[0]), axis=0)))
}
"""


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_exported_library_runs_in_a_fresh_process(tmp_path, rng):
    lib = loom.build(loom.parse(MODEL), C_CONFIG)
    a, b = rng.uniform(-1, 1, (3, 6)).astype(np.float32), rng.uniform(-1, 1, (6, 5)).astype(np.float32)
    want = softmax(a.astype(np.float64) @ b + b.sum(axis=0))
    np.testing.assert_allclose(lib["main"](a, b).numpy(), want, rtol=1e-5, atol=1e-6)
    path = tmp_path / "model.so"
    lib.export_library(str(path))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    script = (
        "import sys, numpy as np, loom\n"
        "lib = loom.runtime.load_module(sys.argv[1])\n"
        "d = sys.argv[2]\n"
        "np.save(d + '/y.npy', lib['main'](np.load(d + '/a.npy'), np.load(d + '/b.npy')).numpy())\n")
    run_fresh(script, path, tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-5, atol=1e-6)


def test_arguments_are_checked(semantics):
    lib = loom.build(semantics, {"target": {"kind": "c"}, "pipeline": LOWER_ONLY})
    x = loom.nd.array(np.zeros(8, np.float32))
    with pytest.raises(loom.RuntimeError, match=r"buffer 'X' has dimension 0 = 7, but the buffer says 8"):
        lib["floats"](loom.nd.array(np.zeros(7, np.float32)), x, x, x, loom.nd.array(np.zeros(8, np.bool_)))
    with pytest.raises(loom.RuntimeError, match=r"argument 4 \(buffer 'Z'\) must have dtype bool"):
        lib["floats"](x, x, x, x, x)
    with pytest.raises(loom.RuntimeError, match=r"control: takes 2 tensors \(or 3 values\), got 1"):
        lib["control"](x)
    with pytest.raises(loom.RuntimeError, match=r"argument 2 \(%n\) must be an integer"):
        lib["control"](x, x, 2.5)


# Variables named as what C, OpenCL C or GLSL reserve or call: a keyword
# (in), a prefix (gl_), built-in functions the printers call (exp, expf,
# max, get_group_id), types (vec4, float4, int64_t).  Each printer renames
# them (docs/target-c.md, "Names").
RESERVED_NAMES = """
@names = prim_func(%sample: Buffer[(%n: int64), float32], %output: Buffer[(%n), float32], %in: float32) {
  for %i: int64 from 0 extent %n {
    let %gl_v: float32 = %sample[%i] * %in {
      let %max: float32 = %gl_v - 0.5 {
        let %exp: float32 = call(float32, "exp", %max) {
          let %vec4: float32 = max(%exp, %max) {
            let %float4: float32 = min(%vec4, 2.0) {
              let %int64_t: float32 = %float4 + 1.0 {
                let %get_group_id: float32 = %int64_t * 2.0 {
                  let %expf: float32 = call(float32, "exp", %get_group_id) {
                    %output[%i] = %expf;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
"""


@pytest.mark.usefixtures("vulkan_quiet")
@pytest.mark.parametrize("kind", ["c", "opencl", "vulkan"])
def test_reserved_names_are_renamed_in_every_dialect(kind, rng):
    target = {"kind": kind} if kind == "c" else {"kind": kind, "host": {"kind": "llvm"}}
    lib = loom.build(loom.parse(RESERVED_NAMES), {"target": target})
    x = rng.uniform(-1, 1, 300).astype(np.float32)
    device = "cpu" if kind == "c" else kind
    out = loom.nd.array(np.zeros(300, np.float32), device=device)
    lib["names"](loom.nd.array(x, device=device), out, 1.5)
    m = x * 1.5 - 0.5
    expected = np.exp((np.minimum(np.maximum(np.exp(m), m), 2.0) + 1.0) * 2.0)
    np.testing.assert_allclose(out.copyto("cpu").numpy(), expected, rtol=1e-5)


def test_source_formats():
    lib = loom.build(loom.parse(MODEL), C_CONFIG)
    source = c_module(lib).inspect_source("c")
    assert "int32_t __loom_fn_" in source and "#include <math.h>" in source
    with pytest.raises(loom.LoomError, match=r"c module: no source format 'll' \(it has: c\)"):
        c_module(lib).inspect_source("ll")


def test_compiler_errors_and_bad_flags():
    module = loom.parse(MODEL)
    with pytest.raises(loom.LoomError, match=r"(?s)target c: .*failed \(exit \d+\) compiling c_kernels.c:.*-fno-such-flag"):
        loom.build(module, {"target": {"kind": "c", "cflags": "-O2 -fno-such-flag"}})
    with pytest.raises(loom.LoomError, match=r"cflags may not contain '-o'"):
        loom.build(module, {"target": {"kind": "c", "cflags": "-o /tmp/x"}})


def test_what_c_cannot_express_is_refused_by_name():
    vectorized = loom.parse("""
@vec = prim_func(%X: Buffer[(16), float32], %Y: Buffer[(16), float32]) {
  for %i: int64 from 0 extent 16 vectorized { %Y[%i] = %X[%i] * 2.0; }
}
""")
    with pytest.raises(loom.LoomError, match=r"c: @vec: a vector of 16 lanes \(float32x16\)"):
        loom.build(vectorized, {"target": {"kind": "c"}, "pipeline": {"passes": ["VectorizeLoop"]}})
    half = loom.parse("""
@half = prim_func(%X: Buffer[(4), float16], %Y: Buffer[(4), float16]) {
  for %i: int64 from 0 extent 4 { %Y[%i] = %X[%i]; }
}
""")
    with pytest.raises(loom.LoomError, match=r"c: @half: C has no type for float16"):
        loom.build(half, {"target": {"kind": "c"}, "pipeline": LOWER_ONLY})
    threads = loom.parse("""
@gpu = prim_func(%X: Buffer[(4), float32]) {
  for %t: int64 from 0 extent 4 thread("threadIdx.x") { %X[%t] = 0.0; }
}
""")
    with pytest.raises(loom.LoomError, match=r"c: @gpu: a loop is bound to the GPU thread axis 'threadIdx.x'"):
        loom.build(threads, {"target": {"kind": "c"}, "pipeline": LOWER_ONLY})
