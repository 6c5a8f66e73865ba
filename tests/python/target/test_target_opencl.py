"""Target opencl (docs/target-opencl.md) on PoCL: prim functions scheduled
by DefaultDeviceSchedule, split by SplitHostDevice into host code (built
by the llvm or the c target, target.host) and OpenCL C kernels, run on
device arrays against NumPy; export to one library run in a fresh
process; the errors.  The llvm plugin and PoCL (which carries its own
LLVM) share this process: plugins load with RTLD_LOCAL."""
import functools

import numpy as np
import pytest

import loom
from conftest import run_fresh
from device_kernels import KERNELS, check_kernels, device_config, run_all


config = functools.partial(device_config, "opencl")


def on_device(a):
    return loom.nd.array(a, device="opencl")


@pytest.mark.parametrize("host", ["llvm", "c"])
def test_kernels_match_numpy(host, rng):
    check_kernels("opencl", host, rng)


def test_block_size_follows_the_target(rng):
    lib = loom.build(loom.parse(KERNELS), config("llvm", **{"max-work-group-size": 16}))
    run_all(lib, rng, 45, "opencl")


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
