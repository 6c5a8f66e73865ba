"""Values that feed several consumers (docs/ir.md, "Shared values"): a
graph built in Python where one node is used twice stays a DAG through
every pass and the build, so each value is computed once and compile time
grows with the number of nodes, not with the number of paths."""
import os
import re
import time

import numpy as np
import pytest

import loom
from loom import graph, op, transform

from conftest import ROOT

LEVELS = 20


def chain(levels):
    """Each level uses the previous value twice: 2**levels paths."""
    x = graph.Var("x", shape=(64,))
    v = x
    for _ in range(levels):
        v = op.add(op.relu(v), op.tanh(v))
    return loom.IRModule({"main": graph.Function([x], v)}), x


def reference(x, levels):
    for _ in range(levels):
        x = np.maximum(x, 0) + np.tanh(x)
    return x


class Last:
    """Keeps the module after the last pass."""
    def after(self, info, mod):
        self.module = mod


@pytest.mark.parametrize("config", ["configs/ref.yaml", "configs/host.yaml"])
def test_a_chain_of_shared_values_builds_fast_and_computes_each_node_once(config):
    mod, _ = chain(LEVELS)
    last = Last()
    start = time.perf_counter()
    with transform.PassContext(instruments=[last]):
        lib = loom.build(mod, str(ROOT / config))
    seconds = time.perf_counter() - start
    # Expanded into a tree, the 20 levels took hours; as a DAG about 0.1 s.
    # (Instrumented builds, scripts/sanitize.sh, are slower.)
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert seconds < 1.0, f"building a {LEVELS}-level DAG took {seconds:.2f} s"
    main = last.module.script().split("@main = ", 1)[1]
    main = main[:main.index("\n}\n")]
    calls = re.findall(r"call_dps<[^>]*>\(@(\w+)", main)
    # Each level is one kernel (its relu, its tanh and their sum: the tanh's
    # group joins the sum's), called once.
    assert calls == ["fused_relu_tanh_add"] * LEVELS, main
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(lib["main"](x).numpy(), reference(x.astype(np.float64), LEVELS), rtol=1e-5,
                               atol=1e-5)


def test_bind_shared_values_binds_each_shared_value_once():
    mod, _ = chain(3)
    bound = transform.get_pass("BindSharedValues")(mod)
    text = bound.script()
    # The sums of levels 1 and 2 are each used twice (x is a variable, the
    # last sum the result): two lets, and every operator written once.
    assert text.count("let %") == 2, text
    assert text.count("tanh(") == 3 and text.count("relu(") == 3, text
    again = transform.get_pass("BindSharedValues")(bound)
    loom.ir.assert_structural_equal(again, bound)


def test_the_vm_computes_a_shared_value_once_without_fusion():
    # O0 fuses nothing: every operator is its own kernel, and the VM binds
    # shared values itself, so the 20 levels run 3 * 20 kernels, not 2**20.
    mod, _ = chain(LEVELS)
    config = {"target": {"kind": "ref"}, "pipeline": {"opt-level": 0, "passes": ["O0"]}}
    lib = loom.build(mod, config)
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    start = time.perf_counter()
    got = lib["main"](x).numpy()
    seconds = time.perf_counter() - start
    np.testing.assert_allclose(got, reference(x.astype(np.float64), LEVELS), rtol=1e-5, atol=1e-5)
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert seconds < 1.0, f"running a {LEVELS}-level DAG took {seconds:.2f} s"


def test_a_shared_value_used_outside_its_variables_scope_is_reported():
    # n uses %a, bound by a let; the same node is also used after the let,
    # where %a is not bound.  Checked once, it must still be reported there.
    x = graph.Var("x", shape=(4,))
    a = graph.Var("a", shape=(4,))
    n = op.add(a, x)
    body = graph.Tuple([graph.Let(a, op.relu(x), n), n])
    problems = loom.ir.well_formed(loom.IRModule({"main": graph.Function([x], body)}))
    assert any("variable '%a' is used but not bound" in str(p) for p in problems), problems
    fine = graph.Let(a, op.relu(x), graph.Tuple([n, n]))
    assert loom.ir.well_formed(loom.IRModule({"main": graph.Function([x], fine)})) == []


def test_the_text_of_a_dag_is_a_dag_and_parses_back_to_one(tmp_path):
    # Printed as a tree, each level doubled the text (and the parsed
    # module computed every value at each use: an imported ResNet ran 46x
    # slower after a round trip through its file).
    mod, _ = chain(LEVELS)
    text = mod.script()
    assert text.count("tanh(") == LEVELS and text.count("relu(") == LEVELS, text
    assert "let %" not in text  # the module has no let; %v = names a shared node
    back = loom.parse(text)
    loom.ir.assert_structural_equal(back, mod)
    assert back.script() == text
    path = tmp_path / "chain.loom"
    loom.ir.save(mod, path)
    again = loom.ir.load(path)
    start = time.perf_counter()
    lib = loom.build(again, str(ROOT / "configs/host.yaml"))
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert time.perf_counter() - start < 1.0  # 2**20 paths would take hours
    x = np.random.default_rng(2).standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(lib["main"](x).numpy(), reference(x.astype(np.float64), LEVELS), rtol=1e-5,
                               atol=1e-5)


def test_a_shared_value_binding_must_not_redeclare_a_name():
    x = "@main = fn(%x: Tensor[(4), float32]) {\n  %v = relu(%x);\n  %v = tanh(%v);\n  add(%v, %v)\n}\n"
    with pytest.raises(loom.ParseError, match=r"<string>:3:3: '%v' is already declared"):
        loom.parse(x)
    y = "@main = fn(%x: Tensor[(4), float32]) {\n  %v = relu(%x);\n  add(%v, %v)\n}\n"
    mod = loom.parse(y)
    assert mod.script() == y
