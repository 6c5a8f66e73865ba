"""Target vulkan (docs/target-vulkan.md) on Mesa's lavapipe with the Khronos
validation layers (conftest sets LOOM_VULKAN_VALIDATION=1; any message
fails the test): the prim functions of device_kernels.py (float32,
float64, int32, a thread-local array), scheduled by DefaultDeviceSchedule
and split by SplitHostDevice, as GLSL compute shaders compiled to SPIR-V
and validated, run on device arrays against NumPy; a hand schedule with
shared tiles; export to one library run in a fresh process; the errors."""
import functools

import numpy as np
import pytest

import loom
from conftest import run_fresh
from device_kernels import KERNELS, check_kernels, device_config, run_all


config = functools.partial(device_config, "vulkan")


def on_device(a):
    return loom.nd.array(a, device="vulkan")


pytestmark = pytest.mark.usefixtures("vulkan_quiet")


@pytest.mark.parametrize("host", ["llvm", "c"])
def test_kernels_match_numpy(host, rng):
    check_kernels("vulkan", host, rng)


def test_block_size_follows_the_target(rng):
    lib = loom.build(loom.parse(KERNELS), config(**{"max-work-group-size": 16}))
    run_all(lib, rng, 45, "vulkan")


def test_kernels_are_glsl_compute_shaders():
    lib = loom.build(loom.parse(KERNELS), config())
    source = lib.imports[0].inspect_source("glsl")
    assert source.count("#version 450") == 6  # one shader per kernel
    assert "layout(std430, set = 0, binding = 0) buffer LoomBuffer0 { float C_data[]; };" in source
    assert "layout(push_constant) uniform LoomScalars {\n  int64_t n;\n};" in source
    assert "gl_WorkGroupID.x" in source and "gl_LocalInvocationID.x" in source
    assert sorted(lib.imports[0].function_names()) == ["ew_kernel0", "rowsum_kernel0", "total_kernel0",
                                                       "total_kernel1", "two_steps_kernel0", "two_steps_kernel1"]
    with pytest.raises(loom.LoomError, match="no source format 'opencl'"):
        lib.imports[0].inspect_source("opencl")


def test_hand_schedule_with_shared_tiles(rng):
    # The schedule of test_device_hand_schedule.py: shared arrays and
    # ThreadSync's barriers as GLSL shared memory and barrier().
    from test_device_hand_schedule import matmul, shared_tiles
    f = shared_tiles(matmul(48, 37, 32))
    lib = loom.build(loom.IRModule({"mm": f}), config())
    a = rng.uniform(-1, 1, (48, 37)).astype(np.float32)
    b = rng.uniform(-1, 1, (37, 32)).astype(np.float32)
    c = on_device(np.zeros((48, 32), np.float32))
    lib["mm"](on_device(a), on_device(b), c)
    np.testing.assert_allclose(c.copyto("cpu").numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    source = lib.imports[0].inspect_source("glsl")
    assert source.count("shared float") == 2 and source.count("barrier();") == 2


def test_exported_library_runs_in_a_fresh_process(tmp_path, rng):
    lib = loom.build(loom.parse(KERNELS), config())
    path = tmp_path / "kernels.so"
    lib.export_library(str(path))
    a = rng.uniform(-2, 2, (50, 3)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    script = (
        "import sys, numpy as np, loom\n"
        "lib = loom.runtime.load_module(sys.argv[1])\n"
        "assert [m.kind for m in lib.imports] == ['vulkan'], lib.imports\n"
        "a = np.load(sys.argv[2] + '/a.npy')\n"
        "c = loom.nd.array(np.zeros_like(a), device='vulkan')\n"
        "lib['ew'](loom.nd.array(a, device='vulkan'), loom.nd.array(a, device='vulkan'), c)\n"
        "np.save(sys.argv[2] + '/c.npy', c.copyto('cpu').numpy())\n"
        "assert loom.runtime.get_global_func('vulkan.validation_messages')() == ''\n")
    run_fresh(script, path, tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), np.exp(a) + np.maximum(a, 0), rtol=1e-6, atol=1e-6)


def test_an_input_on_the_wrong_device_is_named():
    lib = loom.build(loom.parse(KERNELS), config())
    a = np.ones((4, 3), np.float32)
    with pytest.raises(loom.LoomError, match=r"ew: argument 0 \(buffer 'A'\) is not on the vulkan device"):
        lib["ew"](a, on_device(a), on_device(a))


def test_a_dtype_the_target_refuses_names_its_attribute():
    with pytest.raises(loom.LoomError, match=r"rowsum_kernel0.*uses float64, which the target does not allow \(its fp64 "
                                             r"attribute"):
        loom.build(loom.parse(KERNELS), config(fp64="false"))
    with pytest.raises(loom.LoomError, match=r"the target's fp64 is 'maybe'; it is auto, true or false"):
        loom.build(loom.parse(KERNELS), config(fp64="maybe"))


def test_float64_math_glsl_lacks_is_refused():
    src = """
@e = prim_func(%A: Buffer[(8), float64], %B: Buffer[(8), float64]) {
  for %i: int64 from 0 extent 8 {
    %B[%i] = call(float64, "exp", %A[%i]);
  }
}
"""
    with pytest.raises(loom.LoomError, match="exp of float64: GLSL has it for float32 and float16 only"):
        loom.build(loom.parse(src), config())


def test_shader_errors_name_the_kernel_and_the_line_or_instruction():
    # The codegen's compiler, run by hand on a kernel it printed: its GLSL
    # compiles to SPIR-V that validates; broken GLSL names the kernel and
    # the line, and SPIR-V the validator refuses the offending instruction.
    lib = loom.build(loom.parse(KERNELS), config())
    source = lib.imports[0].inspect_source("glsl")
    marker = "// Generated by Loom's GLSL printer (docs/target-vulkan.md): kernel "
    shaders = {part.split("\n", 1)[0]: marker + part for part in source.split(marker)[1:]}
    glsl = shaders["ew_kernel0"]
    compile_glsl = loom.runtime.get_global_func("vulkan.compile_glsl")
    validate = loom.runtime.get_global_func("vulkan.validate_spirv")
    assembly = compile_glsl("ew_kernel0", glsl)
    assert "OpEntryPoint GLCompute" in assembly and " = OpFAdd " in assembly
    assert validate("ew_kernel0", assembly) is None
    lines = glsl.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("void main()")) + 1
    lines.insert(at, "  float broken = no_such_name;")
    with pytest.raises(loom.LoomError, match=rf"kernel 'ew_kernel0' \(an IR function of that name\) does not compile as "
                                             rf"GLSL .*\n.*ew_kernel0.comp:{at + 1}: error: 'no_such_name' : undeclared"):
        compile_glsl("ew_kernel0", "\n".join(lines))
    with pytest.raises(loom.LoomError, match=r"kernel 'ew_kernel0' \(an IR function of that name\): its SPIR-V fails "
                                             r"validation: .*IAdd\n  %\w+ = OpIAdd %float"):
        validate("ew_kernel0", assembly.replace(" = OpFAdd ", " = OpIAdd ", 1))  # an integer add of floats
    with pytest.raises(loom.LoomError, match=r"kernel 'ew_kernel0': line \d+ of its SPIR-V assembly: Invalid Opcode name"):
        validate("ew_kernel0", assembly.replace("OpFAdd", "OpFAddd", 1))


