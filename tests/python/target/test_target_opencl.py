"""Target opencl (docs/target-opencl.md) on PoCL: prim functions scheduled
by DefaultDeviceSchedule, split by SplitHostDevice into host code (built
by the llvm or the c target, target.host) and OpenCL C kernels, run on
device arrays against NumPy; export to one library run in a fresh
process; the errors.  The llvm plugin and PoCL (which carries its own
LLVM) share this process: plugins load with RTLD_LOCAL."""
import numpy as np
import pytest

import loom
from conftest import run_fresh

KERNELS = """
@ew = prim_func(%A: Buffer[(%n: int64, 3), float32], %B: Buffer[(%n, 3), float32], %C: Buffer[(%n, 3), float32]) {
  for %i: int64 from 0 extent %n {
    for %j: int64 from 0 extent 3 {
      %C[%i, %j] = call(float32, "exp", %A[%i, %j]) + max(%B[%i, %j], 0.0);
    }
  }
}

@rowsum = prim_func(%A: Buffer[(%m: int64, 37), float64], %Out: Buffer[(%m), float64]) {
  for %i: int64 from 0 extent %m {
    %Out[%i] = float64(0.0);
    for %k: int64 from 0 extent 37 {
      %Out[%i] = %Out[%i] + %A[%i, %k] * %A[%i, %k];
    }
  }
}

@total = prim_func(%A: Buffer[(%p: int64), int32], %Out: Buffer[(1), int32]) {
  %Out[0] = int32(0);
  for %k: int64 from 0 extent %p {
    %Out[0] = %Out[0] + %A[%k] // int32(3);
  }
}

@two_steps = prim_func(%X: Buffer[(%q: int64, 10), float32], %Y: Buffer[(%q, 10), float32]) {
  alloc %T: Buffer[(%q, 10), float32] {
    for %i: int64 from 0 extent %q {
      for %j: int64 from 0 extent 10 {
        %T[%i, %j] = %X[%i, %j] * 2.0;
      }
    }
    for %i2: int64 from 0 extent %q {
      alloc %S: Buffer[(1), float32, scope="local"] {
        %S[0] = 0.0;
        for %k: int64 from 0 extent 10 {
          %S[0] = %S[0] + %T[%i2, %k];
        }
        for %j2: int64 from 0 extent 10 {
          %Y[%i2, %j2] = %T[%i2, %j2] - %S[0] / 10.0;
        }
      }
    }
  }
}
"""


def config(host, **attrs):
    return {"target": dict({"kind": "opencl", "host": {"kind": host}}, **attrs)}


def on_device(a):
    return loom.nd.array(a, device="opencl")


def run_all(lib, rng, n):
    a, b = rng.uniform(-2, 2, (n, 3)).astype(np.float32), rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    c = on_device(np.zeros((n, 3), np.float32))
    lib["ew"](on_device(a), on_device(b), c)
    np.testing.assert_allclose(c.copyto("cpu").numpy(), np.exp(a) + np.maximum(b, 0), rtol=1e-6, atol=1e-6)

    x = rng.uniform(-1, 1, (n, 37))
    out = on_device(np.zeros(n))
    lib["rowsum"](on_device(x), out)
    np.testing.assert_allclose(out.copyto("cpu").numpy(), (x * x).sum(axis=1), rtol=1e-12)

    ints = rng.integers(-50, 50, n).astype(np.int32)
    total = on_device(np.zeros(1, np.int32))
    lib["total"](on_device(ints), total)
    assert total.copyto("cpu").numpy()[0] == (ints // 3).sum()

    v = rng.uniform(-1, 1, (n, 10)).astype(np.float32)
    y = on_device(np.zeros((n, 10), np.float32))
    lib["two_steps"](on_device(v), y)
    np.testing.assert_allclose(y.copyto("cpu").numpy(), 2 * v - (2 * v).sum(axis=1, keepdims=True) / 10, rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("host", ["llvm", "c"])
def test_kernels_match_numpy(host, rng):
    lib = loom.build(loom.parse(KERNELS), config(host))
    # The tree: host code (the host target's module) importing the kernels.
    assert lib.kind == host
    assert [m.kind for m in lib.imports] == ["opencl"]
    for n in (1, 7, 300):  # fewer threads than a block, a remainder, several blocks
        run_all(lib, rng, n)


def test_block_size_follows_the_target(rng):
    lib = loom.build(loom.parse(KERNELS), config("llvm", **{"max-work-group-size": 16}))
    run_all(lib, rng, 45)


def test_kernels_are_opencl_c_in_the_device_module():
    lib = loom.build(loom.parse(KERNELS), config("llvm"))
    source = lib.imports[0].inspect_source("opencl")
    assert "__kernel void ew_kernel0(__global float* restrict" in source
    assert "get_group_id(0)" in source and "get_local_id(0)" in source
    assert sorted(lib.imports[0].function_names()) == ["ew_kernel0", "rowsum_kernel0", "total_kernel0",
                                                       "total_kernel1", "two_steps_kernel0", "two_steps_kernel1"]
    with pytest.raises(loom.LoomError, match="no source format 'c'"):
        lib.imports[0].inspect_source("c")


def test_exported_library_runs_in_a_fresh_process(tmp_path, rng):
    lib = loom.build(loom.parse(KERNELS), config("llvm"))
    path = tmp_path / "kernels.so"
    lib.export_library(str(path))
    a = rng.uniform(-2, 2, (50, 3)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    script = (
        "import sys, numpy as np, loom\n"
        "lib = loom.runtime.load_module(sys.argv[1])\n"
        "assert [m.kind for m in lib.imports] == ['opencl'], lib.imports\n"
        "a = np.load(sys.argv[2] + '/a.npy')\n"
        "c = loom.nd.array(np.zeros_like(a), device='opencl')\n"
        "lib['ew'](loom.nd.array(a, device='opencl'), loom.nd.array(a, device='opencl'), c)\n"
        "np.save(sys.argv[2] + '/c.npy', c.copyto('cpu').numpy())\n")
    run_fresh(script, path, tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), np.exp(a) + np.maximum(a, 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("host", ["llvm", "c"])
def test_an_input_on_the_wrong_device_is_named(host):
    lib = loom.build(loom.parse(KERNELS), config(host))
    a = np.ones((4, 3), np.float32)
    with pytest.raises(loom.LoomError, match=r"ew: argument 0 \(buffer 'A'\) is not on the opencl device"):
        lib["ew"](a, on_device(a), on_device(a))


def test_a_device_target_needs_a_host_target():
    with pytest.raises(loom.LoomError, match=r"target kind 'opencl' runs kernels on a device and needs a host target .*"
                                             r"set target.host"):
        loom.build(loom.parse(KERNELS), {"target": {"kind": "opencl"}})


def test_device_arrays_copy_and_refuse_numpy(rng):
    a = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    d = on_device(a)
    assert str(d.device) == "opencl:0"
    with pytest.raises(loom.LoomError, match=r"the array is on opencl:0; copy it to the host first"):
        d.numpy()
    np.testing.assert_array_equal(d.copyto("opencl").copyto("cpu").numpy(), a)
