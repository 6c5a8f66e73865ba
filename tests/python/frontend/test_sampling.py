"""Sampling at computed points (docs/frontends.md, "Sampling at points"):
grid_sample in every mode and padding mode (ONNX GridSample, aten
grid_sampler_2d), affine_grid, unfold (aten im2col) and linspace, through
both PyTorch importers against PyTorch on random inputs, with grid points
outside the image; a spatial transformer written as users write one; a
max pool's indices and max_unpool2d (a SegNet's decoder); and what stays
refused, with its reason."""
import io
import itertools
import warnings

import numpy as np
import pytest

import loom
from loom import graph, op

from conftest import ROOT, optional_import, requires

torch = pytest.importorskip("torch")  # every test: the reference is PyTorch
onnx = optional_import("onnx")
from loom.frontend import fx as lfx  # noqa: E402

F = torch.nn.functional
HOST = str(ROOT / "configs" / "host.yaml")


def _import(importer, module, inputs, dynamic_batch=False):
    names = [f"x{k}" for k in range(len(inputs))]
    if importer == "fx":
        axes = {k: {0: "batch"} for k in range(len(inputs))} if dynamic_batch else None
        return lfx.from_fx(module, list(inputs), dynamic_axes=axes)
    from loom.frontend import onnx as lonnx
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs), buffer, opset_version=16, input_names=names,
                          dynamic_axes={n: {0: "batch"} for n in names} if dynamic_batch else None)
    return lonnx.from_onnx(buffer.getvalue())


def check(importer, module, inputs, tolerance=1e-5, batches=None):
    module = module.eval()
    library = loom.build(_import(importer, module, inputs, dynamic_batch=bool(batches)), HOST)
    for batch in batches or [inputs[0].shape[0]]:
        args = [torch.cat([t] * batch)[:batch] if batch != t.shape[0] else t for t in inputs]
        with torch.no_grad():
            want = module(*args).numpy()
        got = library["main"](*[a.numpy() for a in args]).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= tolerance * np.abs(want).max(), np.abs(got - want).max()


class GridSample(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.options = dict(mode=mode, padding_mode=padding, align_corners=align)

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.options)


def _grid(n, h, w, seed):
    """Points across the image and up to a third of it beyond each edge,
    plus the corners and the centre exactly."""
    g = torch.Generator().manual_seed(seed)
    grid = torch.rand(n, h, w, 2, generator=g) * 2.6 - 1.3
    grid[:, 0, :3] = torch.tensor([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0]])
    return grid


IMPORTERS = [pytest.param("onnx", marks=requires("onnx")), "fx"]
MODES = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("mode,padding,align", MODES, ids=[f"{m}-{p}-{'corners' if a else 'edges'}"
                                                          for m, p, a in MODES])
def test_grid_sample_agrees_with_pytorch(mode, padding, align, importer):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7)  # not square: x and y must not be swapped
    check(importer, GridSample(mode, padding, align), [x, _grid(2, 4, 6, 1)])


@requires("onnx")
def test_grid_sample_with_a_symbolic_batch_and_one_pixel_images():
    # The batch is symbolic (through ONNX: PyTorch 1.13 cannot trace
    # grid_sampler symbolically); an image of one row reflects onto itself.
    torch.manual_seed(0)
    check("onnx", GridSample("bilinear", "reflection", False), [torch.randn(2, 2, 6, 5), _grid(2, 3, 4, 2)],
          batches=[1, 3])
    check("fx", GridSample("bicubic", "reflection", True), [torch.randn(1, 2, 1, 5), _grid(1, 3, 4, 3)])


class SpatialTransformer(torch.nn.Module):
    """The tutorial's pattern: a localisation layer predicts an affine
    transform, affine_grid makes its sampling grid, grid_sample warps."""

    def __init__(self, align):
        super().__init__()
        self.align = align
        self.localisation = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2), torch.nn.ReLU(),
                                                torch.nn.Flatten(), torch.nn.Linear(4 * 7 * 7, 6))

    def forward(self, x):
        theta = self.localisation(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=self.align)
        return F.grid_sample(x, grid, align_corners=self.align)


@pytest.mark.parametrize("align", [False, True])
def test_a_spatial_transformer_agrees_with_pytorch(align):
    # (PyTorch 1.13's exporter has no affine_grid: FX only.)
    torch.manual_seed(0)
    check("fx", SpatialTransformer(align), [torch.randn(2, 3, 16, 16)])


class AffineGrid(torch.nn.Module):
    def __init__(self, size, align):
        super().__init__()
        self.size, self.align = size, align

    def forward(self, theta):
        return F.affine_grid(theta, self.size, align_corners=self.align)


