"""A detector whole, through ONNX (docs/frontends.md, "Shapes the data
decides" and "Control flow"): torchvision's SSDlite320-MobileNetV3 as
torch.onnx.export writes it (a NonZero per class, a TopK whose k the data
decides, batched NMS under an If) against torchvision on images whose
detections differ.  Random weights, scaled so that scores differ (with
torchvision's initialisation every score is 1/91 and the order is the
tie-breaking's); detections are compared as a set: two whose scores
differ by less than float noise may swap places."""
import io

import numpy as np

import loom

from conftest import ROOT, optional_import

torch = optional_import("torch")
torchvision = optional_import("torchvision")
HOST = str(ROOT / "configs" / "host.yaml")


def _model():
    torch.manual_seed(0)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 4:  # He's scale: activations stay of order one through the network
                p.copy_(torch.randn(p.shape, generator=generator) * (2.0 / p[0].numel()) ** 0.5)
            elif "bias" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.1)
    return model


def test_ssdlite_detections_agree_with_torchvision():
    from loom.frontend import onnx as lonnx
    model = _model()
    buffer = io.BytesIO()
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(model, ([torch.rand(3, 320, 320)],), buffer, opset_version=13, input_names=["x"], **kw)
    lib = loom.build(lonnx.from_onnx(buffer.getvalue()), HOST)
    for seed in (1, 2):
        x = torch.rand(3, 320, 320, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            want = model([x])[0]
        boxes, scores, labels = (t.numpy() for t in lib["main"](x.numpy()))
        ref_boxes, ref_scores, ref_labels = (want[k].numpy() for k in ("boxes", "scores", "labels"))
        assert boxes.shape == ref_boxes.shape and len(boxes) > 0
        for b, s, label in zip(boxes, scores, labels):
            same = (ref_labels == label) & (np.abs(ref_boxes - b).max(axis=1) < 0.01) & (np.abs(ref_scores - s) < 1e-4)
            assert same.any(), f"seed {seed}: detection {b} score {s} label {label} is not torchvision's"
        np.testing.assert_allclose(np.sort(scores), np.sort(ref_scores), rtol=1e-4)
