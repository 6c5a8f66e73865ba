"""The torchvision zoo through both importers (docs/frontends.md, "The
zoo"): every classification model of torchvision.models, the
segmentation models (FCN, DeepLabV3, LR-ASPP), a detection backbone with
its feature pyramid (ResNet-18 FPN), the video classification models
of torchvision.models.video (3-D convolutions; clips of 8 or 16 frames)
and the optical flow models of torchvision.models.optical_flow (RAFT: two
images in, a flow per refinement, grid_sample), each with random weights (batch
norms' statistics randomized, heads initialised to zero given random
values so outputs are not constant), exported with torch.onnx.export at
opset 13 (16 for RAFT's GridSample) and imported with from_onnx, and imported with from_fx; each
built for configs/host.yaml and compared with PyTorch: every output within
1e-4 of its scale (its largest magnitude).

    python3 tests/python/zoo/zoo.py [--onnx|--fx] [NAME...]

checks the models named (default: all) and prints a line each: the
largest error relative to the output's scale, or the Loom error.
test_zoo.py runs a sample (LOOM_ZOO=all: all of them).
"""
import io
import os
import pathlib
import sys
import tempfile
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[3]
HOST = str(ROOT / "configs" / "host.yaml")
TOLERANCE = 1e-4  # of the output's scale
SEGMENTATION = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50", "deeplabv3_resnet101",
                "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
DETECTION = ["resnet18_fpn"]
# Models whose ONNX file passes protobuf's 2 GiB limit are exported to a
# file with external data (630 M parameters each; 60 to 110 s and 8 to
# 13 GiB to check here).
LARGE = {"vit_h_14", "regnet_y_128gf"}
# Models PyTorch's own exporter cannot write at opset 13: not tried through
# ONNX (the zoo's run would stop there), the reason printed instead.
EXPORTER_FAILS = {
    "swin_v2_t": "torch.onnx.export refuses aten::zero at opset 13",
    "swin_v2_s": "torch.onnx.export refuses aten::zero at opset 13",
    "swin_v2_b": "torch.onnx.export refuses aten::zero at opset 13",
    "mvit_v2_s": "torch.onnx.export runs out of memory (past 24 GiB)",
}


def classification():
    import torchvision
    return sorted(torchvision.models.list_models(module=torchvision.models))


def video():
    import torchvision
    return sorted(torchvision.models.list_models(module=torchvision.models.video))


def optical_flow():
    import torchvision
    return sorted(torchvision.models.list_models(module=torchvision.models.optical_flow))


def all_models():
    return classification() + SEGMENTATION + DETECTION + video() + optical_flow()


def opset(name):
    """The ONNX opset a model is exported at: 13, or 16 where it needs
    GridSample (RAFT)."""
    return 16 if name.startswith("raft") else 13


def inputs(x):
    """make()'s example input as a tuple of tensors (RAFT takes two)."""
    return x if isinstance(x, tuple) else (x,)


def _input_size(name):
    """(frames, height, width) of the model's example input: the smallest
    its fixed parts take (S3D's last pool is 2 x 7 x 7, MViT's positions
    are learned for 16 x 224 x 224), so the zoo takes minutes, not hours."""
    if name in ("s3d",) or name.startswith("mvit"):
        return 16, 224, 224
    if name.startswith(("r3d", "mc3", "r2plus1d", "swin3d")):
        return 8, 112, 112
    if name == "inception_v3":
        return None, 299, 299
    if name.startswith(("fcn", "deeplab", "lraspp")):
        return None, 160, 160
    if name.startswith("raft"):  # (its feature maps are an eighth of the image)
        return None, 128, 128
    return None, 224, 224


def make(name, seed=0):
    """(model in eval mode, example input) with random weights; the input
    is a tuple of tensors for a model taking several (inputs())."""
    import torch
    import torchvision
    torch.manual_seed(seed)
    if name == "resnet18_fpn":
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
        model = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    elif name in SEGMENTATION:
        model = torchvision.models.get_model(name, weights=None, weights_backbone=None)
    else:
        model = torchvision.models.get_model(name, weights=None)
    model.eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
            for p in m.parameters(recurse=False):
                if p.numel() > 1 and not p.any():  # a head initialised to zero
                    p.normal_(0, 0.02)
    frames, height, width = _input_size(name)
    if name in optical_flow():  # two frames of a video
        return model, (torch.randn(1, 3, height, width), torch.randn(1, 3, height, width))
    return model, torch.randn(1, 3, *([frames] if frames else []), height, width)


def _reference(model, x):
    import torch
    with torch.no_grad():
        out = model(*inputs(x))
    return [t.numpy() for t in _flat(out)]


def _flat(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _flat(v)
    elif hasattr(value, "logits"):
        yield value.logits
    else:
        yield value


def import_onnx(model, x, directory=None, opset_version=13):
    import torch
    from loom.frontend import onnx as lonnx
    # (Not under no_grad: there nn.MultiheadAttention takes its fused fast
    # path, aten::_native_multi_head_attention, which the exporter lacks.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if directory is None:
            buffer = io.BytesIO()
            torch.onnx.export(model, x, buffer, opset_version=opset_version)
            return lonnx.from_onnx(buffer.getvalue())
        path = os.path.join(directory, "model.onnx")
        torch.onnx.export(model, x, path, opset_version=opset_version)
        return lonnx.from_onnx(path)


def import_fx(model, x):
    from loom.frontend import fx as lfx
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lfx.from_fx(model, list(inputs(x)))


def check(name, importer, config=HOST):
    """The largest error of any output relative to its scale; raises the
    importer's or the build's error."""
    import loom
    model, x = make(name)
    want = _reference(model, x)
    if importer == "onnx":
        with tempfile.TemporaryDirectory() as directory:
            module = import_onnx(model, x, directory if name in LARGE else None, opset(name))
    else:
        module = import_fx(model, x)
    library = loom.build(module, config)
    result = library["main"](*[t.numpy() for t in inputs(x)])
    got = [result.numpy()] if hasattr(result, "numpy") else [r.numpy() for r in result]
    assert len(got) == len(want), f"{len(got)} outputs, PyTorch gives {len(want)}"
    worst = 0.0
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"an output of shape {g.shape}, PyTorch's {w.shape}"
        scale = max(float(np.abs(w).max()), 1e-30)
        worst = max(worst, float(np.abs(g.astype(np.float64) - w).max()) / scale)
    return worst


def main(argv):
    import loom
    importers = [i for i in ("onnx", "fx") if f"--{i}" in argv] or ["onnx", "fx"]
    names = [a for a in argv if not a.startswith("--")] or all_models()
    for name in names:
        for importer in importers:
            start = time.time()
            if importer == "onnx" and name in EXPORTER_FAILS:
                print(f"{name} {importer}: not tried: {EXPORTER_FAILS[name]}", flush=True)
                continue
            try:
                error = check(name, importer)
                result = f"{'ok' if error <= TOLERANCE else 'WRONG'} {error:.1e}"
            except loom.LoomError as e:
                result = "refused: " + " | ".join(str(e).splitlines()[:3])[:300]
            except AssertionError as e:
                result = f"WRONG: {e}"
            except Exception as e:  # noqa: BLE001 (PyTorch's own exporter failing, say)
                result = f"error {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            print(f"{name} {importer}: {result} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "python"))
    main(sys.argv[1:])
