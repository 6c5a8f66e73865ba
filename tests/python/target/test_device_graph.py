"""Graph models on an OpenCL device (docs/devices.md, sections 1 and 2;
the examples' MLP and CNN also on Vulkan, docs/target-vulkan.md):
PlanDevices places the kernels' tensors on the device and makes every
crossing a device_copy; the VM allocates them from a memory plan per
device, copies host inputs in and outputs out, and uses inputs that are
already on the device as they are.  The examples' MLP and CNN against
NumPy, one exported library (vm -> host library -> opencl) in a fresh
process, and the errors."""
import re
import subprocess

import numpy as np
import pytest

import loom
from conftest import LOOMC, ROOT, run_exported, run_fresh
from test_package import MLP, mlp_inputs, mlp_reference

OPENCL = str(ROOT / "configs" / "opencl.yaml")
VULKAN = str(ROOT / "configs" / "vulkan.yaml")
CNN = (ROOT / "examples" / "cnn.loom").read_text()


@pytest.fixture(scope="module")
def mlp_lib():
    return loom.build(loom.parse(MLP, "mlp.loom"), OPENCL)


def test_mlp_matches_numpy(mlp_lib):
    inputs = mlp_inputs(3)
    y = mlp_lib["main"](*inputs)
    assert str(y.device) == "cpu:0"  # the output is copied out
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)


def test_inputs_on_the_device_are_used_as_they_are(mlp_lib):
    inputs = mlp_inputs(4)
    on_device = [loom.nd.array(a, device="opencl") for a in inputs]
    y = mlp_lib["main"](*on_device)
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)
    # Host and device inputs mixed.
    y = mlp_lib["main"](inputs[0], *on_device[1:])
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)


def conv2d(x, k, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(x, k.shape[2:], axis=(2, 3))  # N, C, H, W, kh, kw
    return np.einsum("nchwij,ocij->nohw", windows, k)


def max_pool(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def test_mlp_matches_numpy_on_vulkan():
    inputs = mlp_inputs(3)
    lib = loom.build(loom.parse(MLP, "mlp.loom"), VULKAN)
    y = lib["main"](*inputs)
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)
    y = lib["main"](*[loom.nd.array(a, device="vulkan") for a in inputs])
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)
    assert loom.runtime.get_global_func("vulkan.validation_messages")() == ""


@pytest.mark.parametrize("config", [OPENCL, VULKAN], ids=["opencl", "vulkan"])
def test_cnn_matches_numpy(rng, config):
    shapes = [(8, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1), (16, 8, 3, 3), (16, 1, 1), (10, 784), (10,)]
    x, k1, c1, k2, c2, w, b = (rng.standard_normal(s).astype(np.float32) * (1 if i == 0 else 0.2)
                               for i, s in enumerate(shapes))
    lib = loom.build(loom.parse(CNN, "cnn.loom"), config)
    y = lib["main"](x, k1, c1, k2, c2, w, b).numpy()
    h = max_pool(np.maximum(conv2d(x.astype(np.float64), k1, 1) + c1, 0))
    h = max_pool(np.maximum(conv2d(h, k2, 1) + c2, 0))
    z = h.reshape(8, -1) @ w.T + b
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-4, atol=1e-6)
    if config == VULKAN:
        assert loom.runtime.get_global_func("vulkan.validation_messages")() == ""


def test_emit_ir_shows_the_copies(tmp_path):
    done = subprocess.run([str(LOOMC), "build", str(ROOT / "examples" / "mlp.loom"), "--config", OPENCL, "--emit", "ir"],
                          capture_output=True, text=True, check=True)
    main = done.stdout[done.stdout.index("@main = fn"):]
    main = main[:main.index("\n}\n")]
    # Each of the seven parameters is copied in once; the result copied out.
    assert main.count('dst=device("opencl:0"), src=device("cpu:0")') == 7, main
    assert main.count('dst=device("cpu:0"), src=device("opencl:0")') == 1, main


def test_exported_library_runs_in_a_fresh_process(mlp_lib, tmp_path):
    path = tmp_path / "mlp.so"
    mlp_lib.export_library(str(path))
    inputs = mlp_inputs(5)
    got = run_exported(path, inputs, tmp_path, [["vm"], ["library"], ["opencl"]])
    np.testing.assert_allclose(got, mlp_reference(*inputs), rtol=1e-4, atol=1e-6)
    # loomc shows the tree, with the memory plan on the device.
    shown = subprocess.run([str(LOOMC), "inspect", str(path)], capture_output=True, text=True, check=True).stdout
    levels = [re.search(rf"^( *){kind}: \d+ function", shown, re.M) for kind in ("vm", "library", "opencl")]
    assert all(levels) and [len(m.group(1)) for m in levels] == [2, 4, 6], shown
    assert re.search(r"^ +on opencl:0: peak \d+ bytes$", shown, re.M), shown


MIXED = """
@main = fn(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  (add(%x, %y), %x)
}
"""


def test_an_input_on_a_device_the_function_does_not_take_it_on_is_named(rng):
    lib = loom.build(loom.parse(MIXED), OPENCL)
    x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    s, same = lib["main"](x, loom.nd.array(y, device="opencl"))  # %y is only copied to the device: taken there
    np.testing.assert_allclose(s.numpy(), x + y, rtol=1e-6)
    np.testing.assert_array_equal(same.numpy(), x)
    # %x is also returned as it is, so it is taken on the host only.
    with pytest.raises(loom.LoomError, match=r"@main: argument 0 \(%x\) is on opencl:0; @main takes it on cpu:0$"):
        lib["main"](loom.nd.array(x, device="opencl"), y)


def test_device_out_of_memory_names_the_storage(tmp_path):
    lib = loom.build(loom.parse("@main = fn(%x: Tensor[(%n: int64, 1), float32], %y: Tensor[(1, %n), float32]) "
                                "{ add(%x, %y) }"), OPENCL)
    n = 1 << 20  # a (n, n) float32 result: 4 TiB
    with pytest.raises(loom.LoomError, match=r"@main: storage \d+ \(4\.0 TiB on opencl:0\): opencl: cannot allocate "
                                             r"4\.0 TiB on opencl:0: out of device memory"):
        lib["main"](np.ones((n, 1), np.float32), np.ones((1, n), np.float32))


def test_no_opencl_platform_names_the_package(mlp_lib, tmp_path):
    path = tmp_path / "mlp.so"
    mlp_lib.export_library(str(path))
    (tmp_path / "vendors").mkdir()
    script = (
        "import os, sys, loom\n"
        "os.environ['OCL_ICD_VENDORS'] = sys.argv[2]\n"
        "try:\n"
        "    loom.runtime.load_module(sys.argv[1])\n"
        "except loom.LoomError as e:\n"
        "    assert 'no OpenCL platform found' in str(e) and 'pocl-opencl-icd' in str(e), str(e)\n"
        "else:\n"
        "    raise SystemExit('loaded without an OpenCL platform')\n")
    run_fresh(script, path, tmp_path / "vendors")