def test_no_vulkan_driver_names_the_package(tmp_path):
    # A loader that finds no driver: the error says what to install.
    script = (
        "import loom, numpy as np\n"
        "try:\n"
        "    loom.nd.array(np.ones(3, np.float32), device='vulkan')\n"
        "except loom.LoomError as e:\n"
        "    assert 'mesa-vulkan-drivers' in str(e), str(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n")
    import os
    old = os.environ.get("VK_ICD_FILENAMES")
    os.environ["VK_ICD_FILENAMES"] = str(tmp_path / "none.json")
    try:
        run_fresh(script)
    finally:
        if old is None:
            del os.environ["VK_ICD_FILENAMES"]
        else:
            os.environ["VK_ICD_FILENAMES"] = old


def test_device_arrays_copy_and_refuse_numpy(rng):
    a = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    d = on_device(a)
    assert str(d.device) == "vulkan:0"
    with pytest.raises(loom.LoomError, match=r"the array is on vulkan:0; copy it to the host first"):
        d.numpy()
    np.testing.assert_array_equal(d.copyto("vulkan").copyto("cpu").numpy(), a)


ADD_ONE = """
@add1 = prim_func(%A: Buffer[(1000), float32], %B: Buffer[(1000), float32]) {
  for %i: int64 from 0 extent 1000 {
    %B[%i] = %A[%i] + 1.0;
  }
}
"""


def test_batches_in_flight_keep_launch_order(rng):
    # 1100 dependent launches: more than the batches in flight hold (3 of
    # 256 dispatches), so full batches are submitted without waiting and
    # reused while later ones are recorded; each launch reads what the
    # one before wrote.
    lib = loom.build(loom.parse(ADD_ONE), config())
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    a, b = on_device(x), on_device(np.zeros(1000, np.float32))
    for _ in range(550):
        lib["add1"](a, b)
        lib["add1"](b, a)
    expected = x.copy()
    for _ in range(1100):
        expected += np.float32(1)  # float32 steps, as the kernel takes them
    np.testing.assert_array_equal(a.copyto("cpu").numpy(), expected)


def test_freed_buffers_are_reused_after_their_last_use(rng):
    # A freed array's buffer is kept for the next array of its size without
    # waiting: its next owner's copy and launches come after the commands
    # that used it, so no result reads another array's data.
    lib = loom.build(loom.parse(ADD_ONE), config())
    expected, outs = [], []
    for k in range(40):
        x = rng.uniform(-1, 1, 1000).astype(np.float32)
        a = on_device(x)
        b = on_device(np.zeros(1000, np.float32))
        lib["add1"](a, b)
        c = on_device(np.zeros(1000, np.float32))
        lib["add1"](b, c)
        del a, b  # back to the cache while the launches may still run
        outs.append(c)
        expected.append(x + np.float32(1) + np.float32(1))
    for c, e in zip(outs, expected):
        np.testing.assert_array_equal(c.copyto("cpu").numpy(), e)
