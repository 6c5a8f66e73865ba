"""3-D convolutions and pools (docs/frontends.md, "3-D convolutions")
through both PyTorch importers against PyTorch on random inputs: strides,
padding, dilation, groups, depthwise, (3, 1, 1) and (1, 3, 3) kernels as
R(2+1)D factorizes them, max and average pools with ceil_mode and
count_include_pad, adaptive pools, transposed convolutions (strides,
padding, output padding, groups, dilation) and a 3-D U-Net's level; a
symbolic batch; and what stays refused, with its reason."""
import io
import warnings

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import, requires

torch = pytest.importorskip("torch")  # every test: the reference is PyTorch
onnx = optional_import("onnx")
from loom.frontend import fx as lfx  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


def _import(importer, module, x, dynamic_batch=False):
    if importer == "fx":
        return lfx.from_fx(module, [x], dynamic_axes={0: {0: "batch"}} if dynamic_batch else None)
    from loom.frontend import onnx as lonnx
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, x, buffer, opset_version=13, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}} if dynamic_batch else None)
    return lonnx.from_onnx(buffer.getvalue())


def check(importer, module, shape, batches=None):
    torch.manual_seed(0)
    module = module.eval()
    for m in module.modules():  # real statistics, not mean 0 and variance 1
        if isinstance(m, nn.BatchNorm3d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
    x = torch.randn(*shape)
    library = loom.build(_import(importer, module, x, dynamic_batch=bool(batches)), HOST)
    for batch in batches or [shape[0]]:
        x = torch.randn(batch, *shape[1:])
        with torch.no_grad():
            want = module(x).numpy()
        got = library["main"](x.numpy()).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), np.abs(got - want).max()


IMPORTERS = [pytest.param("onnx", marks=requires("onnx")), "fx"]
nn = torch.nn
MODULES = {  # name: (module, input shape)
    "3x3x3": (lambda: nn.Conv3d(4, 6, 3, padding=1), (2, 4, 7, 9, 10)),
    "strided, uneven padding": (lambda: nn.Conv3d(3, 5, (3, 5, 3), stride=(2, 1, 2), padding=(1, 2, 0)),
                                (1, 3, 7, 9, 10)),
    "dilated, no bias": (lambda: nn.Conv3d(4, 4, 3, dilation=(2, 1, 2), bias=False), (1, 4, 7, 9, 10)),
    "grouped": (lambda: nn.Conv3d(6, 9, 3, groups=3, padding=1), (1, 6, 5, 6, 7)),
    "depthwise": (lambda: nn.Conv3d(8, 8, 3, groups=8, stride=2, padding=1), (2, 8, 7, 9, 10)),
    "(3, 1, 1)": (lambda: nn.Conv3d(4, 8, (3, 1, 1), padding=(1, 0, 0)), (1, 4, 6, 8, 8)),
    "(1, 3, 3) strided": (lambda: nn.Conv3d(4, 8, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)), (1, 4, 6, 9, 9)),
    "max pool": (lambda: nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)), (2, 4, 5, 9, 10)),
    "max pool, ceil_mode": (lambda: nn.MaxPool3d(2, stride=2, ceil_mode=True), (1, 4, 7, 9, 10)),
    "average pool without the padding": (lambda: nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False),
                                         (1, 4, 7, 9, 10)),
    "global average": (lambda: nn.AdaptiveAvgPool3d(1), (2, 4, 5, 6, 7)),
    "conv, norm, relu, pool": (lambda: nn.Sequential(nn.Conv3d(3, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(),
                                                     nn.MaxPool3d(2), nn.Conv3d(8, 4, 1)), (2, 3, 6, 8, 8)),
    "transposed 3x3x3": (lambda: nn.ConvTranspose3d(4, 6, 3), (2, 4, 3, 5, 6)),
    "transposed, stride 2 (a U-Net's up-sampling)": (lambda: nn.ConvTranspose3d(4, 6, 2, stride=2), (1, 4, 3, 5, 6)),
    "transposed, strided, padded, output padding": (
        lambda: nn.ConvTranspose3d(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 1)),
        (1, 4, 3, 5, 6)),
    "transposed, grouped, dilated": (lambda: nn.ConvTranspose3d(6, 6, 3, groups=3, dilation=(2, 1, 1), padding=2),
                                     (1, 6, 4, 5, 5)),
    "transposed, padding past the taps": (lambda: nn.ConvTranspose3d(4, 2, 3, stride=3, padding=2, bias=False),
                                          (1, 4, 3, 5, 6)),
}


class UNet3D(nn.Module):
    """A 3-D U-Net's level: down by a pool, up by a transposed
    convolution, the skip connection concatenated."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.BatchNorm3d(4), nn.ReLU())
        self.mid = nn.Sequential(nn.MaxPool3d(2), nn.Conv3d(4, 8, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.dec = nn.Conv3d(8, 3, 1)

    def forward(self, x):
        skip = self.enc(x)
        return self.dec(torch.cat([self.up(self.mid(skip)), skip], dim=1))


MODULES["a 3-D U-Net level"] = (UNet3D, (1, 2, 4, 8, 8))


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_3d_window_agrees_with_pytorch(name, importer):
    make, shape = MODULES[name]
    torch.manual_seed(1)
    check(importer, make(), shape)


def test_what_the_exporter_refuses_the_fx_path_takes():
    """padding="same" and an adaptive pool to sizes other than 1 stop at
    torch.onnx.export, not at Loom: through FX they agree."""
    check("fx", nn.Conv3d(4, 6, (3, 4, 5), padding="same"), (1, 4, 6, 7, 8))
    check("fx", nn.AdaptiveAvgPool3d((2, 3, 3)), (1, 4, 5, 7, 8))


@pytest.mark.parametrize("importer", IMPORTERS)
def test_a_symbolic_batch(importer):
    # (PyTorch 1.13 cannot trace a 3-D pool symbolically: through FX, the
    # convolutions alone.)
    pool = [nn.MaxPool3d(2), nn.AvgPool3d((1, 2, 2))] if importer == "onnx" else []
    check(importer, nn.Sequential(nn.Conv3d(3, 4, 3, stride=(1, 2, 2), padding=1), *pool, nn.Conv3d(4, 2, (3, 1, 1))),
          (2, 3, 6, 8, 8), batches=[1, 3])


@pytest.mark.parametrize("importer", IMPORTERS)
def test_a_3d_transposed_convolution_with_a_symbolic_batch(importer):
    check(importer, nn.Sequential(nn.ConvTranspose3d(3, 4, 2, stride=2), nn.ReLU(), nn.ConvTranspose3d(4, 2, 3)),
          (2, 3, 3, 4, 4), batches=[1, 3])


@requires("onnx")
def test_a_window_deeper_than_the_input_is_a_clear_error():
    """(PyTorch refuses such a module itself: an ONNX file made by hand.)"""
    from onnx import TensorProto, helper, numpy_helper
    from loom.frontend import onnx as lonnx
    w = numpy_helper.from_array(np.ones((2, 2, 5, 1, 1), np.float32), name="w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="deep")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(loom.LoomError, match=r"Conv 'deep'.*depth window \(5 deep\) does not fit the padded input "
                                             r"\(3\)"):
        lonnx.from_onnx(model)
