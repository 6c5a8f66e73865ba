"""loom.target (docs/python.md, "Targets"): targets made and checked by the
core, kinds with their schemas and traits, and a config dict without
passes running the target's default pipeline."""
import numpy as np
import pytest

import loom
from loom import graph, op, target


def test_targets_are_checked_and_filled_in():
    t = target.Target("llvm", num_threads=2)
    assert t.kind == "llvm" and t.attrs["num-threads"] == 2 and t.attrs["opt-level"] == 3
    assert target.num_threads(t) == 2
    assert target.vector_bits(t) in (128, 256, 512)
    assert target.vector_bits(target.Target("cpu", vector_bits=0)) == 0
    with pytest.raises(loom.TypeError, match="no attribute 'num-thread'; did you mean 'num-threads'"):
        target.Target("llvm", num_thread=2)
    with pytest.raises(loom.LoomError, match="attribute .num-threads. must be from 0 to 1024, got -1"):
        target.Target("llvm", num_threads=-1)
    with pytest.raises(loom.LookupError, match="did you mean 'llvm'"):
        target.Target("llvmm")
    assert target.host().kind == "cpu"


def test_kinds_declare_their_traits():
    assert {"cpu", "llvm", "ref"} <= set(target.list_kinds())
    llvm = target.kind_info("llvm")
    assert [a[0] for a in llvm["attributes"]] == ["mtriple", "mcpu", "mattr", "num-threads", "opt-level"]
    traits = llvm["traits"]
    assert traits["default_pipeline"] == ["cpu_channels_last"] and traits["codegen_needs"] == ["intrinsics_lowered"]
    native = set(traits["native_intrinsics"])
    assert {"exp", "sigmoid", "tanh", "erf"} <= native and "rsqrt" not in native
    assert traits["threads_attr"] == "num-threads" and traits["device"] == "cpu:0"
    assert "tanh" in target.kind_info("ref")["traits"]["native_intrinsics"]


def test_a_config_without_passes_runs_the_targets_default_pipeline():
    x = graph.Var("x", shape=(5, 3))
    mod = loom.IRModule({"main": graph.Function([x], op.tanh(op.relu(x)))})
    a = np.random.default_rng(2).standard_normal((5, 3)).astype("float32")
    for config in ({"target": {"kind": "llvm"}}, {"target": {"kind": "ref"}, "pipeline": {"opt-level": 1}}):
        got = loom.build(mod, config)["main"](a).numpy()
        np.testing.assert_allclose(got, np.tanh(np.maximum(a, 0)), rtol=1e-5, atol=1e-6)
    # passes: [] runs none; the build lowers what the VM and the codegen need.
    got = loom.build(mod, {"target": {"kind": "ref"}, "pipeline": {"passes": []}})["main"](a).numpy()
    np.testing.assert_allclose(got, np.tanh(np.maximum(a, 0)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype, tolerance", [("float16", 5e-4), ("float32", 6e-7), ("float64", 1e-15)])
def test_llvm_computes_erf_natively_in_every_float_dtype(dtype, tolerance):
    # float32 by the bounded exp; float64 by the C library; float16 through
    # float32 (the C library has no float16 erf).
    import math
    x = np.concatenate([np.linspace(-5, 5, 41), [0.0, -0.0]]).astype(dtype)
    v = graph.Var("x", shape=x.shape, dtype=dtype)
    got = loom.build(loom.IRModule({"main": graph.Function([v], op.erf(v))}), {"target": {"kind": "llvm"}})["main"](x)
    got = got.numpy()
    assert got.dtype == np.dtype(dtype)
    want = np.array([math.erf(float(a)) for a in x])
    assert np.abs(got.astype(np.float64) - want).max() <= tolerance
    assert np.signbit(got[-1]) and not np.signbit(got[-2])
