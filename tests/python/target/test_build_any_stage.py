"""Building at any stage (docs/passes.md, "Building at any stage"): a
module built after any prefix of the default pipeline, or with no pass at
all, runs unoptimised on every target, because the build establishes what
the VM and the codegens need (operators lowered, intrinsics lowered,
device functions split into kernels) with the passes that establish it,
and names them in its log."""
import subprocess
import sys

import numpy as np
import pytest

import loom
from conftest import ROOT
from test_device_graph import CNN, conv2d, max_pool
from test_package import MLP, mlp_inputs, mlp_reference

PREFIXES = [[], ["InferType"], ["InferType", "FuseOps"], ["InferType", "FuseOps", "LegalizeOps"]]


def cnn_inputs(seed):
    rng = np.random.default_rng(seed)
    shapes = [(8, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1), (16, 8, 3, 3), (16, 1, 1), (10, 784), (10,)]
    return [(rng.standard_normal(s) * (1 if i == 0 else 0.2)).astype(np.float32) for i, s in enumerate(shapes)]


def cnn_reference(x, k1, c1, k2, c2, w, b):
    h = max_pool(np.maximum(conv2d(x.astype(np.float64), k1, 1) + c1, 0))
    h = max_pool(np.maximum(conv2d(h, k2, 1) + c2, 0))
    z = h.reshape(len(x), -1) @ w.T + b
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


MODELS = {"mlp": (MLP, mlp_inputs, mlp_reference), "cnn": (CNN, cnn_inputs, cnn_reference)}


@pytest.mark.parametrize("kind", ["llvm", "c", "ref"])
@pytest.mark.parametrize("passes", PREFIXES, ids=lambda p: "[" + ",".join(p) + "]")
@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_prefix_of_the_pipeline_builds_and_runs(model, passes, kind):
    text, inputs, reference = MODELS[model]
    args = inputs(len(passes))
    if kind == "ref":
        # The reference interpreter runs the unoptimised loops of the
        # examples' batches (64, 8) for minutes: a batch of 1.
        for batch in ("(64, 784)", "(64, 10)", "(8, 1, 28, 28)", "(8, 10)"):
            text = text.replace(batch, "(1," + batch.split(",", 1)[1])
        args[0] = args[0][:1]
    lib = loom.build(loom.parse(text, f"{model}.loom"), {"target": {"kind": kind}, "pipeline": {"passes": passes}})
    np.testing.assert_allclose(lib["main"](*args).numpy(), reference(*args), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["opencl", "vulkan"])
def test_no_pass_at_all_on_a_device(kind):
    args = cnn_inputs(5)
    lib = loom.build(loom.parse(CNN, "cnn.loom"), {"target": {"kind": kind, "host": {"kind": "llvm"}},
                                                   "pipeline": {"passes": []}})
    np.testing.assert_allclose(lib["main"](*args).numpy(), cnn_reference(*args), rtol=1e-4, atol=1e-6)


def test_the_log_names_the_passes_the_build_added():
    code = ("import loom; loom.build(loom.parse(open(%r).read()), {'target': {'kind': 'llvm'}, "
            "'pipeline': {'passes': ['InferType']}}, verbose=True)" % str(ROOT / "examples" / "mlp.loom"))
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "loom: the build added LegalizeOps (what the VM and the codegens need that the pipeline left)" in err, err
    # A complete pipeline leaves nothing to add.
    code = code.replace("['InferType']", "['cpu']")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "the build added" not in err and "pass LegalizeOps" in err, err


def test_a_pass_the_build_needs_but_the_context_disables_is_an_error():
    config = {"target": {"kind": "llvm"}, "pipeline": {"passes": [], "disabled": ["LegalizeOps"]}}
    with pytest.raises(loom.LoomError, match="pass 'the build' needs the property 'ops_lowered' .*; pass 'LegalizeOps' "
                                             "establishes it, but this context disables it"):
        loom.build(loom.parse(MLP, "mlp.loom"), config)
