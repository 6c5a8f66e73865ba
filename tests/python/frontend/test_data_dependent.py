"""Shapes the data decides (docs/runtime.md, "Shapes the data decides";
docs/frontends.md): call_packed results whose type has a variable no
parameter binds, bound by the VM from what the call returns; the runtime's
nonzero, unique and non_max_suppression against NumPy and a plain NumPy
NMS; ONNX's NonZero, Compress, Unique and NonMaxSuppression and PyTorch's
masks, nonzero, unique and torchvision's nms through the three importers,
against PyTorch on inputs whose counts differ from the example's (none
included)."""
import io
import re
import warnings

import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir

from conftest import ROOT, optional_import

onnx = optional_import("onnx")
HOST = str(ROOT / "configs" / "host.yaml")


def _packed(name, args, out_type, params, body_of):
    """A module calling the registry function `name` and computing
    body_of(result) after it."""
    call = graph.call_packed(name, args, out_type)
    return loom.build(ir.IRModule({"main": graph.Function(params, body_of(call))}), HOST)


# ------------------------------------------------------------------ the VM

def test_a_call_packed_result_binds_the_variable_its_type_names():
    k = tir.Var("k")
    x = graph.Var("x", shape=(3, 4), dtype="float32")
    flat = op.reshape(x, shape=[-1])

    def body(nz):  # the nonzero elements squared, and their count of rows as a tensor of shape (k, 2)
        picked = op.take(flat, op.reshape(nz, shape=[-1]), axis=0)
        return graph.Tuple([op.multiply(picked, picked), op.broadcast_to(graph.Constant(np.float32(1)), shape=[k, 2])])
    lib = _packed("runtime.nonzero", [flat], ir.TensorType([1, k], "int64"), [x], body)
    rng = np.random.default_rng(0)
    for density in (0.0, 0.3, 1.0):
        a = rng.standard_normal((3, 4)).astype(np.float32) * (rng.random((3, 4)) < density)
        squares, ones = (t.numpy() for t in lib["main"](a))
        np.testing.assert_array_equal(squares, a[a != 0] ** 2)
        assert ones.shape == ((a != 0).sum(), 2)


def test_a_result_that_disagrees_with_its_type_is_an_error():
    k = tir.Var("k")
    x = graph.Var("x", shape=(6,), dtype="float32")
    # the second call's result must have the k the first one bound
    first = graph.call_packed("runtime.nonzero", [x], ir.TensorType([1, k], "int64"))
    second = graph.call_packed("runtime.nonzero", [op.subtract(x, graph.Constant(np.float32(1)))],
                               ir.TensorType([1, k], "int64"))
    lib = loom.build(ir.IRModule({"main": graph.Function([x], graph.Tuple([first, second]))}), HOST)
    same = np.array([0, 1, 2, 2, 0, 1], np.float32)  # four nonzero, four not 1
    np.testing.assert_array_equal(lib["main"](same)[1].numpy(), [[0, 2, 3, 4]])
    with pytest.raises(loom.LoomError, match=re.escape(
            "call_packed 'runtime.nonzero' returned a tensor of shape (1, 5); expected Tensor[(1, %k), int64] "
            "(dimension 1 is 5, but %k is 3 from the result of call_packed 'runtime.nonzero')")):
        lib["main"](np.array([0, 2, 0, 3, 0, 1], np.float32))  # three nonzero, five not 1
    # a constant dimension that does not hold
    bad = _packed("runtime.nonzero", [x], ir.TensorType([2, k], "int64"), [x], lambda c: c)
    with pytest.raises(loom.LoomError, match=re.escape("call_packed 'runtime.nonzero' returned")):
        bad["main"](np.ones(6, np.float32))


