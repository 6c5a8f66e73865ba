"""A real model in: torchvision's ResNet-18 (random weights, eval mode; no
download) exported to ONNX with torch, imported with
loom.frontend.onnx.from_onnx, compiled for this CPU (configs/host.yaml)
and compared with PyTorch on the same image.  docs/frontends.md.

    PYTHONPATH=python /usr/bin/python3 examples/python/resnet18_onnx.py
"""
import io
import pathlib
import sys
import time

import numpy as np
import onnx
import torch
import torchvision

import loom
from loom.frontend import onnx as lonnx

ROOT = pathlib.Path(__file__).resolve().parents[2]

torch.manual_seed(0)
model = torchvision.models.resnet18().eval()
image = torch.randn(1, 3, 224, 224)
buffer = io.BytesIO()
torch.onnx.export(model, image, buffer, opset_version=13, input_names=["image"])
print(f"exported ResNet-18 to ONNX: {len(buffer.getvalue()) / 1e6:.1f} MB")

start = time.perf_counter()
mod = lonnx.from_onnx(onnx.load_from_string(buffer.getvalue()))
imported = time.perf_counter()
lib = loom.build(mod, ROOT / "configs" / "host.yaml")
built = time.perf_counter()
print(f"imported in {imported - start:.2f} s, built in {built - imported:.2f} s")

got = lib["main"](image.numpy()).numpy()
with torch.no_grad():
    want = model(image).numpy()
error = np.abs(got - want).max() / np.abs(want).max()
print(f"top-5 classes: loom {np.argsort(-got[0])[:5].tolist()}, torch {np.argsort(-want[0])[:5].tolist()}")
print(f"max |loom - torch| / max |torch| = {error:.1e}")
sys.exit(0 if error < 1e-4 else "resnet18_onnx: Loom and PyTorch differ")
