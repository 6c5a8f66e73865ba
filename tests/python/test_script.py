"""Hybrid script (docs/hybrid-script.md): IR written as Python,
read from the source, equal to the text format it stands for; the
examples against NumPy; errors at the Python file, line and column."""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import loom
from loom import script as S

from conftest import LOOMC, ROOT

BUILD = LOOMC.parent.parent  # the build tree the tests run against

HERE = pathlib.Path(__file__).resolve()


def same(module, text):
    loom.ir.assert_structural_equal(module, loom.parse(text))


@pytest.mark.parametrize("example", ["script_matmul.py", "script_model.py"])
def test_examples_match_numpy(example):
    env = {"PYTHONPATH": str(ROOT / "python"), "LOOM_BUILD_DIR": str(BUILD)}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / example)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "matches NumPy" in done.stdout


def test_a_module_is_the_text_it_stands_for():
    @S.ir_module
    class Module:
        @S.prim_func
        def add_one(A: S.Buffer((16,), "float32"), B: S.Buffer((16,), "float32")):
            for i in S.vectorized(16):
                B[i] = A[i] + 1.0

        fast_relu = S.extern("test_asm", "dps", S.Func([S.Tensor((16,), "float32"), S.Tensor((16,), "float32")], None),
                             attrs={"isa": "x86_64"}, payload="fast_relu:\n  ret\n")

        @S.graph_func
        def main(x: S.Tensor((16,), "float32")):
            y = S.call_dps(S.Tensor((16,), "float32"), add_one, (x,))
            return S.call_dps(S.Tensor((16,), "float32"), fast_relu, (y,))

    same(Module, """
@add_one = prim_func(%A: Buffer[(16), float32], %B: Buffer[(16), float32]) {
  for %i: int64 from 0 extent 16 vectorized { %B[%i] = %A[%i] + 1.0; }
}
@fast_relu = extern "test_asm" dps fn(Tensor[(16), float32], Tensor[(16), float32]) -> none attrs {isa: "x86_64"} payload "fast_relu:\\n  ret\\n"
@main = fn(%x: Tensor[(16), float32]) {
  %y = call_dps<Tensor[(16), float32]>(@add_one, (%x,));
  call_dps<Tensor[(16), float32]>(@fast_relu, (%y,))
}
""")


def test_graph_constructs():
    @S.ir_module(check_types=False)  # helper's parameter has no type: main's matmul cannot be typed
    class M:
        @S.graph_func
        def helper(t):
            return t[0]

        @S.graph_func
        def main(x: S.Tensor((2, 3), "float32"), c: S.Tensor((), "bool")):
            t = S.let((x, -x))
            if c:
                return helper(t) @ S.op.transpose(x)
            else:
                return S.call_packed(S.Tensor((2, 2), "float32"), "my.func", (x,))

    same(M, """
@helper = fn(%t) { %t.0 }
@main = fn(%x: Tensor[(2, 3), float32], %c: Tensor[(), bool]) {
  let %t = (%x, neg(%x));
  if (%c) { matmul(@helper(%t), transpose(%x)) } else { call_packed<Tensor[(2, 2), float32]>((%x,), name="my.func") }
}
""")


def test_operator_attributes_and_captured_values():
    scale = np.arange(3, dtype=np.float32)
    axis, dtype = 1, "int32"

    @S.graph_func
    def f(x: S.Tensor((2, 3), "float32")):
        y = S.op.cast(x * scale, dtype=dtype)
        return S.op.sum(y, axis=[axis], keepdims=True)

    text = loom.IRModule({"f": f}).script(show_meta=True)
    # y is used once: it is the cast itself, written in place
    assert "sum(cast(multiply(%x, meta[0]), dtype=int32), axis=[1], keepdims=true)" in text
    lib = loom.build(loom.IRModule({"main": f}), {"target": {"kind": "llvm"}})
    x = np.random.default_rng(0).uniform(-4, 4, (2, 3)).astype(np.float32)
    np.testing.assert_array_equal(lib["main"](x).numpy(), (x * scale).astype(np.int32).sum(axis=1, keepdims=True))