@pytest.mark.parametrize("size,align", [((2, 3, 5, 7), False), ((2, 3, 1, 4), True), ((2, 1, 4, 5, 6), False)])
def test_affine_grid_agrees_with_pytorch(size, align):
    torch.manual_seed(0)
    k = len(size) - 2
    check("fx", AffineGrid(size, align), [torch.randn(size[0], k, k + 1)], tolerance=1e-6)


class Unfold(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return F.unfold(x, **self.options)


UNFOLDS = {
    "3x3, padded": (dict(kernel_size=3, padding=1), (2, 4, 6, 7)),
    "2x3, dilated, strided": (dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 0), stride=2), (1, 3, 9, 10)),
    "1x1": (dict(kernel_size=1), (1, 2, 3, 4)),
}


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("name", sorted(UNFOLDS))
def test_unfold_agrees_with_pytorch(name, importer):
    options, shape = UNFOLDS[name]
    torch.manual_seed(0)
    check(importer, Unfold(**options), [torch.randn(*shape)], tolerance=0)


class Linspaces(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x, torch.linspace(-1, 1, 7), torch.linspace(0.1, 9.7, 10), torch.linspace(3, 3, 1),
                          torch.linspace(2, -5, 8, dtype=torch.float64).float()])


def test_linspace_gives_pytorchs_values_to_the_bit():
    x = torch.zeros(1)
    got = loom.build(lfx.from_fx(Linspaces().eval(), [x]), HOST)["main"](x.numpy()).numpy()
    assert np.array_equal(got, Linspaces()(x).numpy())


def _call(x_shape, grid_shape, **attrs):
    x, grid = graph.Var("x", shape=x_shape), graph.Var("g", shape=grid_shape)
    return loom.ir.infer_type(op.grid_sample(x, grid, **attrs))


def test_what_grid_sample_refuses_says_what_and_why():
    with pytest.raises(loom.TypeInferenceError, match=r"mode must be one of bilinear, nearest, bicubic, got 'area'"):
        _call((1, 2, 4, 4), (1, 3, 3, 2), mode="area")
    with pytest.raises(loom.TypeInferenceError,
                       match=r"padding_mode must be one of zeros, border, reflection, got 'wrap'"):
        _call((1, 2, 4, 4), (1, 3, 3, 2), padding_mode="wrap")
    with pytest.raises(loom.TypeInferenceError, match=r"needs x \(N, C, H, W\) and grid \(N, H_out, W_out, 2\), got "
                                             r"\(1, 2, 4, 4\) and \(1, 3, 3, 3\)"):
        _call((1, 2, 4, 4), (1, 3, 3, 3))
    h = loom.tir.Var("h", "int64")
    with pytest.raises(loom.TypeInferenceError, match=r"needs x.s height and width static"):
        _call((1, 2, h, 4), (1, 3, 3, 2))
    # 3-D sampling (a 5-D input) is not converted; the importer names it.
    grid = torch.zeros(1, 2, 2, 2, 3)
    with pytest.raises(loom.frontend.UnsupportedOperatorError, match=r"aten::grid_sampler_3d: 1 node"):
        lfx.from_fx(GridSample("bilinear", "zeros", False), [torch.zeros(1, 1, 3, 3, 3), grid])


class PoolWithIndices(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return F.max_pool2d(x, return_indices=True, **self.options)


POOLS = {
    "2x2": (dict(kernel_size=2), (2, 3, 6, 8)),
    "3x3 stride 2, padded": (dict(kernel_size=3, stride=2, padding=1), (1, 2, 7, 9)),
    "ceil mode, dilated": (dict(kernel_size=3, stride=2, ceil_mode=True, dilation=(1, 2)), (1, 2, 8, 9)),
}


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("name", sorted(POOLS))
def test_a_max_pools_indices_are_pytorchs(name, importer):
    options, shape = POOLS[name]
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x[0, 0, :2, :4] = 1.0  # ties: the first maximum of the window wins
    x[0, 1, 1, 1] = float("-inf")
    module = PoolWithIndices(**options).eval()
    library = loom.build(_import(importer, module, [x]), HOST)
    want = module(x)
    got = library["main"](x.numpy())
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    # (PyTorch's exporter turns ONNX's indices, over the whole tensor, back
    # into positions in each plane.)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


class SegNetLevel(torch.nn.Module):
    """A SegNet decoder level: the encoder's pooling indices put the
    decoder's values back where the maxima were."""

    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.dec = torch.nn.Conv2d(4, 2, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.enc(x))
        pooled, where = F.max_pool2d(y, 2, return_indices=True)
        return self.dec(F.max_unpool2d(pooled * 2, where, 2, output_size=y.shape[-2:]))


def test_a_segnet_unpools_where_it_pooled():
    # (PyTorch 1.13's exporter has no max_unpool2d: FX; ONNX's MaxUnpool
    # passes ONNX's own node tests.)
    torch.manual_seed(0)
    check("fx", SegNetLevel(), [torch.randn(2, 3, 8, 10)])
