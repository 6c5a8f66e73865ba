"""Detectors whole, through ONNX (docs/frontends.md, "Shapes the data
decides" and "Control flow"): torchvision's SSDlite320-MobileNetV3 as
torch.onnx.export writes it (a NonZero per class, a TopK whose k the data
decides, batched NMS under an If), Faster R-CNN-MobileNetV3-320-FPN
(RoiAlign over the proposals the data decides), and Mask R-CNN and
Keypoint R-CNN (a Loop over the detections resizing each mask or heatmap
to its box's size: sizes the data decides, docs/frontends.md) against
torchvision on images whose detections differ.  Random weights, scaled so that scores differ (with
torchvision's initialisation every score is 1/91 and the order is the
tie-breaking's); detections are compared as a set: two whose scores
differ by less than float noise may swap places."""
import io

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import

torch = optional_import("torch")
torchvision = optional_import("torchvision")
HOST = str(ROOT / "configs" / "host.yaml")


def _model(name, head_scale, **kw):
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **kw).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 4:  # He's scale: activations stay of order one through the network
                scale = head_scale if "head" in name else 1.0  # (the RPN's: proposals of moderate scores)
                p.copy_(torch.randn(p.shape, generator=generator) * (2.0 / p[0].numel()) ** 0.5 * scale)
            elif "bias" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.1)
            elif kw and p.dim() == 2:  # the R-CNN box head's layers: classes of moderate scores, small regressions
                scale = 0.3 if "cls_score" in name else 0.1 if "bbox_pred" in name else 2.0 ** 0.5
                p.copy_(torch.randn(p.shape, generator=generator) * scale / p.shape[1] ** 0.5)
    return model


def _export(model, size):
    from loom.frontend import onnx as lonnx
    buffer = io.BytesIO()
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(model, ([torch.rand(3, size, size)],), buffer, opset_version=13, input_names=["x"], **kw)
    return loom.build(lonnx.from_onnx(buffer.getvalue()), HOST)


def _matching(got, want, box_tolerance, score_tolerance):
    """For each of Loom's detections, the index of torchvision's it is
    (same label, box and score within the tolerances)."""
    index = []
    for b, s, label in zip(got["boxes"], got["scores"], got["labels"]):
        same = (want["labels"] == label) & (np.abs(want["boxes"] - b).max(axis=1) < box_tolerance) & \
            (np.abs(want["scores"] - s) < score_tolerance)
        assert same.any(), f"detection {b} score {s} label {label} is not torchvision's"
        index.append(int(np.argmax(same)))
    return index


@pytest.mark.parametrize("name, head_scale, box_tolerance, score_tolerance", [
    ("ssdlite320_mobilenet_v3_large", 1.0, 0.01, 1e-4),
    # Two stages of random weights amplify float noise: a box's exp(regression) to 0.07 px, a score to 1.4e-4.
    ("fasterrcnn_mobilenet_v3_large_320_fpn", 0.05, 0.1, 5e-4)])
def test_detections_agree_with_torchvision(name, head_scale, box_tolerance, score_tolerance):
    model = _model(name, head_scale)
    lib = _export(model, 320)
    for seed in (1, 2):
        x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            want = {k: t.numpy() for k, t in model([x])[0].items()}
        got = {k: t.numpy() for k, t in zip(want, lib["main"](x.numpy()))}  # the outputs in the dict's order
        assert got["boxes"].shape == want["boxes"].shape and len(got["boxes"]) > 0, f"seed {seed}"
        _matching(got, want, box_tolerance, score_tolerance)
        np.testing.assert_allclose(np.sort(got["scores"]), np.sort(want["scores"]), rtol=0, atol=score_tolerance)


@pytest.mark.parametrize("name", ["maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn"])
def test_masks_and_keypoints_agree_with_torchvision(name):
    # Mask R-CNN pastes each box's 28 x 28 mask into the image at the
    # box's size (a Resize to sizes the data decides, in a Loop over the
    # detections); Keypoint R-CNN finds each keypoint at the maximum of
    # its heatmap resized to its box
    model = _model(name, 0.05, min_size=320, max_size=320)
    lib = _export(model, 320)
    counts = []
    heatmaps = []
    if "keypoint" in name:
        model.roi_heads.keypoint_predictor.register_forward_hook(lambda m, args, out: heatmaps.append(out))
    for seed in (1, 2):
        x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            want = {k: t.numpy() for k, t in model([x])[0].items()}
        got = {k: t.numpy() for k, t in zip(want, lib["main"](x.numpy()))}
        assert got["boxes"].shape == want["boxes"].shape
        index = _matching(got, want, 0.05, 1e-4)
        counts.append(len(index))
        if "masks" in want:
            np.testing.assert_allclose(got["masks"], want["masks"][index], rtol=0, atol=1e-4)
        else:
            np.testing.assert_allclose(got["keypoints_scores"], want["keypoints_scores"][index], rtol=1e-4,
                                       atol=1e-5)
            _keypoints_agree(got["keypoints"], want, index, heatmaps[-1])
    assert max(counts) >= 3  # (the weights give detections to compare)


def _keypoints_agree(got, want, index, heatmaps):
    """Each of Loom's keypoints is torchvision's, or another point of a
    plateau of its heatmap (random weights make some): torchvision's
    heatmap, resized to the box as its heatmaps_to_keypoints does, is at
    its maximum there too (to float noise)."""
    import torch.nn.functional as F
    for i, j in enumerate(index):
        box = want["boxes"][j]
        width, height = max(box[2] - box[0], 1.0), max(box[3] - box[1], 1.0)
        size = (int(np.ceil(height)), int(np.ceil(width)))
        maps = F.interpolate(heatmaps[j][:, None], size=size, mode="bicubic", align_corners=False)[:, 0].numpy()
        for k, (x, y, _) in enumerate(got[i]):
            if np.abs(np.array([x, y]) - want["keypoints"][j, k, :2]).max() < 0.01:
                continue
            col = int(round((x - box[0]) / (width / size[1]) - 0.5))
            row = int(round((y - box[1]) / (height / size[0]) - 0.5))
            top = maps[k].max()
            assert maps[k, row, col] >= top - 1e-5 * np.abs(maps[k]).max(), \
                f"keypoint {k} of detection {i} at ({x}, {y}): the heatmap there is {maps[k, row, col]}, " \
                f"its maximum {top}"
