"""The Python package (docs/python.md): import, plugins by name, IR nodes
through reflection, build and run on NumPy arrays, DLPack, errors.  Runs
with PYTHONPATH=python (ctest sets it)."""
import os
import pathlib
import statistics
import subprocess
import sys

import numpy as np
import pytest

import loom  # noqa: E402 (PYTHONPATH=python; a failed import fails the suite)

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = (ROOT / "examples" / "mlp.loom").read_text()
HOST = str(ROOT / "configs" / "host.yaml")


def mlp_inputs(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(64, 784), (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    return [(rng.standard_normal(s) * (1.0 if i == 0 else 0.05)).astype(np.float32) for i, s in enumerate(shapes)]


def mlp_reference(x, w1, b1, w2, b2, w3, b3):
    x, w1, b1, w2, b2, w3, b3 = (a.astype(np.float64) for a in (x, w1, b1, w2, b2, w3, b3))
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    z = h @ w3.T + b3
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def mlp_lib():
    return loom.build(loom.parse(MLP, "mlp.loom"), HOST)


def test_import_is_fast_and_loads_no_plugin():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    code = ("import time; t = time.perf_counter(); import loom; dt = time.perf_counter() - t; "
            "print(dt, sum(p.state == 'loaded' for p in loom.plugins.available()))")
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.split()
            for _ in range(5)]
    assert statistics.median(float(r[0]) for r in runs) < 0.3
    assert all(r[1] == "0" for r in runs)


def test_subpackages_load_on_first_use(tmp_path):
    # `import loom` alone, then an importer by attribute: loaded then, not before.
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    code = ("import sys, loom; lazy = [m for m in ('loom.frontend', 'loom.torch', 'loom.tune', 'loom.script', "
            "'onnx', 'torch') if m in sys.modules]; f = loom.frontend.onnx.from_onnx; "
            "print(lazy, 'loom.frontend.onnx' in sys.modules, callable(f), 'frontend' in dir(loom))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "True", "True", "True"], out
    with pytest.raises(AttributeError, match="module 'loom' has no attribute 'frontnd'"):
        loom.frontnd
    with pytest.raises(AttributeError, match="module 'loom.frontend' has no attribute 'onxx'"):
        loom.frontend.onxx


def test_plugins_by_name(tmp_path):
    names = {p.name: p for p in loom.plugins.available()}
    assert {"llvm", "ops", "passes", "hello"} <= set(names)
    llvm = loom.plugins.info("llvm")
    assert llvm.path.endswith(".so") and any(c.startswith("target:llvm") for c in llvm.provides), llvm
    hello = loom.plugins.load("hello")
    assert hello.state == "loaded" and hello.functions
    assert loom.runtime.get_global_func(hello.functions[0]).name == hello.functions[0]
    with pytest.raises(loom.LookupError, match="no plugin 'nope'"):
        loom.plugins.info("nope")
    bad = tmp_path / "libbroken.so"
    bad.write_bytes(b"not an ELF file")
    with pytest.raises(loom.PluginError, match=str(bad)):
        loom.plugins.load_path(bad)
    # The failure leaves the host working.
    assert loom.plugins.info("hello").state == "loaded"


def test_ir_nodes_by_reflection():
    mod = loom.parse(MLP, "mlp.loom")
    assert mod.type_key == "ir.IRModule"
    main = mod.functions["main"]
    assert main.type_key == "graph.Function"
    assert [repr(p) for p in main.params][:2] == ["%x", "%w1"]
    assert len(main.params) == 7 and main.params[-1].name == "b3"
    with pytest.raises(AttributeError, match="has no field 'parms'; did you mean 'params'"):
        main.parms
    # Text round trip, structural equality and hash, JSON.
    again = loom.parse(mod.script(), "again.loom")
    assert loom.ir.structural_equal(mod, again) and not mod.same_as(again)
    assert loom.ir.structural_hash(mod) == loom.ir.structural_hash(again)
    loom.ir.assert_structural_equal(mod, loom.ir.load_json(loom.ir.save_json(mod)))
    other = loom.parse(MLP.replace("relu(add(dense(%x, %w1), %b1))", "tanh(add(dense(%x, %w1), %b1))"))
    assert not loom.ir.structural_equal(mod, other)
    with pytest.raises(AssertionError, match="not structurally equal: .*"):
        loom.ir.assert_structural_equal(mod, other)
    # Any registered type can be made from its fields.
    seven = loom.ir.make("tir.IntImm", dtype=loom.DataType("int32"), value=7)
    assert repr(seven) == "int32(7)" and seven.value == 7 and seven.dtype == "int32"
    with pytest.raises(TypeError, match="no field 'valu'"):
        loom.ir.make("tir.IntImm", valu=7)


def test_build_and_run_on_numpy(mlp_lib, tmp_path):
    inputs = mlp_inputs()
    y = mlp_lib["main"](*inputs)
    assert isinstance(y, loom.nd.NDArray) and y.shape == (64, 10) and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), mlp_reference(*inputs), rtol=1e-4, atol=1e-6)
    # A dict config of the same shape as the YAML file gives the same numbers.
    lib = loom.build(loom.parse(MLP), {"target": {"kind": "llvm", "mcpu": "native"}, "pipeline": {"passes": ["default"]}})
    np.testing.assert_allclose(lib["main"](*inputs).numpy(), y.numpy(), rtol=1e-5, atol=1e-7)
    # Exported and loaded again: the same numbers.
    path = tmp_path / "mlp.so"
    mlp_lib.export_library(str(path))
    loaded = loom.runtime.load_module(path)
    assert np.array_equal(loaded["main"](*inputs).numpy(), y.numpy())


