"""Passes in Python (docs/python.md, "Passes"): module and function passes
as functions and classes, registered by name and named by a YAML
pipeline; PassContext as a context manager with config and opt level;
instruments written in Python; errors from Python passes."""
import itertools
import pathlib
import threading

import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir, transform

ROOT = pathlib.Path(__file__).resolve().parents[3]
_ids = itertools.count()


def unique(stem):
    """Registered names are global to the process: one per test."""
    return f"{stem}{next(_ids)}"


def add_module(n=6):
    x, y = graph.Var("x", shape=(n,)), graph.Var("y", shape=(n,))
    return loom.IRModule({"main": graph.Function([x, y], op.relu(op.add(x, y)))})


def add_to_subtract(call):
    if call.callee.is_instance("ir.Op") and call.callee.name == "add":
        return op.subtract(*call.args)
    return None


def test_a_registered_python_pass_runs_from_a_yaml_pipeline(tmp_path):
    name = unique("AddToSubtract")
    ran = []

    @transform.module_pass(opt_level=1, name=name)
    def rewrite(mod, ctx):
        ran.append(ctx.opt_level)
        return ir.rewrite(mod, add_to_subtract, "graph.Call")

    assert isinstance(rewrite, transform.Pass) and rewrite.info.opt_level == 1
    assert transform.get_pass(name).same_as(rewrite) and name in transform.list_passes()
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(6).astype("float32"), rng.standard_normal(6).astype("float32")
    config = tmp_path / "c.yaml"
    config.write_text(f"target:\n  kind: llvm\npipeline:\n  opt-level: 2\n  passes: [{name}, default]\n")
    for c in (str(config), {"target": {"kind": "ref"}, "pipeline": {"passes": [name, "default"]}}):
        got = loom.build(add_module(), c)["main"](a, b).numpy()
        np.testing.assert_allclose(got, np.maximum(a - b, 0), rtol=1e-6)  # the rewrite took effect
    assert ran == [2, 2]
    # A misspelt Python pass in YAML is a ConfigError with a suggestion.
    with pytest.raises(loom.ConfigError, match=f"did you mean '{name}'"):
        loom.build(add_module(), {"target": {"kind": "ref"}, "pipeline": {"passes": [name + "x"]}})


def test_function_pass_applies_to_its_variant_only():
    seen = []

    @transform.function_pass(name=unique("SeeGraph"))
    def see_graph(func, mod, ctx):
        seen.append(("graph", func.type_key))
        return func

    @transform.function_pass(name=unique("SeePrim"), variant="prim")
    def see_prim(func, mod, ctx):
        seen.append(("prim", func.type_key))
        return func

    A = tir.Buffer("A", (4,))
    mod = ir.with_function(add_module(), "k", tir.PrimFunc([A], tir.Evaluate(0)))
    assert see_graph(mod).same_as(mod) and see_prim(mod).same_as(mod)  # nothing changed: the same module
    assert seen == [("graph", "graph.Function"), ("prim", "tir.PrimFunc")]


def test_pass_classes_take_arguments_and_register_a_default_instance():
    name = unique("Scale")

    @transform.function_pass(name=name, opt_level=0)
    class Scale:
        """Multiplies the result of every graph function by a factor."""
        def __init__(self, factor=3.0):
            self.factor = factor

        def transform_function(self, func, mod, ctx):
            return graph.Function(list(func.params), op.multiply(func.body, self.factor))

    assert Scale.pass_info.summary.startswith("Multiplies")
    x = np.arange(6, dtype="float32") - 2
    built = Scale(0.5)(add_module())
    assert isinstance(Scale(0.5), transform.Pass)
    run = loom.build(built, str(ROOT / "configs" / "ref.yaml"))["main"]
    np.testing.assert_allclose(run(x, x).numpy(), np.maximum(2 * x, 0) * 0.5)
    registered = transform.get_pass(name)(add_module())
    assert registered["main"].body.args[1].data.numpy() == 3.0  # the default instance: factor 3