def test_nonzero_against_numpy():
    rng = np.random.default_rng(1)
    for dtype in ("float32", "float64", "int8", "int64", "uint16", "bool"):
        a = (rng.integers(-2, 3, (2, 3, 4))).astype(dtype)
        x = graph.Var("x", shape=a.shape, dtype=dtype)
        lib = _packed("runtime.nonzero", [x], ir.TensorType([3, tir.Var("k")], "int64"), [x], lambda c: c)
        np.testing.assert_array_equal(lib["main"](a).numpy(), np.array(np.nonzero(a)))
    a = np.array([0.0, -0.0, np.nan, 1e-40, -1.0], np.float32)  # -0.0 is zero; NaN and denormals are not
    x = graph.Var("x", shape=a.shape, dtype="float32")
    lib = _packed("runtime.nonzero", [x], ir.TensorType([1, tir.Var("k")], "int64"), [x], lambda c: c)
    np.testing.assert_array_equal(lib["main"](a).numpy(), [[2, 3, 4]])


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("sorted_", [True, False])
def test_unique_against_numpy(axis, sorted_):
    from loom.frontend import common
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, (6, 4)).astype(np.float32)
    a[2] = a[4]
    a[:, 1] = a[:, 3]
    x = graph.Var("x", shape=a.shape, dtype="float32")
    call = common.unique(x, list(a.shape), "float32", axis, sorted_, "u")
    lib = loom.build(ir.IRModule({"main": graph.Function([x], call)}), HOST)
    values, first, inverse, counts = (t.numpy() for t in lib["main"](a))
    want = np.unique(a, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    if sorted_:
        for g, w in zip((values, first, inverse, counts), want):
            np.testing.assert_array_equal(g, w.reshape(g.shape))
    else:  # the same groups, in the order of their first appearance
        order = np.argsort(want[1], kind="stable")
        np.testing.assert_array_equal(first, want[1][order])
        np.testing.assert_array_equal(counts, want[3][order])
        np.testing.assert_array_equal(values, np.take(want[0], order, axis=0 if axis is None else axis))
        np.testing.assert_array_equal(np.take(values, inverse, axis=0 if axis is None else axis), a.reshape(-1)
                                      if axis is None else a)


def test_unique_of_a_dtype_it_does_not_take_is_refused_when_imported():
    from loom.frontend import common
    x = graph.Var("x", shape=(4,), dtype="float16")
    with pytest.raises(loom.LoomError, match=re.escape("unique of a float16 tensor is not supported")):
        common.unique(x, [4], "float16", None, True, "u")


def _nms_reference(boxes, scores, max_per_class, iou_threshold, score_threshold, center):
    """ONNX's NonMaxSuppression written plainly."""
    rows = []
    for b in range(boxes.shape[0]):
        bx = boxes[b].astype(np.float64)
        if center:
            bx = np.stack([bx[:, 1] - bx[:, 3] / 2, bx[:, 0] - bx[:, 2] / 2, bx[:, 1] + bx[:, 3] / 2,
                           bx[:, 0] + bx[:, 2] / 2], 1)
        bx = np.concatenate([np.minimum(bx[:, :2], bx[:, 2:]), np.maximum(bx[:, :2], bx[:, 2:])], 1)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.argsort(-s, kind="stable") if score_threshold is None or s[i] > score_threshold]
            kept = []
            for i in order:
                if len(kept) >= max_per_class:
                    break
                ok = True
                for j in kept:
                    h = min(bx[i, 2], bx[j, 2]) - max(bx[i, 0], bx[j, 0])
                    w = min(bx[i, 3], bx[j, 3]) - max(bx[i, 1], bx[j, 1])
                    if h > 0 and w > 0:
                        inter = h * w
                        area = lambda k: (bx[k, 2] - bx[k, 0]) * (bx[k, 3] - bx[k, 1])  # noqa: E731
                        if inter / (area(i) + area(j) - inter) > iou_threshold:
                            ok = False
                            break
                if ok:
                    kept.append(i)
                    rows.append((b, c, i))
    return np.array(rows, np.int64).reshape(-1, 3)


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_against_a_numpy_reference(center):
    from loom.frontend import common
    rng = np.random.default_rng(3 + center)
    boxes = graph.Var("boxes", shape=(2, 40, 4), dtype="float32")
    scores = graph.Var("scores", shape=(2, 3, 40), dtype="float32")
    limit = graph.Var("limit", shape=(1,), dtype="int64")
    iou = graph.Var("iou", shape=(1,), dtype="float32")
    threshold = graph.Var("threshold", shape=(1,), dtype="float32")
    call = common.non_max_suppression(boxes, scores, limit, iou, threshold, center, "kept")
    lib = loom.build(ir.IRModule({"main": graph.Function([boxes, scores, limit, iou, threshold], call)}), HOST)
    for trial in range(4):
        corner = rng.random((2, 40, 2)).astype(np.float32) * 6
        size = rng.random((2, 40, 2)).astype(np.float32) * 4 + 0.05
        b = np.concatenate([corner, size], 2) if center else np.concatenate([corner, corner + size], 2)
        if trial == 1 and not center:
            b = b[..., [2, 3, 0, 1]]  # flipped corners
        s = rng.random((2, 3, 40)).astype(np.float32)
        s[0, 0, :5] = s[0, 0, 5]  # ties: the lower index first
        args = (b, s, np.array([[0, 5, 40, 17][trial]], np.int64), np.array([0.1 * (trial + 2)], np.float32),
                np.array([[0.0, 0.3, 0.5, -np.inf][trial]], np.float32))
        want = _nms_reference(*args[:4], None if trial == 3 else float(args[4][0]), center)
        got = lib["main"](*args).numpy()
        np.testing.assert_array_equal(got, want)
    with pytest.raises(loom.LoomError,
                       match=re.escape("runtime.non_max_suppression: iou_threshold 2 is not in [0, 1]")):
        lib["main"](b, s, np.array([3], np.int64), np.array([2], np.float32), np.array([0], np.float32))


