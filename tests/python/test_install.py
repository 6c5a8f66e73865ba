"""`import loom` from an installed tree (docs/python.md, "Import"):
`cmake --install` into a fresh prefix, then a Python outside the source
tree imports the package from <prefix>/lib/python3/dist-packages, finds
the installed plugins and builds and runs a function; and the worked
example of docs/python.md runs from the source tree."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))

SCRIPT = """
import numpy as np, loom
from loom import graph, op
print(loom.__file__)
print(loom.plugins.info("llvm").path)
x = graph.Var("x", shape=(5,))
lib = loom.build(loom.IRModule({"main": graph.Function([x], op.relu(x) * 2.0)}),
                 {"target": {"kind": "llvm"}, "pipeline": {"passes": ["default"]}})
a = np.random.default_rng(1).standard_normal(5).astype("float32")
assert np.allclose(lib["main"](a).numpy(), np.maximum(a, 0) * 2)
print("ok")
"""


def test_import_after_cmake_install(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)
    site = prefix / "lib" / "python3" / "dist-packages"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    module_file, llvm_path, ok = done.stdout.split()
    assert module_file == str(site / "loom" / "__init__.py")
    assert llvm_path.startswith(str(prefix / "lib" / "loom" / "plugins"))
    assert ok == "ok"


def test_the_worked_example_runs():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "mlp.py")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "max abs difference from NumPy" in done.stdout and "DenseToMatmul" in done.stdout