def test_pass_context_opt_level_disabled_required_and_nesting():
    ran = []

    def make(level):
        @transform.module_pass(opt_level=level, name=unique(f"Level{level}_"))
        def p(mod, ctx):
            ran.append(level)
            return mod
        return p
    low, high = make(1), make(3)
    seq = transform.Sequential([low, high])
    mod = add_module()
    with transform.PassContext(opt_level=2):
        assert transform.PassContext.current().opt_level == 2
        seq(mod)
        with transform.PassContext(opt_level=3):
            assert transform.PassContext.current().opt_level == 3
            seq(mod)
        assert transform.PassContext.current().opt_level == 2
        with transform.PassContext(opt_level=3, disabled=[low.name]):
            seq(mod)
        with transform.PassContext(opt_level=0, required=[high.name]):
            seq(mod)
    assert ran == [1, 1, 3, 3, 3]
    assert transform.PassContext.current().opt_level == 2  # the default again
    # Contexts left out of order (by hand, not with `with`) do not corrupt the stack.
    a, b = transform.PassContext(opt_level=0), transform.PassContext(opt_level=1)
    a.__enter__(), b.__enter__()
    a.__exit__(None, None, None)
    assert transform.PassContext.current().opt_level == 1
    b.__exit__(None, None, None)
    assert transform.PassContext.current().opt_level == 2


def test_pass_options_are_config_keys():
    name = unique("Clip")
    seen = []

    @transform.module_pass(name=name, options={"limit": ("float", 6.0, "the clip limit")})
    def clip(mod, ctx):
        seen.append(ctx.get_config(f"{name}.limit"))
        return mod

    clip(add_module())
    with transform.PassContext(config={f"{name}.limit": 2.5}) as ctx:
        assert ctx.config == {f"{name}.limit": 2.5}
        clip(add_module())
    assert seen == [6.0, 2.5]
    with pytest.raises(loom.TypeError, match="must be float"):
        transform.PassContext(config={f"{name}.limit": "high"})
    with pytest.raises(loom.TypeError, match=f"did you mean '{name}.limit'"):
        transform.PassContext(config={f"{name}.limt": 1.0})
    with pytest.raises(loom.LoomError, match="needs a default"):
        transform.module_pass(lambda m, c: m, name=unique("NoDefault"), options={"k": ("int", None)})


def test_python_instruments_see_every_pass_and_can_skip_one():
    name = unique("Skipped")

    @transform.module_pass(name=name)
    def skipped(mod, ctx):
        raise AssertionError("an instrument skipped this pass")

    class Recorder:
        def __init__(self):
            self.log = []

        def should_run(self, info, mod):
            return info.name != name

        def before(self, info, mod):
            self.log.append(("before", info.name))

        def after(self, info, mod):
            self.log.append(("after", info.name))

    recorder, timing = Recorder(), transform.TimingInstrument()
    infer = transform.get_pass("InferType")
    with transform.PassContext(instruments=[recorder, timing]) as ctx:
        assert ctx.instruments[0] is recorder
        transform.Sequential([skipped, infer])(add_module())
    assert recorder.log == [("before", "Sequential"), ("before", "InferType"), ("after", "InferType"),
                            ("after", "Sequential")]
    assert [row[0] for row in timing.rows()] == ["Sequential", "InferType"]
    # The entered context's instruments also see loom.build's pipeline.
    with transform.PassContext(instruments=[recorder]):
        loom.build(add_module(), str(ROOT / "configs" / "ref.yaml"))
    assert ("after", "FuseOps") in recorder.log

    class Broken:
        def before(self, info, mod):
            raise KeyError("from an instrument")
    with pytest.raises(KeyError, match="from an instrument"):
        infer(add_module(), transform.PassContext(instruments=[Broken()]))
    with pytest.raises(loom.TypeError, match="should_run returned str"):
        infer(add_module(), transform.PassContext(instruments=[type("Odd", (), {"should_run": lambda s, i, m: "no"})()]))


def test_errors_from_python_passes():
    @transform.module_pass(name=unique("Raises"))
    def raises(mod, ctx):
        raise ValueError("bad module")

    @transform.module_pass(name=unique("ReturnsNone"))
    def returns_none(mod, ctx):
        pass

    @transform.function_pass(name=unique("ReturnsModule"))
    def returns_module(func, mod, ctx):
        return mod

    with pytest.raises(ValueError, match="bad module"):
        raises(add_module())
    with pytest.raises(ValueError, match="bad module"):  # also from inside loom.build, GIL released
        loom.build(add_module(), {"target": {"kind": "ref"}, "pipeline": {"passes": [raises.name]}})
    with pytest.raises(loom.TypeError, match="returned None; it must return the module"):
        returns_none(add_module())
    with pytest.raises(loom.TypeError, match="returned object ir.IRModule; it must return the function"):
        returns_module(add_module())
    with pytest.raises(loom.LoomError, match="already registered by python"):
        transform.module_pass(lambda m, c: m, name=raises.name)
    replaced = transform.module_pass(lambda m, c: m, name=raises.name, override=True)
    assert transform.get_pass(raises.name).same_as(replaced)
    with pytest.raises(loom.TypeError, match="a pass runs on an ir.IRModule, got none"):
        replaced(None)
    with pytest.raises(loom.TypeError, match="Sequential takes passes or pass names"):
        transform.Sequential([3])


