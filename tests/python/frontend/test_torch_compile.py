"""loom.torch.compile (docs/extern-torchscript.md, "Back to PyTorch"):
torchvision's ResNet-18 and MobileNetV2 called from PyTorch with torch
tensors and giving torch tensors, against PyTorch; under torch.no_grad and
on tensors that require grad; tuples; inputs and outputs shared through
DLPack, not copied; export and reload in a fresh process."""
import warnings

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import, requires, run_fresh
from model_util import randomize_batch_norms

torch = pytest.importorskip("torch")  # every test: the modules below are PyTorch's
torchvision = optional_import("torchvision")
import loom.torch as ltorch  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
@requires("torchvision")
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


class WithSort(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.fc(torch.sort(x, dim=1)[0]))


def test_what_loom_lacks_stays_torchscript_inside_the_compiled_module():
    torch.manual_seed(0)
    model = WithSort().eval()
    x = torch.randn(3, 6)
    compiled = ltorch.compile(model, [x])
    assert [m.kind for m in compiled.library.imports[0].imports] == ["torchscript"]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


class StarArgs(torch.nn.Module):
    """A forward TorchScript cannot script (*args): tracing takes it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, *inputs):
        return self.fc(sum(inputs))


def test_a_module_torchscript_cannot_script_is_traced():
    torch.manual_seed(0)
    model = StarArgs().eval()
    x, y = torch.randn(3, 6), torch.randn(3, 6)
    with pytest.raises(Exception):
        torch.jit.script(model)
    compiled = ltorch.compile(model, [x, y])
    assert not compiled.report.regions
    torch.testing.assert_close(compiled(x, y), model(x, y).detach(), rtol=1e-5, atol=1e-5)
    # script=True asks for scripting, which PyTorch refuses: one Loom error.
    with pytest.raises(loom.TypeError, match="PyTorch can neither trace nor script the module"):
        ltorch.compile(model, [x, y], script=True)


class UNet(torch.nn.Module):
    """Batch norm, max-pool, nn.Upsample and torch.cat: a small UNet."""

    def __init__(self):
        super().__init__()

        def block(i, o):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o),
                                       torch.nn.ReLU(inplace=True))
        self.down1, self.down2, self.bottom = block(3, 8), block(8, 16), block(16, 16)
        self.pool = torch.nn.MaxPool2d(2)
        self.up = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up2, self.up1 = block(32, 8), block(16, 8)
        self.out = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = self.down1(x)
        b = self.down2(self.pool(a))
        c = self.bottom(self.pool(b))
        y = self.up2(torch.cat([self.up(c), b], dim=1))
        return self.out(self.up1(torch.cat([self.up(y), a], dim=1)))


class Recurrent(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        cls = {"gru": torch.nn.GRU, "lstm": torch.nn.LSTM, "rnn": torch.nn.RNN}[kind]
        self.rnn = cls(10, 16, num_layers=2, batch_first=True, bidirectional=kind == "lstm")
        self.fc = torch.nn.Linear(32 if kind == "lstm" else 16, 3)

    def forward(self, x):
        out = self.rnn(x)[0]
        return self.fc(out[:, -1])


@pytest.mark.parametrize("name", ["unet", "gru", "lstm", "rnn"])
def test_unet_and_recurrent_classifiers_compile_whole(name):
    torch.manual_seed(0)
    model = (randomize_batch_norms(UNet()) if name == "unet" else Recurrent(name)).eval()
    x = torch.randn(1, 3, 32, 32) if name == "unet" else torch.randn(2, 7, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no heavy operator left to TorchScript
        compiled = ltorch.compile(model, [x])
    assert not compiled.report.regions, compiled.report
    with torch.no_grad():
        want = model(x)
    assert (compiled(x) - want).abs().max() <= 1e-4 * want.abs().max()


def test_heavy_operators_left_to_torchscript_are_reported_with_a_warning():
    class Sorted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 6)

        def forward(self, x):
            # A data-dependent loop around a linear layer: scripted, the
            # loop and the layer inside it stay TorchScript.
            y = self.fc(x)
            while bool(y.abs().max() > 1.0):
                y = self.fc(y) * 0.5
            return y
    model = Sorted().eval()
    x = torch.randn(2, 6)
    with pytest.warns(UserWarning, match="heavy operators stay TorchScript"):
        compiled = ltorch.compile(model, [x], script=True)
    assert any("prim::Loop" in kinds for kinds in compiled.report.regions.values())
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_dynamic_dimensions_build_again_other_dimensions_are_refused():
    torch.manual_seed(0)
    model = TwoHeads().eval()
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    compiled = ltorch.compile(model, (x, y), dynamic={0: {0: "batch"}, 1: {0: "batch"}})
    for batch in (1, 5, 4):
        x, y = torch.randn(batch, 16), torch.randn(batch, 8)
        with torch.no_grad():
            want = model(x, y)
        for g, w in zip(compiled(x, y), want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    with pytest.raises(loom.TypeError, match=r"input 0 has 17 in dimension 1, the module was compiled for 16 there"):
        compiled(torch.randn(4, 17), torch.randn(4, 8))
    fixed = ltorch.compile(model, (x, y))
    with pytest.raises(loom.LoomError):
        fixed(torch.randn(5, 16), torch.randn(5, 8))


class Dtypes(torch.nn.Module):
    def forward(self, mask, count, wide, half, brain):
        return (mask & (count > 2), count * 2, wide + 1.0, half * 2, (brain.float() * 3).bfloat16())


def test_tensors_of_every_dtype_cross_both_ways_and_complex_is_refused():
    mask = torch.rand(3, 4) > 0.5
    count = torch.randint(0, 5, (3, 4))
    wide = torch.randn(3, 4, dtype=torch.float64)
    half = torch.randn(3, 4).half()
    brain = torch.randn(3, 4).bfloat16()
    args = (mask, count, wide, half, brain)
    compiled = ltorch.compile(Dtypes().eval(), args)
    for got, want in zip(compiled(*args), Dtypes()(*args)):
        assert got.dtype == want.dtype
        assert torch.equal(got, want), (got, want)
    class Twice(torch.nn.Module):
        def forward(self, x):
            return x * 2
    with pytest.raises(loom.TypeError, match="input 0 is a complex64 tensor"):
        ltorch.compile(Twice().eval(), [torch.randn(3, 4, dtype=torch.complex64)])


@requires("torchvision")
def test_a_module_in_training_mode_warns_and_eval_switches_it_for_the_import_only():
    torch.manual_seed(0)
    model = randomize_batch_norms(torchvision.models.resnet18())
    x = torch.randn(2, 3, 64, 64)
    with pytest.warns(UserWarning, match="in training mode"):
        compiled = ltorch.compile(model, [x])
    assert model.training
    with torch.no_grad():
        want = model(x)  # training mode: the batch's statistics
    assert (compiled(x) - want).abs().max() <= 1e-4 * want.abs().max()
    evaluated = ltorch.compile(model, [x], eval=True)
    assert model.training  # restored
    with torch.no_grad():
        want = model.eval()(x)
    assert (evaluated(x) - want).abs().max() <= 1e-4 * want.abs().max()
