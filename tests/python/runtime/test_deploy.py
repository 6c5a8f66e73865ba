"""Deploying without the compiler (docs/runtime.md, "Deploying"): the MLP
example built for the llvm target runs in examples/deploy's program,
which links libloom_runtime alone; its output matches NumPy; the program
neither links nor loads libloom_core."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

from conftest import LOOMC, ROOT

BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))
DEPLOY = BUILD / "bin" / "loom_deploy"


def mlp_reference(a):
    def softmax(z):
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    h = np.maximum(a["x"] @ a["w1"].T + a["b1"], 0)
    h = np.maximum(h @ a["w2"].T + a["b2"], 0)
    return softmax(h @ a["w3"].T + a["b3"])


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    d = tmp_path_factory.mktemp("deploy")
    subprocess.run([LOOMC, "build", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs/host.yaml"),
                    "-o", str(d / "mlp.so")], check=True)
    rng = np.random.default_rng(7)
    shapes = {"x": (64, 784), "w1": (512, 784), "b1": (512,), "w2": (512, 512), "b2": (512,), "w3": (10, 512),
              "b3": (10,)}
    arrays = {n: (rng.standard_normal(s) * (0.05 if n.startswith("w") else 1)).astype(np.float32)
              for n, s in shapes.items()}
    for n, a in arrays.items():
        np.save(d / f"{n}.npy", a)
    return d, arrays


def test_the_deployment_program_matches_numpy(mlp):
    d, arrays = mlp
    inputs = [str(d / f"{n}.npy") for n in ["x", "w1", "b1", "w2", "b2", "w3", "b3"]]
    run = subprocess.run([DEPLOY, str(d / "mlp.so"), str(d / "y")] + inputs, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"output 0: float32 -> {d / 'y'}0.npy\n"
    got = np.load(d / "y0.npy")
    want = mlp_reference({n: a.astype(np.float64) for n, a in arrays.items()})
    assert got.shape == (64, 10)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_deployment_program_links_and_loads_the_runtime_alone(mlp):
    d, _ = mlp
    needed = subprocess.run(["readelf", "-d", str(DEPLOY)], capture_output=True, text=True, check=True).stdout
    assert "libloom_runtime.so" in needed
    assert "libloom_core.so" not in needed
    inputs = [str(d / f"{n}.npy") for n in ["x", "w1", "b1", "w2", "b2", "w3", "b3"]]
    env = dict(os.environ, LD_DEBUG="libs")
    run = subprocess.run([DEPLOY, str(d / "mlp.so"), str(d / "z")] + inputs, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    loaded = [line for line in run.stderr.splitlines() if "calling init:" in line]
    assert any("libloom_runtime.so" in line for line in loaded), loaded
    assert not any("libloom_core.so" in line or "/loom/plugins/" in line for line in loaded), loaded


def test_the_deployment_program_reports_a_bad_input(mlp):
    d, _ = mlp
    run = subprocess.run([DEPLOY, str(d / "mlp.so"), str(d / "y"), str(d / "w1.npy")], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr == "loom_deploy: @main takes 7 arguments, got 1\n"
