"""The mlir extern kind (docs/extern-mlir.md): kernels in MLIR compiled in
process with MLIR 16 and called from graph functions.  A linalg matmul with
a bias on tensor<?x?xf32> against NumPy (1x1, 7x13, 128x256), math.exp on
memrefs, scf.for with a destination tensor, an exported library in a fresh
process (no MLIR mapped there), and the validation errors, each naming the
function and the payload's line.  Skipped where the mlir plugin is not
built (no libmlir-16-dev)."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir
from conftest import LOOMC, ROOT, run_fresh

CONFIG = str(ROOT / "configs" / "host.yaml")
# For modules of extern functions alone: no pass to run.
PLAIN = {"target": {"kind": "llvm", "mcpu": "native"}, "pipeline": {"passes": []}}


def _mlir_plugin_built():
    build = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))
    return (build / "lib" / "loom" / "plugins" / "loom_mlir.so").exists()


pytestmark = pytest.mark.skipif(not _mlir_plugin_built(),
                                reason="the mlir plugin is not built (MLIR 16, libmlir-16-dev, not found)")

MATMUL_BIAS = """\
// C = A x B + bias (bias broadcast over the rows), on tensors of any shape.
func.func @matmul_bias(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %bias: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%m, %n) : tensor<?x?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?x?xf32>) -> tensor<?x?xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%bias : tensor<?xf32>) outs(%mm : tensor<?x?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
"""

EXP = """\
func.func @exp_kernel(%x: memref<?xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}
"""

# A running sum with scf.for, writing into its destination tensor.
CUMSUM = """\
func.func @cumsum(%x: tensor<?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %t = %init) -> (f32, tensor<?xf32>) {
    %v = tensor.extract %x[%i] : tensor<?xf32>
    %s = arith.addf %acc, %v : f32
    %t2 = tensor.insert %s into %t[%i] : tensor<?xf32>
    scf.yield %s, %t2 : f32, tensor<?xf32>
  }
  return %r#1 : tensor<?xf32>
}
"""


def matrix(*dims):
    return ir.TensorType([tir.Var(d, "int64") for d in dims], "float32")


def matmul_module(then_square=False):
    m, k, n = (tir.Var(v, "int64") for v in "mkn")
    a_t, b_t = ir.TensorType([m, k], "float32"), ir.TensorType([k, n], "float32")
    bias_t, out_t = ir.TensorType([n], "float32"), ir.TensorType([m, n], "float32")
    kernel = ir.ExternFunc("mlir", MATMUL_BIAS, [a_t, b_t, bias_t, out_t])
    gm, gk, gn = (tir.Var(v, "int64") for v in "MKN")
    a = graph.Var("a", ir.TensorType([gm, gk], "float32"))
    b = graph.Var("b", ir.TensorType([gk, gn], "float32"))
    bias = graph.Var("bias", ir.TensorType([gn], "float32"))
    y = graph.call_dps("matmul_bias", [a, b, bias], ir.TensorType([gm, gn], "float32"))
    # then_square: an operator after it, so that the llvm codegen's code and
    # the MLIR code share the host library
    main = graph.Function([a, b, bias], op.multiply(y, y) if then_square else y)
    return loom.IRModule({"matmul_bias": kernel, "main": main})


def reference(a, b, bias, then_square=False):
    y = a.astype(np.float64) @ b.astype(np.float64) + bias
    return y * y if then_square else y


def tree(lib):
    """Every module below a built module."""
    for m in lib.imports:
        yield m
        yield from tree(m)


def mlir_module_of(lib):
    """The built mlir module in the import tree of a built module."""
    found = [m for m in tree(lib) if m.kind == "mlir"]
    assert len(found) == 1, [m.kind for m in tree(lib)]
    return found[0]


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 13), (128, 64, 256)])
def test_matmul_bias_matches_numpy(m, k, n):
    lib = loom.build(matmul_module(), PLAIN)
    rng = np.random.default_rng(m * 1000 + n)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    bias = rng.standard_normal(n).astype("float32")
    got = lib["main"](a, b, bias).numpy()
    assert got.shape == (m, n)
    np.testing.assert_allclose(got, reference(a, b, bias), rtol=1e-4, atol=1e-4)


def test_value_results_are_copied_out_and_freed():
    """A tensor result the function allocates is copied into Loom's output
    and freed: every malloc of the lowered code has its free."""
    code = mlir_module_of(loom.build(matmul_module(), PLAIN))
    ll = code.inspect_source("ll")
    assert "define i32 @_mlir_ciface___loom_mlir_matmul_bias(" in ll
    assert ll.count("call ptr @malloc(") == ll.count("call void @free(") >= 1, ll
    assert "_mlir_ciface___loom_mlir_matmul_bias(loom_mlir_memref_2*" in code.inspect_source("c")
    assert "func.func @__loom_mlir_matmul_bias(" in code.inspect_source("bufferized")
    assert "linalg.matmul" in code.inspect_source("mlir")


def test_exp_on_memrefs_writes_in_place():
    n = tir.Var("n", "int64")
    vec = ir.TensorType([n], "float32")
    kernel = ir.ExternFunc("mlir", EXP, [vec, vec])
    size = tir.Var("s", "int64")
    x = graph.Var("x", ir.TensorType([size], "float32"))
    main = graph.Function([x], graph.call_dps("exp_kernel", [x], ir.TensorType([size], "float32")))
    lib = loom.build(loom.IRModule({"exp_kernel": kernel, "main": main}), PLAIN)
    for length in (1, 17, 1000):
        v = np.random.default_rng(length).uniform(-5, 5, length).astype("float32")
        np.testing.assert_allclose(lib["main"](v).numpy(), np.exp(v), rtol=1e-5)
    ll = mlir_module_of(lib).inspect_source("ll")
    assert "@malloc(" not in ll and "@free(" not in ll


def test_scf_for_into_the_destination_tensor():
    n = tir.Var("n", "int64")
    vec = ir.TensorType([n], "float32")
    kernel = ir.ExternFunc("mlir", CUMSUM, [vec, vec])
    size = tir.Var("s", "int64")
    x = graph.Var("x", ir.TensorType([size], "float32"))
    main = graph.Function([x], graph.call_dps("cumsum", [x], ir.TensorType([size], "float32")))
    lib = loom.build(loom.IRModule({"cumsum": kernel, "main": main}), PLAIN)
    for length in (1, 9, 300):
        v = np.random.default_rng(length).standard_normal(length).astype("float32")
        np.testing.assert_allclose(lib["main"](v).numpy(), np.cumsum(v), rtol=1e-4, atol=1e-5)
    # the destination tensor is written in place: no allocation at all
    assert "@malloc(" not in mlir_module_of(lib).inspect_source("ll")


def test_text_form_round_trips_and_loomc_checks_it(tmp_path):
    mod = matmul_module()
    text = mod.script()
    ir.assert_structural_equal(loom.parse(text), mod)
    path = tmp_path / "model.loom"
    path.write_text(text)
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("then_square", [False, True], ids=["extern_alone", "with_llvm_code"])
def test_exported_library_runs_in_a_fresh_process_without_mlir(tmp_path, then_square):
    lib = loom.build(matmul_module(then_square), CONFIG if then_square else PLAIN)
    kinds = ["llvm", "mlir"] if then_square else ["mlir"]
    assert sorted(m.kind for m in tree(lib)) == kinds, [m.kind for m in tree(lib)]
    path = tmp_path / "model.so"
    lib.export_library(str(path))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 5)).astype("float32")
    b = rng.standard_normal((5, 13)).astype("float32")
    bias = rng.standard_normal(13).astype("float32")
    for i, x in enumerate((a, b, bias)):
        np.save(tmp_path / f"in{i}.npy", x)
    script = (
        "import sys, numpy as np, loom\n"
        "lib = loom.runtime.load_module(sys.argv[1])\n"
        "inputs = [np.load(f'{sys.argv[2]}/in{i}.npy') for i in range(3)]\n"
        "np.save(sys.argv[2] + '/out.npy', lib['main'](*inputs).numpy())\n"
        "import os\n"
        "files = {os.path.basename(l.split()[-1]) for l in open('/proc/self/maps') if '/' in l}\n"
        "bad = [f for f in files if 'mlir' in f.lower() or f.startswith('libLLVM')]\n"
        "assert not bad, bad\n"
        "assert any(f == 'model.so' for f in files), sorted(files)\n")
    run_fresh(script, path, tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), reference(a, b, bias, then_square), rtol=1e-4,
                               atol=1e-4)
    # loomc inspect lists it like any function of the library
    done = subprocess.run([str(LOOMC), "inspect", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "matmul_bias" in done.stdout


# ---- errors ------------------------------------------------------------------

def problem(payload, params):
    """The error loom.build gives for a module with this one kernel."""
    kernel = ir.ExternFunc("mlir", payload, params)
    with pytest.raises(loom.LoomError) as info:
        loom.build(loom.IRModule({"kern": kernel}), PLAIN)
    return str(info.value)


def vec():
    return ir.TensorType([tir.Var("n", "int64")], "float32")


def test_a_payload_that_does_not_parse():
    text = "func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n  %z = arith.addf %c\n  return\n}\n"
    message = problem(text, [vec(), vec()])
    assert "@kern: the MLIR payload is not valid:" in message
    assert "mlir line 3:" in message and "%z = arith.addf %c" in message, message


def test_a_verifier_failure():
    text = "func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n  return %c : f32\n}\n"
    message = problem(text, [vec(), vec()])
    assert "@kern: the MLIR payload is not valid:" in message
    assert "mlir line 3:3: 'func.return' op has 1 operands, but enclosing function (@kern) returns 0" in message, message


def test_a_signature_mismatch():
    text = EXP.replace("@exp_kernel", "@kern").replace("f32", "f64")
    message = problem(text, [vec(), vec()])
    assert ("@kern: the MLIR payload is not valid:\n    mlir line 1:1: parameter 0 of @kern is memref<?xf64>, but the "
            "extern declares Tensor[(%n), float32]: its element type f64 is not float32") in message, message
    fixed = ir.TensorType([4, 3], "float32")
    message = problem(EXP.replace("@exp_kernel", "@kern"), [fixed, fixed])
    assert "parameter 0 of @kern is memref<?xf32>, but the extern declares Tensor[(4, 3), float32]: its rank is 1, not 2" in message
    message = problem(EXP.replace("@exp_kernel", "@kern").replace("?xf32", "8xf32"), [vec(), vec()])
    assert "dimension 0 is 8, but the extern declares it symbolic" in message
    message = problem(EXP.replace("@exp_kernel", "@kern"), [vec()])
    assert "@kern takes 2 parameters and returns 0 results, but the extern declares 1 tensor" in message


def test_a_dialect_the_pipeline_does_not_lower():
    text = ("func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n"
            "  %v = vector.broadcast %c : f32 to vector<4xf32>\n  return\n}\n")
    message = problem(text, [vec(), vec()])
    assert "@kern: the MLIR payload is not valid:" in message
    assert "mlir line 3:" in message and "the dialect 'vector' is not one the mlir kind lowers" in message, message


def test_errors_through_loomc_check_name_the_file_function_and_line(tmp_path):
    text = "func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n  return %c : f32\n}\n"
    mod = loom.IRModule({"kern": ir.ExternFunc("mlir", text, [vec(), vec()])})
    path = tmp_path / "bad.loom"
    path.write_text(mod.script())
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "@kern: the MLIR payload is not valid:" in done.stderr and "mlir line 3:3:" in done.stderr, done.stderr


def file_position(path, needle):
    """FILE:LINE:COL of the first occurrence of `needle` in the file."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return f"{path}:{number}:{line.index(needle) + 1}"
    raise AssertionError(f"{needle!r} is not in {path}")


