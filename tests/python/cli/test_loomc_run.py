"""`loomc run`: seeded random inputs are reproducible, .npy round trips,
and bad input gets a clear error (docs/architecture.md, "loomc")."""
import subprocess

import numpy as np

from conftest import LOOMC, ROOT

MODEL = "@main = fn(%x: Tensor[(3, 4), float32], %b: Tensor[(4,), float32]) { relu(add(%x, %b)) }\n"


def loomc(*args):
    return subprocess.run([str(LOOMC), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_run_library_with_seeded_and_npy_inputs(tmp_path):
    (tmp_path / "m.loom").write_text(MODEL)
    lib = tmp_path / "m.so"
    assert loomc("build", tmp_path / "m.loom", "--config", ROOT / "configs/ref.yaml", "-o", lib).returncode == 0
    outs = []
    for k in range(2):
        done = loomc("run", lib, "--seed", 7, "--output", tmp_path / f"y{k}.npy", "--bench", 3)
        assert done.returncode == 0, done.stderr
        assert "output 0: float32 (3, 4)" in done.stdout
        assert "latency: median" in done.stdout
        outs.append(np.load(tmp_path / f"y{k}.npy"))
    np.testing.assert_array_equal(outs[0], outs[1])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    b = np.array([0.5, -0.5, 0.25, 0], dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "b.npy", b)
    done = loomc("run", lib, "--input", tmp_path / "x.npy", "--input", tmp_path / "b.npy", "--output", tmp_path / "y.npy")
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.maximum(x + b, 0))


def test_run_errors_name_what_is_wrong(tmp_path):
    (tmp_path / "m.loom").write_text(MODEL)
    np.save(tmp_path / "x.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.asfortranarray(np.zeros((3, 4), np.float32)))
    np.save(tmp_path / "i.npy", np.zeros((3, 4), np.int32))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    cfg = ROOT / "configs/ref.yaml"
    cases = [
        (["--input", tmp_path / "x.npy"], "@main takes 2 input(s), got 1 --input file(s)"),
        (["--input", tmp_path / "i.npy", "--input", tmp_path / "x.npy"], "argument 0 (%x)"),
        (["--input", tmp_path / "junk.npy", "--input", tmp_path / "x.npy"], "junk.npy: not a .npy file"),
        (["--input", tmp_path / "x.npy", "--input", tmp_path / "x.npy"], "argument 1 (%b)"),
        (["--input", tmp_path / "f.npy", "--input", tmp_path / "x.npy"], "Fortran-order arrays are not supported"),
        (["--bench", "many"], "--bench takes a non-negative integer, got 'many'"),
        (["--function", "mian"], "no function 'mian' in the vm module or its imports; did you mean 'main'?"),
    ]
    for extra, message in cases:
        done = loomc("run", tmp_path / "m.loom", "--config", cfg, *extra)
        assert done.returncode == 1, (extra, done.stdout)
        assert message in done.stderr, (extra, done.stderr)
    done = loomc("run", tmp_path / "m.loom")
    assert done.returncode == 1 and "needs --config FILE.yaml" in done.stderr