def test_ndarray_shares_memory_with_numpy_and_torch():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    nd = loom.nd.array(a)
    a[1, 2] = 42.0
    assert nd.numpy()[1, 2] == 42.0 and nd.shape == (3, 4)
    back = np.from_dlpack(nd)
    assert np.shares_memory(back, a)
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32)
    nt = loom.nd.from_dlpack(t)
    t[3] = -1.0
    assert nt.numpy()[3] == -1.0
    t2 = torch.from_dlpack(nt)
    assert t2.data_ptr() == t.data_ptr()
    # Read-only or strided NumPy arrays are copied, not refused.
    ro = np.arange(4, dtype=np.float32)
    ro.flags.writeable = False
    assert list(loom.nd.array(ro).numpy()) == [0, 1, 2, 3]
    assert list(loom.nd.array(np.arange(8, dtype=np.float32)[::2]).numpy()) == [0, 2, 4, 6]


def test_errors_are_python_exceptions(mlp_lib):
    with pytest.raises(loom.ParseError, match=r"^bad\.loom:1:\d+: "):
        loom.parse("@main = fn(%x: Tensor[(1), float32]) { add(%x, }", "bad.loom")
    with pytest.raises(loom.ConfigError, match=r"<dict>:\d+:\d+: .*'kind'"):
        loom.build(loom.parse(MLP), {"target": {"knd": "llvm"}})
    with pytest.raises(loom.TypeInferenceError, match="type inference failed"):
        loom.build(loom.parse("@main = fn(%x: Tensor[(2, 3), float32]) { matmul(%x, %x) }"), HOST)
    inputs = mlp_inputs()
    with pytest.raises(loom.LoomError, match="takes 7"):
        mlp_lib["main"](*inputs[:3])
    with pytest.raises(loom.LoomError, match="float32"):
        mlp_lib["main"](inputs[0].astype(np.float64), *inputs[1:])
    with pytest.raises(loom.LoomError, match="784"):
        mlp_lib["main"](np.zeros((64, 783), np.float32), *inputs[1:])
    with pytest.raises(TypeError):
        loom.build(None, HOST)
    with pytest.raises(TypeError, match="cannot pass a Python object"):
        mlp_lib["main"](object())
    with pytest.raises(loom.TypeError):
        loom.build("@main = fn() { 1 }", HOST)
