"""What a Python user finds by looking (docs/python.md):
help() and dir() of loom.op, a built library printed as its module tree,
the DumpIR and LogInstrument instruments, build(verbose=True) and
LOOM_LOG=info, and the error table of docs/python.md against what the code
raises."""
import builtins
import os
import re
import subprocess

import numpy as np
import pytest

import loom
from loom import op, tir, transform

from conftest import LOOMC, ROOT

RELU = "@main = fn(%x: Tensor[(4, 8), float32]) { relu(add(%x, %x)) }\n"


def test_help_shows_the_operators_documentation_and_schema():
    doc = op.conv2d.__doc__
    info = op.info("conv2d")
    assert info["doc"] in doc and "Takes 2 inputs" in doc and "from ops" in doc
    for attr in info["attrs"]:
        assert re.search(rf"^    {attr['name']} \({attr['type']} = ", doc, re.M), (attr, doc)
    assert "    strides (Array = [1, 1]): " in doc
    assert "    a_min (float, required): " in op.clip.__doc__  # no default: required
    assert "No attributes." in op.relu.__doc__
    assert op.conv2d.__name__ == "conv2d" and op.conv2d.__module__ == "loom.op"
    text = pydoc_text(op.softmax)
    assert "axis (int = -1)" in text and "exp(x - max)" in text


def pydoc_text(obj):
    import pydoc
    return pydoc.plain(pydoc.render_doc(obj))


def test_dir_lists_operators_only():
    names = dir(op)
    assert names == sorted({n.split(".")[0] for n in op.list_ops()})
    assert {"conv2d", "relu", "add", "softmax"} <= set(names)
    assert not {"list_ops", "info", "difflib", "functools", "call"} & set(names)


def test_unknown_operator_is_an_attribute_error_with_a_suggestion():
    with pytest.raises(AttributeError, match=r"loom.op has no operator 'sofmax'; did you mean 'softmax'\?"):
        op.sofmax


def test_a_built_library_prints_as_its_module_tree():
    lib = loom.build(loom.parse(RELU), {"target": {"kind": "llvm"}})
    text = str(lib)
    lines = text.splitlines()
    assert lines[0] == "vm: 1 function (main)"
    assert lines[1].startswith("  @main: ") and "planned tensors" in lines[1]
    kernels = lib.imports[0]
    assert lines[2] == f"  {kernels.kind}: 1 function ({', '.join(kernels.function_names())})"
    assert repr(lib).startswith("<loom.runtime.Module\nvm: 1 function (main)") and repr(lib).endswith(">")


def test_dump_ir_writes_the_module_around_every_pass(tmp_path):
    dump = transform.DumpIR(str(tmp_path / "ir"))
    with transform.PassContext(instruments=[dump]) as ctx:
        assert ctx.instruments == [dump]
        loom.build(loom.parse(RELU), {"target": {"kind": "llvm"}})
    files = sorted(os.listdir(tmp_path / "ir"))
    assert "001_pipeline_before.loom" in files and "001_pipeline_after.loom" in files
    legalize = [f for f in files if "_LegalizeOps_" in f]
    assert len(legalize) == 2
    before, after = (loom.parse((tmp_path / "ir" / f).read_text()) for f in sorted(legalize, reverse=True))
    assert "relu" in before.script() and "call_dps" in after.script()


def test_verbose_build_prints_one_line_per_pass(capfd):
    timing = transform.TimingInstrument()
    with transform.PassContext(instruments=[timing]):
        lib = loom.build(loom.parse(RELU), {"target": {"kind": "llvm"}}, verbose=True)
    err = capfd.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("loom: ")]
    passes = [re.match(r"loom: +pass (\S+)  [0-9.]+ ms$", l) for l in lines[:-1]]
    assert all(passes), lines
    runs = {}
    for m in passes:
        runs[m.group(1)] = runs.get(m.group(1), 0) + 1
    assert runs == {row[0]: row[1] for row in timing.rows()}  # every pass run, once each
    assert lines[-2].startswith("loom: pass pipeline ")  # the outermost ends last
    assert re.match(r"loom: codegen and link  [0-9.]+ ms$", lines[-1])
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_allclose(lib["main"](x).numpy(), np.maximum(2 * x, 0))
    loom.build(loom.parse(RELU), {"target": {"kind": "llvm"}})
    assert "loom: " not in capfd.readouterr().err  # quiet by default


