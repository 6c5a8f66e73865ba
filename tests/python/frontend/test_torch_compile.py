"""loom.torch.compile (docs/extern-torchscript.md, "Back to PyTorch"):
torchvision's ResNet-18 and MobileNetV2 called from PyTorch with torch
tensors and giving torch tensors, against PyTorch; under torch.no_grad and
on tensors that require grad; tuples; inputs and outputs shared through
DLPack, not copied; export and reload in a fresh process."""
import numpy as np
import pytest

import loom

from conftest import ROOT, run_fresh
from model_util import randomize_batch_norms

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
import loom.torch as ltorch  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_torchvision_models_called_from_pytorch(name):
    torch.manual_seed(0)
    model = randomize_batch_norms(getattr(torchvision.models, name)()).eval()
    x = torch.randn(1, 3, 96, 96)
    compiled = ltorch.compile(model, [x], config=HOST)
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
    assert isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == torch.float32
    assert (got - want).abs().max() <= 1e-4 * want.abs().max()
    # Outside no_grad, on an input that requires grad: the same numbers, no graph.
    again = compiled(x.clone().requires_grad_())
    assert not again.requires_grad and torch.equal(again, got)


class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)

    def forward(self, x, y):
        h = torch.relu(self.fc(x))
        return h + 1.0, h * y


def test_tuples_and_two_inputs_and_the_default_config():
    torch.manual_seed(0)
    model = TwoHeads().eval()
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    compiled = ltorch.compile(model, (x, y))
    a, b = compiled(x, y)
    with torch.no_grad():
        wa, wb = model(x, y)
    torch.testing.assert_close(a, wa, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(b, wb, rtol=1e-5, atol=1e-5)
    # A non-contiguous input is made contiguous first.
    xt = torch.randn(16, 4).t()
    torch.testing.assert_close(compiled(xt, y)[0], model(xt, y)[0].detach(), rtol=1e-5, atol=1e-5)


def test_inputs_and_outputs_cross_without_a_copy():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert loom.nd.from_dlpack(x).numpy().ctypes.data == x.data_ptr()  # what a call does with a torch input
    out = loom.nd.array(np.ones((2, 2), np.float32))
    t = ltorch._to_torch(out)  # what a call does with its result
    assert t.data_ptr() == out.numpy().ctypes.data
    t += 1  # the same memory
    assert out.numpy()[0, 0] == 2.0


def test_export_and_load_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    model = TwoHeads().eval()
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    ltorch.compile(model, (x, y), config=HOST).export(tmp_path / "two_heads.so")
    with torch.no_grad():
        a, b = model(x, y)
    torch.save({"x": x, "y": y, "a": a, "b": b}, tmp_path / "data.pt")
    run_fresh("""
import sys, torch, loom.torch
data = torch.load(sys.argv[1] + "/data.pt")
compiled = loom.torch.load(sys.argv[1] + "/two_heads.so")
a, b = compiled(data["x"], data["y"])
torch.testing.assert_close(a, data["a"], rtol=1e-5, atol=1e-5)
torch.testing.assert_close(b, data["b"], rtol=1e-5, atol=1e-5)
""", tmp_path)


class WithCumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.fc(torch.cumsum(x, dim=1)))


def test_what_loom_lacks_stays_torchscript_inside_the_compiled_module():
    torch.manual_seed(0)
    model = WithCumsum().eval()
    x = torch.randn(3, 6)
    compiled = ltorch.compile(model, [x])
    assert [m.kind for m in compiled.library.imports[0].imports] == ["torchscript"]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
