"""The TorchScript importer (docs/extern-torchscript.md, "The importer"):
a model with operations Loom lacks (sort, a scripted function with a
data-dependent loop) imports, runs and matches PyTorch, what Loom has is
fused by its passes and the rest runs as torchscript functions; a traced
module; torchvision's ResNet-18 entirely by Loom; the report; in-place
operators; loomc import of a saved TorchScript file."""
import re
import subprocess

import numpy as np
import pytest

import loom

from conftest import LOOMC, ROOT, optional_import, requires

torch = pytest.importorskip("torch")  # every test: the modules below are PyTorch's
torchvision = optional_import("torchvision")
from loom.frontend.torchscript import from_torchscript  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


@torch.jit.script
def halve_until_small(x):
    while bool(x.abs().max() >= 1.0):
        x = x / 2
    return x


class Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x, y):
        h = torch.relu(self.fc(x)) * 3.0 + 1.0   # Loom: dense, add, relu, multiply, add
        running = torch.cumsum(h, dim=1)          # TorchScript
        ordered, _ = torch.sort(running, dim=1)   # TorchScript
        small = halve_until_small(ordered)        # TorchScript: a loop on the data
        return torch.tanh(self.out(small + h)) * 2.0, torch.sigmoid(y) - 0.5


@pytest.fixture(scope="module")
def mixed():
    torch.manual_seed(0)
    return Mixed().eval()


def test_what_loom_lacks_runs_as_torchscript_and_matches_pytorch(mixed, rng):
    x, y = torch.randn(5, 16), torch.randn(5, 3)
    mod, report = from_torchscript(mixed, [x, y], report=True)
    # sort has no converter; the loop on the data stays TorchScript, its
    # condition's first evaluation (abs, max, ge) is Loom's.
    assert list(report.regions.values()) == [["aten::sort"], ["aten::Bool", "prim::Loop"]]
    assert sorted(set(report.compiled.values())) == ["aten::abs", "aten::add", "aten::cumsum", "aten::ge",
                                                     "aten::linear", "aten::max", "aten::mul", "aten::relu",
                                                     "aten::sigmoid", "aten::sub", "aten::tanh"]
    text = str(report)
    assert text.startswith(f"{len(report.compiled)} nodes compiled by Loom, 3 kept as TorchScript in 2 functions")
    assert "@torchscript_0 (torchscript): aten::sort" in text
    lib = loom.build(mod, HOST)
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        x, y = torch.randn(5, 16, generator=gen) * 4, torch.randn(5, 3, generator=gen)
        got = lib["main"](x.numpy(), y.numpy())
        with torch.no_grad():
            want = mixed(x, y)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_the_compiled_part_is_fused(mixed):
    x, y = torch.randn(5, 16), torch.randn(5, 3)
    mod = from_torchscript(mixed, [x, y])
    fused = loom.transform.Sequential([loom.transform.get_pass(n) for n in ("InferType", "FuseOps")])(mod)
    names = sorted(fused.functions)
    # dense + add + relu + multiply + add before the TorchScript part, and
    # dense + add + tanh + multiply after it, each one fused function.
    assert any(re.fullmatch(r"fused_dense_add_relu_multiply_add(_\d+)?", n) for n in names), names
    assert any(re.fullmatch(r"fused_.*dense_add_tanh_multiply(_\d+)?", n) for n in names), names
    assert "torchscript_0" in names


@requires("torchvision")
def test_a_traced_module_and_resnet18_need_no_torchscript():
    torch.manual_seed(0)
    traced = torch.jit.trace(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval(), torch.randn(2, 8))
    x = torch.randn(2, 8)
    mod, report = from_torchscript(traced, [x], report=True)
    assert not report.regions
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x.numpy()).numpy(), traced(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    mod, report = from_torchscript(model, [x], report=True)
    # In-place relu_ and add_ are converted; the rank check before the
    # pooling is dropped, reported (its condition, computed from the
    # input's shape, is known at import time).
    assert not report.regions and "aten::conv2d" in report.compiled.values()
    assert report.dropped == [["prim::If"]]
    with torch.no_grad():
        want = model(x).numpy()
    got = loom.build(mod, HOST)["main"](x.numpy()).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


class Aliased(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0
        z = y.relu_()   # y itself is read below: not a functional relu
        return z + y


def test_an_in_place_operator_whose_input_is_read_again_stays_torchscript():
    x = torch.randn(4, 4)
    mod, report = from_torchscript(Aliased().eval(), [x], report=True)
    assert list(report.regions.values()) == [["aten::relu_", "aten::add"]]
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x.numpy()).numpy(), Aliased()(x).numpy(), rtol=1e-6)


def test_loomc_import_of_a_torchscript_file(mixed, tmp_path):
    path = tmp_path / "mixed.pt"
    torch.jit.save(torch.jit.script(mixed), str(path))
    done = subprocess.run([str(LOOMC), "import", str(path), "--shape", "x=5,16", "--shape", "y=5,3", "--report",
                           "-o", str(tmp_path / "mixed.loom")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 kept as TorchScript in 2 functions" in done.stdout and "@torchscript_0 (torchscript)" in done.stdout
    x, y = torch.randn(5, 16), torch.randn(5, 3)
    lib = loom.build(loom.ir.load(str(tmp_path / "mixed.loom")), HOST)
    with torch.no_grad():
        want = mixed(x, y)
    for g, w in zip(lib["main"](x.numpy(), y.numpy()), want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    bad = subprocess.run([str(LOOMC), "import", str(path), "-o", str(tmp_path / "m.loom")], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 1 and "a TorchScript file needs each input's shape: --shape NAME=D0,D1,..." in bad.stderr


def test_a_trailing_optional_argument_past_the_examples_is_its_default_none():
    from typing import Optional

    class Masked(torch.nn.Module):
        def forward(self, x, mask: Optional[torch.Tensor] = None):
            if mask is not None:
                x = x * mask
            return torch.relu(x) + 1, None
    scripted = torch.jit.script(Masked().eval())
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match=r"from_torchscript: the module's outputs \[1\] are None"):
        mod = from_torchscript(scripted, [x])
    got = loom.build(mod, HOST)["main"](x.numpy())
    np.testing.assert_allclose(got[0].numpy(), (torch.relu(x) + 1).numpy(), rtol=1e-6)


class _WarnsOnce(torch.nn.Module):
    """A module that assigns one of its attributes in forward (torchvision's
    detectors do: `self._has_warned = True`), which freezing keeps."""
    def __init__(self):
        super().__init__()
        self.warned = False

    def forward(self, x):
        if not self.warned:
            self.warned = True
        return x + 1


def test_an_attribute_forward_assigns_is_named_in_the_error():
    with pytest.raises(loom.LoomError, match=re.escape("could not fold 'warned'; forward assigns 'warned'); export the "
                                                       "model to ONNX")):
        from_torchscript(torch.jit.script(_WarnsOnce().eval()), [torch.zeros(2)])