# ------------------------------------------------------------ the importers

torch = pytest.importorskip("torch")
torchvision = optional_import("torchvision")


class Masked(torch.nn.Module):
    def forward(self, x):
        return x[x > 0.5] * 2


class MaskedColumns(torch.nn.Module):
    def forward(self, x, y):
        return x[:, y[0] > 0].sum(1), torch.masked_select(x, y > 0) + 1


class NonzeroCount(torch.nn.Module):
    def forward(self, x):
        where = torch.nonzero(x > 0)
        return where, where.shape[0] * 1.0 + x.sum(), torch.nonzero(x < -1, as_tuple=True)[1]


class Unique(torch.nn.Module):
    def forward(self, x):
        values, inverse, counts = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
        return values * 3, inverse, counts


class UniqueConsecutive(torch.nn.Module):
    """Runs of equal neighbours (a CTC decoder's greedy collapse), of the
    whole tensor and of its rows."""
    def forward(self, x):
        values, inverse, counts = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
        rows, row_inverse, row_counts = torch.unique_consecutive(x.reshape(6, 2), return_inverse=True,
                                                                 return_counts=True, dim=0)
        return values + 1, inverse, counts, rows, row_inverse, row_counts


class Detections(torch.nn.Module):
    """What a detector's post-processing does: boxes above a score, then
    NMS, then the kept boxes."""
    def forward(self, boxes, scores):
        keep = scores > 0.2
        boxes, scores = boxes[keep], scores[keep]
        kept = torchvision.ops.nms(boxes, scores, 0.4)
        return boxes[kept], scores[kept]


class RegionFeatures(torch.nn.Module):
    """A two-stage detector's second stage: the regions above a score, the
    features of each (torchvision's roi_align; not aligned=True, which
    torch.onnx.export writes wrong below opset 16, as it warns: that one is
    checked against torchvision in test_roi_align_against_torchvision)."""
    def forward(self, features, boxes, scores):
        keep = scores > 0.5
        regions = torch.cat([torch.zeros_like(scores[keep])[:, None], boxes[keep]], 1)
        pooled = torchvision.ops.roi_align(features, regions, (2, 3), spatial_scale=0.5, sampling_ratio=2)
        adaptive = torchvision.ops.roi_align(features, regions, (2, 2), spatial_scale=1.0, sampling_ratio=-1)
        return pooled, adaptive


def _boxes(rng, n):
    corner = rng.random((n, 2)).astype(np.float32) * 5
    return np.concatenate([corner, corner + rng.random((n, 2)).astype(np.float32) * 3 + 0.1], 1)


CASES = {
    "masked": (Masked, lambda rng: [rng.random((3, 5)).astype(np.float32)]),
    "masked_columns": (MaskedColumns, lambda rng: [rng.random((3, 6)).astype(np.float32),
                                                   rng.standard_normal((3, 6)).astype(np.float32)]),
    "nonzero": (NonzeroCount, lambda rng: [rng.standard_normal((4, 3)).astype(np.float32)]),
    "unique": (Unique, lambda rng: [rng.integers(0, 6, (12,)).astype(np.float32)]),
    "unique_consecutive": (UniqueConsecutive, lambda rng: [rng.integers(0, 2, (12,)).astype(np.float32)]),
    "detections": (Detections, lambda rng: [_boxes(rng, 30), rng.random(30).astype(np.float32)]),
    "regions": (RegionFeatures, lambda rng: [rng.standard_normal((1, 4, 9, 11)).astype(np.float32), _boxes(rng, 12),
                                             rng.random(12).astype(np.float32)]),
}


def _compile(importer, module, example):
    tensors = [torch.from_numpy(a) for a in example]
    if importer == "onnx":
        from loom.frontend import onnx as lonnx
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(tensors), buffer, opset_version=13)
        lib = loom.build(lonnx.from_onnx(buffer.getvalue()), HOST)
        return lambda *a: lib["main"](*a)
    if importer == "fx":
        from loom.frontend import fx as lfx
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib = loom.build(lfx.from_fx(module, tensors), HOST)
        return lambda *a: lib["main"](*a)
    import loom.torch as loom_torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = loom_torch.compile(module, tensors, config=HOST)
    return lambda *a: compiled(*[torch.from_numpy(x) for x in a])