def test_an_assigned_value_is_shared_and_a_let_is_a_let():
    @S.graph_func
    def f(x: S.Tensor((3,), "float32")):
        h = S.op.relu(x)
        k: S.Tensor((3,), "float32") = S.let(S.op.exp(h))
        return h + h * k

    text = loom.IRModule({"f": f}).script()
    # (a shared value's name is the printer's: names are hints)
    assert re.fullmatch(r"@f = fn\(%x: Tensor\[\(3\), float32\]\) \{\n  %(\w+) = relu\(%x\);\n"
                        r"  let %k: Tensor\[\(3\), float32\] = exp\(%\1\);\n  add\(%\1, multiply\(%\1, %k\)\)\n\}\n",
                        text), text
    body = f.body
    assert body.type_key == "graph.Let" and body.value.args[0].same_as(body.body.args[0])  # one relu node


def test_prim_constructs():
    n = 8

    @S.prim_func
    def k(A: S.Buffer((n,), "float32"), B: S.Buffer((n,), "float32"), m: S.int64):
        T = S.alloc((n,), "float32", scope="local")
        for i in S.serial(1, n):
            x: S.float32 = A[i] * 2.0
            if i < m and not i == 3:
                T[i] = S.max(x, S.float32(0.0))
            else:
                T[i] = S.select(i > 4, S.cast("float32", i), S.call("float32", "exp", x))
        for t in S.thread_binding(n, "threadIdx.x"):
            j = t // 2 + t % 2
            B[t] = T[S.min(j, n - 1)]
        S.evaluate(S.call("int32", "trace", m))

    same(loom.IRModule({"k": k}), """
@k = prim_func(%A: Buffer[(8), float32], %B: Buffer[(8), float32], %m: int64) {
  alloc %T: Buffer[(8), float32, scope="local"] {
    for %i: int64 from 1 extent 8 - 1 {
      let %x: float32 = %A[%i] * 2.0 {
        if %i < %m && !(%i == 3) { %T[%i] = max(%x, float32(0.0)); }
        else { %T[%i] = select(%i > 4, cast(float32, %i), call(float32, "exp", %x)); }
      }
    }
    for %t: int64 from 0 extent 8 thread("threadIdx.x") {
      let %j: int64 = %t // 2 + %t % 2 { %B[%t] = %T[min(%j, 8 - 1)]; }
    }
    eval call(int32, "trace", %m);
  }
}
""")


def test_from_source_with_meta():
    mod = loom.parse("@main = fn(%x: Tensor[(3), float32]) { add(%x, meta[0]) }\n" + "meta " +
                     loom.ir.save_json([loom.nd.array(np.arange(3, dtype=np.float32))]) + "\n")
    text = """
from loom import script as S

@S.ir_module
class M:
    @S.graph_func
    def main(x: S.Tensor((3,), "float32")):
        return x + [1.0, 2.0][0]
"""
    with pytest.raises(loom.ParseError, match=r"^<script>:8:20: a list is not supported in a graph function"):
        S.from_source(text)
    good = S.from_source(text.replace("[1.0, 2.0][0]", "x"))
    same(good, "@main = fn(%x: Tensor[(3), float32]) { add(%x, %x) }\n")
    assert mod["main"] is not None


def error_of(fn):
    with pytest.raises(loom.ParseError) as caught:
        fn()
    return str(caught.value)


def test_errors_point_at_the_python_source():
    def unsupported():
        @S.graph_func
        def g(x: S.Tensor((3,), "float32")):
            y = [v for v in x]
            return y

    message = error_of(unsupported)
    line = HERE.read_text().splitlines().index("            y = [v for v in x]") + 1
    assert message.startswith(f"{HERE}:{line}:17: a list comprehension is not supported in a graph function"), message
    assert message.splitlines()[1].strip() == "y = [v for v in x]"
    assert message.splitlines()[2] == "  " + " " * 16 + "^"

    def undefined():
        @S.graph_func
        def g(x: S.Tensor((3,), "float32")):
            return S.op.relu(nowhere)

    assert re.search(r"test_script.py:\d+:30: undefined name 'nowhere'", error_of(undefined))

    def bad_annotation():
        @S.graph_func
        def g(x: int):
            return x

    assert re.search(r"test_script.py:\d+:18: a type is S.Tensor\(\(dims\), dtype\), .* or a scalar type such as "
                     r"S.int64, got int\n", error_of(bad_annotation))

    def misspelt_operator():
        @S.graph_func
        def g(x: S.Tensor((3,), "float32")):
            return S.op.sofmax(x)

    assert "no operator 'sofmax'; did you mean 'softmax'?" in error_of(misspelt_operator)

    def python_object():
        table = {"a": 1}

        @S.graph_func
        def g(x: S.Tensor((3,), "float32")):
            return x + table

    assert "'table' is a Python dict; a graph function captures numbers and NumPy arrays" in error_of(python_object)

    def type_error():
        @S.prim_func
        def p(A: S.Buffer((4,), "float32")):
            for i in S.serial(4):
                A[i] = A[i] + "text"

    message = error_of(type_error)
    assert re.match(r".*test_script.py:\d+:\d+: ", message) and "A[i] = A[i] + \"text\"" in message, message

    def shape_error():
        @S.ir_module
        class M:
            @S.graph_func
            def main(x: S.Tensor((3,), "float32"), y: S.Tensor((4,), "float32")):
                h = S.op.relu(x)
                return S.op.add(h, y)

    with pytest.raises(loom.TypeInferenceError) as caught:
        shape_error()
    message = str(caught.value)
    line = HERE.read_text().splitlines().index("                return S.op.add(h, y)") + 1
    assert message.startswith(f"{HERE}:{line}:17: type inference failed: @main: add: shapes (3,) and (4,) do not "
                              "broadcast"), message
    assert message.splitlines()[1].strip() == "return S.op.add(h, y)"

    def unchecked():
        @S.ir_module(check_types=False)
        class M:
            @S.graph_func
            def main(x: S.Tensor((3,), "float32"), y: S.Tensor((4,), "float32")):
                return S.op.add(x, y)
        return M

    assert unchecked()["main"] is not None  # written as it is; a build would report the types

    def not_a_loop():
        @S.prim_func
        def p(A: S.Buffer((4,), "float32")):
            for i in [0, 1]:
                A[i] = 0.0

    assert "a loop is for i in S.serial(n)" in error_of(not_a_loop)