def test_loomc_check_names_the_loom_file_line_and_column_of_a_payload_error(tmp_path):
    # The payload is one escaped string on the function's line: MLIR's
    # line 3, column 3 is mapped through the \n escapes to where
    # `return %c` stands in the .loom file.
    text = ("func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n"
            "  return %c : f32\n}\n")
    mod = loom.IRModule({"kern": ir.ExternFunc("mlir", text, [vec(), vec()])})
    path = tmp_path / "bad.loom"
    path.write_text("# a kernel whose payload does not verify\n\n" + mod.script())
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    where = file_position(path, "return %c")
    assert where.split(":")[-2] == "3" and int(where.split(":")[-1]) > 100, where
    assert (f"@kern: the MLIR payload is not valid:\n    {where}: mlir line 3:3: 'func.return' op has 1 operands"
            in done.stderr), done.stderr
    # Built in Python, the module has no file: the payload's line only.
    assert "\n    mlir line 3:3: 'func.return'" in problem(text, [vec(), vec()])


def test_a_multi_line_payload_maps_to_its_own_lines(tmp_path):
    path = tmp_path / "multi.loom"
    path.write_text(
        '@kern = extern "mlir" dps fn(Tensor[(%n: int64), float32], Tensor[(%n), float32]) -> none payload """\n'
        "func.func @kern(%x: memref<?xf32>, %y: memref<?xf32>) {\n"
        "  %c = arith.constant 1.0 : f32\n"
        "  %z = arith.addf %c\n"
        "  return\n"
        "}\n"
        '"""\n')
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    # MLIR's line 3 is the file's line 4 (the payload starts after the
    # opening line), at the same column.
    assert f"\n    {path}:4:" in done.stderr and "mlir line 3:" in done.stderr, done.stderr
    column = done.stderr.split(f"{path}:4:")[1].split(":")[0]
    assert f"mlir line 3:{column}:" in done.stderr, done.stderr
    # The same payload read back is the escaped string's.
    parsed = loom.ir.load(str(path))
    assert parsed["kern"].payload.splitlines()[2] == "  %z = arith.addf %c"
