"""Detectors whole, through ONNX (docs/frontends.md, "Shapes the data
decides" and "Control flow"): torchvision's SSDlite320-MobileNetV3 as
torch.onnx.export writes it (a NonZero per class, a TopK whose k the data
decides, batched NMS under an If) and Faster R-CNN-MobileNetV3-320-FPN
(RoiAlign over the proposals the data decides) against torchvision on
images whose detections differ.  Random weights, scaled so that scores differ (with
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


def _model(name, head_scale):
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 4:  # He's scale: activations stay of order one through the network
                scale = head_scale if "head" in name else 1.0  # (the RPN's: proposals of moderate scores)
                p.copy_(torch.randn(p.shape, generator=generator) * (2.0 / p[0].numel()) ** 0.5 * scale)
            elif "bias" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.1)
    return model


@pytest.mark.parametrize("name, head_scale, box_tolerance, score_tolerance", [
    ("ssdlite320_mobilenet_v3_large", 1.0, 0.01, 1e-4),
    # Two stages of random weights amplify float noise: a box's exp(regression) to 0.07 px, a score to 1.4e-4.
    ("fasterrcnn_mobilenet_v3_large_320_fpn", 0.05, 0.1, 5e-4)])
def test_detections_agree_with_torchvision(name, head_scale, box_tolerance, score_tolerance):
    from loom.frontend import onnx as lonnx
    model = _model(name, head_scale)
    buffer = io.BytesIO()
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(model, ([torch.rand(3, 320, 320)],), buffer, opset_version=13, input_names=["x"], **kw)
    lib = loom.build(lonnx.from_onnx(buffer.getvalue()), HOST)
    for seed in (1, 2):
        x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            want = model([x])[0]
        got = {k: t.numpy() for k, t in zip(want, lib["main"](x.numpy()))}  # the outputs in the dict's order
        boxes, scores, labels = got["boxes"], got["scores"], got["labels"]
        ref_boxes, ref_scores, ref_labels = (want[k].numpy() for k in ("boxes", "scores", "labels"))
        assert boxes.shape == ref_boxes.shape and len(boxes) > 0
        for b, s, label in zip(boxes, scores, labels):
            same = (ref_labels == label) & (np.abs(ref_boxes - b).max(axis=1) < box_tolerance) & \
                (np.abs(ref_scores - s) < score_tolerance)
            assert same.any(), f"seed {seed}: detection {b} score {s} label {label} is not torchvision's"
        np.testing.assert_allclose(np.sort(scores), np.sort(ref_scores), rtol=0, atol=score_tolerance)
