"""The C deployment example (examples/c/run_model.c, docs/c-api.md) on the
model its README names: ResNet-18 from torchvision (random weights),
imported from ONNX with `loomc import`, built for the CPU and for OpenCL
(PoCL), and run by the C program, which links libloom_runtime alone; its
top-5 classes are PyTorch's."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import LOOMC, ROOT, requires

BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))
RUN_MODEL = BUILD / "bin" / "run_model"


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    import torch
    sys.path.insert(0, str(ROOT / "tests" / "python" / "zoo"))
    import zoo
    d = tmp_path_factory.mktemp("c_example")
    model, x = zoo.make("resnet18")
    torch.onnx.export(model, x, str(d / "resnet18.onnx"), opset_version=13)
    np.save(d / "x.npy", x.numpy())
    with torch.no_grad():
        want = model(x).numpy().ravel()
    subprocess.run([str(LOOMC), "import", str(d / "resnet18.onnx"), "-o", str(d / "resnet18.loom")], check=True,
                   capture_output=True)
    return d, list(np.argsort(-want)[:5])


@requires("torch", "torchvision", "onnx")
@pytest.mark.parametrize("config", ["host.yaml", "opencl.yaml"])
def test_the_c_example_runs_resnet18_with_pytorchs_top5(resnet18, config):
    d, top5 = resnet18
    lib = d / f"resnet18_{config.split('.')[0]}.so"
    subprocess.run([str(LOOMC), "build", str(d / "resnet18.loom"), "--config", str(ROOT / "configs" / config),
                    "-o", str(lib)], check=True, capture_output=True)
    done = subprocess.run([str(RUN_MODEL), str(lib), str(d / "x.npy")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "output: float32 (1, 1000)", done.stdout
    got = [int(item) for item in lines[1].split(":")[1].split()[0::2]]
    assert got == top5, (got, top5)
