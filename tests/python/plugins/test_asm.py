"""The asm extern kind from Python and the CLI (docs/extern-asm.md): the
example (examples/asm) against NumPy on odd sizes, in memory and exported;
its text form in sync with the script; loomc run on it; errors through
loom.build."""
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import loom
from loom import ir
from conftest import LOOMC, ROOT

sys.path.insert(0, str(ROOT / "examples" / "asm"))
import model as example  # noqa: E402


def cpu_has(*flags):
    if platform.machine() != "x86_64":
        return False
    with open("/proc/cpuinfo") as f:
        line = next((l for l in f if l.startswith("flags")), "")
    return all(flag in line.split() for flag in flags)


needs_avx_fma = pytest.mark.skipif(not cpu_has("avx", "fma"), reason="needs an x86-64 CPU with AVX and FMA")


@needs_avx_fma
def test_example_matches_numpy_in_memory_and_exported():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    run = subprocess.run([sys.executable, str(ROOT / "examples/asm/model.py")], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("max |loom - numpy|") == 12 and "ok: the assembly matches NumPy" in run.stdout


def test_example_text_is_the_scripts_module_and_round_trips():
    mod = example.model()
    text = (ROOT / "examples/asm/model.loom").read_text()
    ir.assert_structural_equal(loom.parse(text), mod)
    ir.assert_structural_equal(loom.parse(mod.script()), mod)
    assert mod["relu"].attrs["features"][0] == "avx" and mod["axpy"].kind == "asm"


@needs_avx_fma
@pytest.mark.parametrize("size", [5, 31, 1027])
def test_loomc_runs_the_example_text(tmp_path, size):
    rng = np.random.default_rng(size)
    x, y = (rng.standard_normal(size).astype("float32") for _ in range(2))
    alpha = rng.standard_normal(1).astype("float32")
    for name, value in [("x", x), ("y", y), ("a", alpha)]:
        np.save(tmp_path / f"{name}.npy", value)
    run = subprocess.run([str(LOOMC), "run", str(ROOT / "examples/asm/model.loom"), "--config",
                          str(ROOT / "configs/host.yaml"), "--input", str(tmp_path / "x.npy"), "--input",
                          str(tmp_path / "y.npy"), "--input", str(tmp_path / "a.npy"), "--output",
                          str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), example.reference(x, y, alpha), rtol=1e-5, atol=1e-6)


def test_build_errors_name_the_function_and_the_problem():
    mod = example.model()
    haswell = {"target": {"kind": "llvm", "mcpu": "haswell"}, "pipeline": {"passes": ["default"]}}
    wide = ir.ExternFunc("asm", "  .globl relu\nrelu:\n  vmaxps %zmm1, %zmm0, %zmm0\n  ret\n",
                         list(mod["relu"].signature.params), None, attrs={"isa": "x86_64", "features": ["avx512f"]})
    with pytest.raises(loom.LoomError, match=r"asm: @relu: it uses the x86_64 extension avx512f, which target llvm "
                                         r"\(mcpu haswell\) lacks"):
        loom.build(ir.with_function(mod, "relu", wide), haswell)
    arm = ir.ExternFunc("asm", "  .globl relu\nrelu:\n  ret\n", list(mod["relu"].signature.params), None,
                        attrs={"isa": "aarch64"})
    with pytest.raises(loom.LoomError, match=r"asm: @relu: it is written for aarch64, but target llvm \(mcpu haswell\) "
                                         r"is x86_64"):
        loom.build(ir.with_function(mod, "relu", arm), haswell)
    broken = ir.ExternFunc("asm", "  .globl relu\nrelu:\n  vmaxps %ymm1, %ymm0\n", list(mod["relu"].signature.params),
                           None, attrs={"isa": "x86_64", "features": ["avx"]})
    with pytest.raises(loom.LoomError, match=r"@relu: the assembly \(x86_64\) does not assemble:\n    asm line 3:3: "):
        loom.build(ir.with_function(mod, "relu", broken), haswell)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 assembly")
def test_loomc_check_names_the_loom_file_line_and_column_of_an_assembler_error(tmp_path):
    # The payload is one escaped string on the function's line: the
    # assembler's line 3, column 3 is mapped through the \n escapes to where
    # `vmaxps` stands in the .loom file.
    mod = example.model()
    broken = ir.ExternFunc("asm", "  .globl relu\nrelu:\n  vmaxps %ymm1, %ymm0\n  ret\n",
                           list(mod["relu"].signature.params), None, attrs={"isa": "x86_64", "features": ["avx"]})
    path = tmp_path / "bad.loom"
    path.write_text(ir.with_function(mod, "relu", broken).script())
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    number, line = next((n, l) for n, l in enumerate(path.read_text().splitlines(), 1) if "vmaxps %ymm1, %ymm0\\n" in l)
    where = f"{path}:{number}:{line.index('vmaxps %ymm1, %ymm0') + 1}"
    assert f"@relu: the assembly (x86_64) does not assemble:\n    {where}: asm line 3:3: " in done.stderr, done.stderr
    # A multi-line payload: the assembler's line 3 is the file's line
    # after the opening line's, at the same column.
    text = path.read_text()
    start = text.index('payload "  .globl relu')
    end = text.index('"', start + len('payload "')) + 1
    multi = text[:start] + 'payload """\n' + broken.payload + '"""' + text[end:]
    first = multi[:start].count("\n") + 1  # the line of the opening """
    path.write_text(multi)
    done = subprocess.run([str(LOOMC), "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"\n    {path}:{first + 3}:3: asm line 3:3: " in done.stderr, done.stderr
    assert ir.load(str(path))["relu"].payload == broken.payload