def test_python_passes_run_from_other_threads():
    @transform.module_pass(name=unique("Threaded"))
    def count(mod, ctx):
        return ir.rewrite(mod, add_to_subtract, "graph.Call")
    results = []
    threads = [threading.Thread(target=lambda: results.append(count(add_module()).script())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all("subtract" in r for r in results)


def test_python_passes_declare_contracts_the_pass_manager_checks():
    names = {p["name"]: p for p in transform.list_properties()}
    assert {"types_inferred", "ops_lowered", "fused", "buffers_flat", "intrinsics_lowered"} <= set(names)
    assert names["buffers_flat"]["established_by"] == "FlattenBuffer" and names["buffers_flat"]["checked"]
    assert names["types_inferred"]["auto_establish"] and not names["fused"]["checked"]
    name = unique("NeedsLowered")

    @transform.module_pass(name=name, needs=["ops_lowered"], preserves=["*"])
    def needs_lowered(mod, ctx):
        return mod

    assert needs_lowered.info.needs == ["ops_lowered"] and needs_lowered.info.preserves == ["*"]
    # Operators not lowered yet: the pipeline stops before the pass, naming what is missing.
    with pytest.raises(loom.LoomError, match=(f"pass '{name}' needs the property 'ops_lowered' .* "
                                              r"\(@main calls the operator '(add|relu)', which has a lowering\); "
                                              f"pass 'LegalizeOps' establishes it: run LegalizeOps before {name}")):
        loom.build(add_module(), {"target": {"kind": "ref"}, "pipeline": {"passes": [name]}})
    # After LegalizeOps (which InferType runs for, unlisted) it holds.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(6).astype("float32"), rng.standard_normal(6).astype("float32")
    built = loom.build(add_module(), {"target": {"kind": "ref"}, "pipeline": {"passes": ["LegalizeOps", name]}})
    np.testing.assert_allclose(built["main"](a, b).numpy(), np.maximum(a + b, 0), rtol=1e-6)
    # A misspelt property is refused when the pass is declared.
    with pytest.raises(loom.LookupError, match="no IR property named 'ops_lowerd'.*did you mean 'ops_lowered'"):
        transform.module_pass(lambda mod, ctx: mod, name=unique("Typo"), needs=["ops_lowerd"])


@pytest.mark.parametrize("activation", ["swish", "hard_swish", "escapes"])
def test_fuse_ops_closes_a_diamond_of_elementwise_operators(activation):
    # swish (x * sigmoid(x)) and hard-swish (x * clip(x + 3, 0, 6) / 6) read
    # the convolution's output twice; the operators that close that diamond
    # join the convolution's group (docs/passes.md, FuseOps), so no kernel
    # reads the output again.  Where an inner value is also used outside,
    # the diamond stays out of the group.
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((1, 8, 6, 6)).astype(np.float32), rng.standard_normal((4, 8, 3, 3)).astype(np.float32)
    xv = graph.Var("x", shape=x.shape)
    c = op.conv2d(xv, graph.Constant(w), padding=[1, 1, 1, 1])
    if activation == "swish":
        y = op.multiply(c, op.sigmoid(c))
    elif activation == "hard_swish":
        y = op.divide(op.multiply(c, op.clip(op.add(c, graph.Constant(np.float32(3))), a_min=0.0, a_max=6.0)),
                      graph.Constant(np.float32(6)))
    else:
        s = op.sigmoid(c)
        y = graph.Tuple([op.multiply(c, s), s])
    mod = loom.IRModule({"main": graph.Function([xv], y)})
    with transform.PassContext(opt_level=2):
        fused = transform.Sequential(["InferType", "FuseOps"])(mod)
    groups = [n for n in fused.functions.keys() if n.startswith("fused_")]
    if activation == "escapes":
        assert not any("conv2d" in n and "sigmoid" in n for n in groups), groups
        return
    assert len(groups) == 1 and groups[0].startswith("fused_conv2d_"), groups
    cfg = loom.Config.parse(open(pathlib.Path(__file__).resolve().parents[3] / "configs" / "host.yaml").read(),
                            "host.yaml")
    got = loom.build(mod, cfg)["main"](x).numpy()
    want = loom.build(mod, loom.Config.parse("target:\n  kind: ref\n", "ref.yaml"))["main"](x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