def _flat(value):
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [x for v in value for x in _flat(v)]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


@pytest.mark.parametrize("importer", ["onnx", "fx", "compile"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_pytorch_models_with_shapes_the_data_decides(importer, case):
    if importer == "onnx" and onnx is None:
        pytest.skip("python3-onnx is not installed")
    if case == "detections" and torchvision is None:
        pytest.skip("python3-torchvision is not installed")
    if (importer, case) == ("onnx", "unique_consecutive"):
        pytest.skip("ONNX has no unique_consecutive: torch.onnx.export refuses it")
    if (importer, case) == ("fx", "nonzero"):
        pytest.skip("make_fx fixes where.shape[0] at its traced value: test_fx_warns_of_a_size_its_trace_fixed")
    make, inputs = CASES[case]
    module = make().eval()
    rng = np.random.default_rng(7)
    run = _compile(importer, module, inputs(rng))
    for trial in range(4):
        args = inputs(rng)
        if trial == 3:  # nothing selected
            args[-1] = np.full_like(args[-1], -5 if case != "detections" else 0)
        with torch.no_grad():
            want = _flat(module(*[torch.from_numpy(a) for a in args]))
        got = _flat(run(*args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, (trial, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_fx_warns_of_a_size_its_trace_fixed():
    from loom.frontend import fx as lfx
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    with pytest.warns(UserWarning, match=re.escape("which is the size aten::nonzero")):
        lfx.from_fx(NonzeroCount(), [x])


# --------------------------------------------------------------- RoiAlign

def test_roi_align_against_torchvision():
    torch = optional_import("torch")
    ops = optional_import("torchvision.ops")
    from onnx import TensorProto, helper
    from loom.frontend import onnx as lonnx
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    corners = rng.uniform(-4, 44, (7, 4)).astype(np.float32)  # some boxes reach outside the map
    rois = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]), np.maximum(corners[:, :2], corners[:, 2:])], 1)
    rois[0] = [5, 5, 5.2, 5.1]  # a region smaller than a bin
    batch = rng.integers(0, 2, 7).astype(np.int64)
    for aligned, ratio, scale, out in ((True, 2, 0.25, (3, 4)), (False, 0, 0.25, (2, 2)), (True, 0, 0.5, (5, 3))):
        node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=out[0], output_width=out[1],
                                sampling_ratio=ratio, spatial_scale=scale,
                                coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")
        graph_ = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                                                 helper.make_tensor_value_info("rois", TensorProto.FLOAT, [None, 4]),
                                                 helper.make_tensor_value_info("batch", TensorProto.INT64, [None])],
                                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 16)])
        lib = loom.build(lonnx.from_onnx(model.SerializeToString(), shapes={"rois": ("r", 4), "batch": ("r",)}),
                         HOST)
        if aligned:  # an inverted region (x2 < x1 - a bin): no samples, zeros as torchvision gives
            rois[1] = [30, 30, 10, 12]
        for count in (7, 3, 0):
            got = lib["main"](x, rois[:count], batch[:count]).numpy()
            boxes = torch.from_numpy(np.concatenate([batch[:count, None].astype(np.float32), rois[:count]], 1))
            want = ops.roi_align(torch.from_numpy(x), boxes, out, spatial_scale=scale, sampling_ratio=ratio,
                                 aligned=aligned).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    bad = rois[:2].copy()
    bad[1, 2] = np.nan
    with pytest.raises(loom.LoomError, match="runtime.roi_align: region 1 has the coordinate nan"):
        lib["main"](x, bad, batch[:2])


def test_roi_align_aligned_through_from_fx():
    ops = optional_import("torchvision.ops")
    from loom.frontend import fx as lfx

    class Pool(torch.nn.Module):
        def forward(self, features, regions):
            return ops.roi_align(features, regions, (3, 2), spatial_scale=0.25, sampling_ratio=-1, aligned=True)
    rng = np.random.default_rng(13)
    features = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    regions = np.concatenate([rng.integers(0, 2, (5, 1)).astype(np.float32), _boxes(rng, 5) * 4], 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = loom.build(lfx.from_fx(Pool(), [torch.from_numpy(features), torch.from_numpy(regions)]), HOST)
    want = Pool()(torch.from_numpy(features), torch.from_numpy(regions)).numpy()
    np.testing.assert_allclose(lib["main"](features, regions).numpy(), want, rtol=1e-5, atol=1e-6)
