"""One module over three devices (docs/devices.md, "One module, several
devices"): examples/multi_device.loom places its graph functions on llvm,
opencl (PoCL) and vulkan (lavapipe, under the validation layers) with
examples/multi_device.yaml; PlanDevices passes each placement on to the
kernels the function calls and makes every crossing a device_copy; the
build gives one tree vm -> library (llvm) -> opencl, vulkan, exported to
one .so that a fresh process loads.  Prim functions placed directly, a
kernel shared by two placements, a device given as a string, and the
errors of a placement the pipeline cannot honour."""
import json
import re
import subprocess

import numpy as np
import pytest

import loom
from conftest import LOOMC, ROOT, run_fresh

MODEL = ROOT / "examples" / "multi_device.loom"
CONFIG = ROOT / "examples" / "multi_device.yaml"


def model_inputs(seed):
    rng = np.random.default_rng(seed)
    shapes = [(32, 64), (64, 64), (64,), (64, 64), (10, 64)]
    return [(rng.standard_normal(s) * (1.0 if i == 0 else 0.2)).astype(np.float32) for i, s in enumerate(shapes)]


def reference(x, w1, b1, w2, w3):
    x, w1, b1, w2, w3 = (a.astype(np.float64) for a in (x, w1, b1, w2, w3))
    h = np.maximum(x @ w1.T + b1, 0)
    h = h + np.tanh(h @ w2.T)
    z = h @ w3.T
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


pytestmark = pytest.mark.usefixtures("vulkan_quiet")