# ---- printing as script, and the round trip ----

GOLDEN_SEPARATOR = re.compile(r"^# (?:-----|expect).*$", flags=re.M)


def repository_modules():
    """Every module of the repository's .loom files: whole files, and each
    case of the golden pass files (input and expected module).  Every one
    must parse (an expected error is the text of its '# expect-error:' line,
    never a module): a ParseError names the file and its line, so the
    corpus cannot shrink unseen."""
    out = []
    for path in sorted(ROOT.glob("**/*.loom")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "build" or "errors" in rel.parts:
            continue
        text = path.read_text()
        chunks = GOLDEN_SEPARATOR.split(text)
        if len(chunks) == 1:
            out.append((str(rel), loom.ir.load(path)))
            continue
        starts = [0] + [m.end() for m in GOLDEN_SEPARATOR.finditer(text)]
        for i, (chunk, start) in enumerate(zip(chunks, starts)):
            if "@" not in chunk:
                continue
            # padded to its line of the file, so a parse error names the file's lines
            out.append((f"{rel}#{i}", loom.parse("\n" * text.count("\n", 0, start) + chunk, str(rel))))
    return out


def round_trip(name, mod):
    text = mod.script(format="python")
    assert text == mod.script(format="python"), f"{name}: the printer is not deterministic"
    back = S.from_source(text, name + ".py")
    loom.ir.assert_structural_equal(mod, back)
    return text


def test_every_loom_file_of_the_repository_round_trips_through_script():
    modules = repository_modules()
    assert len(modules) >= 250, len(modules)  # 268 when this was written
    for name, mod in modules:
        round_trip(name, mod)


def test_1000_random_modules_round_trip_through_script():
    loom.plugins.load_path(BUILD / "tests" / "fixtures" / "rand_ops" / "loom_fx_rand_ops.so")
    out = subprocess.run([str(BUILD / "bin" / "loom_random_ir"), "1000"], capture_output=True, text=True,
                         check=True).stdout
    parts = re.split(r"^# ----- seed (\d+)$", out, flags=re.M)
    assert len(parts) == 2001
    for i in range(0, 2000, 2):
        round_trip(f"seed {parts[i + 1]}", loom.parse(parts[i]))


def test_a_printed_script_runs_as_a_python_file(tmp_path):
    import runpy
    mod = loom.ir.load(ROOT / "tests" / "fixtures" / "ir" / "golden" / "graph_extern_all_nodes.loom")
    text = mod.script(format="python")
    assert "def main(x: S.Tensor((16,), \"float32\"), cond: S.bool, w)" in text and "__loom_meta__ = " in text
    (tmp_path / "module.py").write_text(text)
    loom.ir.assert_structural_equal(runpy.run_path(str(tmp_path / "module.py"))["Module"], mod)


def test_script_format_is_checked():
    with pytest.raises(loom.TypeError, match='script\'s format is "text" or "python", got "yaml"'):
        loom.parse("@f = fn(%x) { %x }\n").script(format="yaml")