def test_loom_log_for_loomc(tmp_path):
    model = tmp_path / "m.loom"
    model.write_text(RELU)
    cmd = [str(LOOMC), "run", str(model), "--config", str(ROOT / "configs" / "host.yaml")]
    env = dict(os.environ, LOOM_LOG="info")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert re.search(r"^loom:     pass LegalizeOps  [0-9.]+ ms$", done.stderr, re.M), done.stderr
    assert re.search(r"^loom: codegen and link  [0-9.]+ ms$", done.stderr, re.M)
    env["LOOM_LOG"] = "verbose"
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert "LOOM_LOG='verbose' is not a log level (levels: warning, the default; info, a line per pass)" in done.stderr


def error_table():
    text = (ROOT / "docs" / "python.md").read_text()
    rows = []
    start = text.index("| exception | raised for |")
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cell = line.split("|")[1].strip()
        m = re.match(r"`loom\.(\w+)`(?: \((?:also an? `(\w+)`|an? `loom\.(\w+)`)\))?", cell)
        assert m, cell
        rows.append((m.group(1), m.group(2) or m.group(3)))
    return rows


RELU4 = "@main = fn(%x: Tensor[(4,), float32]) { relu(%x) }\n"
MISMATCH = "@main = fn(%x: Tensor[(4, 8), float32], %y: Tensor[(3, 8), float32]) { add(%x, %y) }\n"


def raise_plain_error():
    # A plain C++ Error: a partition-only kind as a module's target.
    loom.build(loom.parse(RELU4), {"target": {"kind": "npu"}})


def raise_runtime_error():
    # A compiled function that fails as it runs: its argument is on a device
    # it does not take arrays on.
    lib = loom.build(loom.parse(RELU4), {"target": {"kind": "llvm"}})
    lib["main"](loom.nd.array(np.zeros(4, np.float32), device="opencl"))


# One input per row of the table: what raises that exception, exactly.
ERROR_CASES = {
    "LoomError": raise_plain_error,
    "ParseError": lambda: loom.parse("@main = fn(%x) {"),
    "ConfigError": lambda: loom.build(loom.parse(RELU4), {"target": {"kind": "llvm", "mcpux": 1}}),
    "PluginError": lambda: loom.plugins.load_path("/nonexistent/loom_nothing.so"),
    "TypeInferenceError": lambda: transform.get_pass("InferType")(loom.parse(MISMATCH)),
    "TypeError": lambda: loom.build(loom.parse(RELU4), {"target": {"kind": "llvm"}})["main"](np.zeros(5, np.float32)),
    "LookupError": lambda: transform.get_pass("InferTyp"),
    "ScheduleError": lambda: tir.Schedule(tir.PrimFunc([tir.Buffer("A", (8,))], tir.Evaluate(0))).split("zz", 2),
    "RuntimeError": raise_runtime_error,
}


def test_the_error_table_is_what_the_code_raises():
    table = error_table()
    assert sorted(name for name, _ in table) == sorted(ERROR_CASES), table
    for name, also in table:
        cls = getattr(loom, name)
        with pytest.raises(Exception) as caught:
            ERROR_CASES[name]()
        assert type(caught.value) is cls, (name, type(caught.value), caught.value)
        assert isinstance(caught.value, loom.LoomError)
        if also:
            assert isinstance(caught.value, getattr(loom, also, None) or getattr(builtins, also)), (name, also)