def emit_ir(tmp_path, text, config):
    (tmp_path / "m.loom").write_text(text)
    (tmp_path / "c.yaml").write_text(config if isinstance(config, str) else json.dumps(config))
    done = subprocess.run([str(LOOMC), "build", str(tmp_path / "m.loom"), "--config", str(tmp_path / "c.yaml"),
                           "--emit", "ir"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def function_text(ir, name):
    """The text of @name in printed IR: from its head to the next function."""
    start = ir.index(f"\n@{name} = ")
    end = ir.find("\n@", start + 1)
    return ir[start:end if end >= 0 else len(ir)]


def kinds_tree(lib):
    return (lib.kind, [(m.kind, sorted(i.kind for i in m.imports)) for m in lib.imports])


@pytest.fixture(scope="module")
def model_lib():
    return loom.build(loom.parse(MODEL.read_text(), "multi_device.loom"), str(CONFIG))


def test_model_on_three_devices_matches_numpy(model_lib):
    assert kinds_tree(model_lib) == ("vm", [("llvm", ["opencl", "vulkan"])])
    library = model_lib.imports[0]
    opencl, vulkan = sorted(library.imports, key=lambda m: m.kind)
    # @mix's kernels went to opencl, @head's to vulkan, @embed's stayed on the CPU.
    assert all(n.startswith("fused_dense_tanh_add_kernel") for n in opencl.function_names())
    assert sorted(vulkan.function_names()) == ["dense_1_kernel0", "softmax_kernel0"]
    assert "fused_dense_add_relu" in library.function_names()
    for seed in (1, 2):
        inputs = model_inputs(seed)
        y = model_lib["main"](*inputs)
        assert str(y.device) == "cpu:0"
        np.testing.assert_allclose(y.numpy(), reference(*inputs), rtol=1e-4, atol=1e-6)


def test_placement_and_copies_are_explicit_in_the_ir(tmp_path):
    ir = emit_ir(tmp_path, MODEL.read_text(), CONFIG.read_text())
    # Graph functions take and give host values: the placed ones copy in and out.
    mix, head, embed = (function_text(ir, n) for n in ("mix", "head", "embed"))
    assert 'device_copy(%h, dst=device("opencl:0"), src=device("cpu:0"))' in mix
    assert 'dst=device("cpu:0"), src=device("opencl:0"))' in mix
    assert 'device_copy(%h, dst=device("vulkan:0"), src=device("cpu:0"))' in head
    assert "device_copy" not in embed
    # The kernels carry their placement (attribute target), the launches
    # their device type; @embed's kernel went through the CPU's loop passes.
    assert re.search(r"@fused_dense_tanh_add = prim_func\(.*attrs \{device_type: 4, .*target: meta", ir)
    assert re.search(r"@softmax = prim_func\(.*attrs \{device_type: 7, target: meta", ir)
    assert "parallel" in function_text(ir, "fused_dense_add_relu")
    assert "thread(" not in function_text(ir, "fused_dense_add_relu")


def test_export_loads_in_a_fresh_process(model_lib, tmp_path):
    path = tmp_path / "md.so"
    model_lib.export_library(str(path))
    inputs = model_inputs(3)
    for k, a in enumerate(inputs):
        np.save(tmp_path / f"in{k}.npy", a)
    np.save(tmp_path / "expected.npy", reference(*inputs))
    run_fresh("""
import sys, numpy as np, loom
lib = loom.runtime.load_module(sys.argv[1])
assert (lib.kind, [m.kind for m in lib.imports]) == ("vm", ["library"])  # llvm's code, loaded as a library
assert sorted(m.kind for m in lib.imports[0].imports) == ["opencl", "vulkan"]
inputs = [np.load(sys.argv[2] + f"/in{k}.npy") for k in range(5)]
y = lib["main"](*inputs).numpy()
np.testing.assert_allclose(y, np.load(sys.argv[2] + "/expected.npy"), rtol=1e-4, atol=1e-6)
assert loom.runtime.get_global_func("vulkan.validation_messages")() == ""
""", path, tmp_path)
    shown = subprocess.run([str(LOOMC), "inspect", str(path)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    tree = [line for line in shown.stdout.splitlines() if re.match(r"\s*(vm|library|opencl|vulkan):", line)]
    assert [re.match(r"(\s*)(\w+)", line).groups() for line in tree] == [
        ("  ", "vm"), ("    ", "library"), ("      ", "vulkan"), ("      ", "opencl")]


KERNELS = """
@scale = prim_func(%A: Buffer[(300), float32], %C: Buffer[(300), float32]) {
  for %i: int64 from 0 extent 300 {
    %C[%i] = %A[%i] * 3.0;
  }
}
@shift = prim_func(%A: Buffer[(300), float32], %C: Buffer[(300), float32]) {
  for %i: int64 from 0 extent 300 {
    %C[%i] = %A[%i] + 1.0;
  }
}
@main = fn(%x: Tensor[(300), float32]) -> Tensor[(300), float32] {
  let %a = call_dps<Tensor[(300), float32]>(@scale, (%x,));
  let %b = call_dps<Tensor[(300), float32]>(@shift, (%a,));
  call_dps<Tensor[(300), float32]>(@scale, (%b,))
}
"""


def test_prim_functions_placed_directly_copy_between_devices(rng, tmp_path):
    # @scale on opencl, @shift on vulkan, called from one graph function:
    # @shift's input goes straight from opencl to vulkan (through the host
    # in the VM, since neither device's API reads the other's memory).
    config = {"target": {"kind": "llvm", "device-placement": {"scale": {"kind": "opencl"}, "shift": {"kind": "vulkan"}}},
              "pipeline": {"passes": ["device"]}}
    ir = emit_ir(tmp_path, KERNELS, config)
    main = function_text(ir, "main")
    assert 'device_copy(%a, dst=device("vulkan:0"), src=device("opencl:0"))' in main
    assert 'device_copy(%b, dst=device("opencl:0"), src=device("vulkan:0"))' in main
    lib = loom.build(loom.parse(KERNELS), config)
    assert kinds_tree(lib) == ("vm", [("llvm", ["opencl", "vulkan"])])
    x = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_allclose(lib["main"](x).numpy(), (x * 3 + 1) * 3, rtol=1e-6)


SHARED = """
@on_device = fn(%x: Tensor[(64, 32), float32]) -> Tensor[(64, 32), float32] {
  exp(%x)
}
@main = fn(%x: Tensor[(64, 32), float32]) -> (Tensor[(64, 32), float32], Tensor[(64, 32), float32]) {
  let %a = @on_device(%x);
  (exp(%x), %a)
}
"""


def test_a_kernel_called_from_two_placements_is_copied(rng, tmp_path):
    config = {"target": {"kind": "llvm", "device-placement": {"on_device": {"kind": "vulkan"}}}}  # default pipeline: vulkan's
    ir = emit_ir(tmp_path, SHARED, config)
    on_device = function_text(ir, "on_device")
    copy = re.search(r"call_dps<[^>]*>\(@(\w+),", on_device).group(1)
    assert copy != "exp" and copy.startswith("exp_vulkan")
    assert re.search(rf"@{copy} = prim_func\(.*attrs \{{device_type: 7", ir)
    lib = loom.build(loom.parse(SHARED), config)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    on_host, on_device = lib["main"](x)
    np.testing.assert_allclose(on_host.numpy(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(on_device.numpy(), np.exp(x), rtol=1e-5)
    assert "exp" in lib.imports[0].function_names()  # the CPU's copy


def test_a_placement_on_the_modules_own_target_copies_nothing(tmp_path):
    config = {"target": {"kind": "llvm", "device-placement": {"on_device": "cpu:0"}}}
    ir = emit_ir(tmp_path, SHARED, config)
    assert "exp_llvm" not in ir and "device_copy" not in ir


def test_a_device_names_one_of_the_modules_targets(rng, tmp_path):
    # cpu:0 is the host's device: @scale is built for the host, the rest for opencl.
    config = {"target": {"kind": "opencl", "host": {"kind": "llvm"}, "device-placement": {"scale": "cpu:0"}}}
    lib = loom.build(loom.parse(KERNELS), config)
    assert "scale" in lib.imports[0].function_names()
    assert lib.imports[0].imports[0].function_names() == ["shift_kernel0"]
    x = rng.standard_normal(300).astype(np.float32)
    np.testing.assert_allclose(lib["main"](x).numpy(), (x * 3 + 1) * 3, rtol=1e-6)


def test_a_placement_the_build_cannot_honour_is_an_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("target:\n  kind: llvm\n  device-placement:\n    mix: opencl:0\n")
    with pytest.raises(loom.LoomError, match=re.escape(
            f"{path}:4:5: device placement puts @mix on opencl:0, where none of the module's targets runs: "
            "give a target instead (for example {kind: opencl})")):
        loom.build(loom.parse(MODEL.read_text()), str(path))
    # A pipeline without PlanDevices would run @head's kernels on the CPU: refused.
    cpu = {"target": {"kind": "llvm", "device-placement": {"head": {"kind": "vulkan"}}},
           "pipeline": {"passes": ["cpu"]}}
    with pytest.raises(loom.LoomError, match="@head is placed on target 'vulkan', but @softmax, which it calls, is built "
                                             "for 'llvm': the pipeline must run PlanDevices"):
        loom.build(loom.parse(MODEL.read_text()), cpu)
    # `default` names the placed device's pipeline, as no `passes:` does.
    default = {**cpu, "pipeline": {"passes": ["default"]}}
    assert kinds_tree(loom.build(loom.parse(MODEL.read_text()), default)) == ("vm", [("llvm", ["vulkan"])])
    # A prim function on a device that the pipeline did not split into
    # kernels: the build splits it (kernels_split), unless told not to.
    unsplit = {"target": {"kind": "llvm", "device-placement": {"shift": {"kind": "opencl"}}},
               "pipeline": {"passes": ["LowerIntrinsics"]}}
    assert kinds_tree(loom.build(loom.parse(KERNELS), unsplit))[1][0][1] == ["opencl"]
    unsplit["pipeline"]["disabled"] = ["device_kernels"]
    with pytest.raises(loom.LoomError, match="needs the property 'kernels_split' .*@shift runs on target 'opencl' but is "
                                             "not split into kernels.*but this context disables it"):
        loom.build(loom.parse(KERNELS), unsplit)
