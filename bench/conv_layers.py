"""The zoo's slowest layers, Loom against TorchScript at one thread
(docs/frontends.md, "The zoo against TorchScript"; bench/README.md):
grouped 3x3 convolutions with wide groups (RegNet) and the dilated 3x3
convolutions of DeepLabV3's ASPP, each one torch.nn.Conv2d exported to
ONNX and built with configs/host.yaml at num-threads 1, against it traced
and frozen; 10 alternating rounds, the median of the per-round ratios.

    PYTHONPATH=python /usr/bin/python3 bench/conv_layers.py

(It runs itself again with OpenBLAS at its best kernel: bench/peers.py.)
"""
import io
import pathlib
import statistics
import sys
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()  # before NumPy and PyTorch load OpenBLAS (bench/peers.py)

import torch
from threadpoolctl import threadpool_limits

import loom
from loom.frontend import onnx as lonnx

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROUNDS = 10


def config():
    text = (ROOT / "configs" / "host.yaml").read_text().replace("num-threads: 0", "num-threads: 1")
    return loom.Config.parse(text, "host.yaml (num-threads 1)")


def compare(name, layer, x):
    """Prints both sides' median time and the median per-round ratio."""
    layer.eval()
    onnx = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(layer, x, onnx, opset_version=13)
    ours = loom.build(lonnx.from_onnx(onnx.getvalue()), config())["main"]
    xs = x.numpy()
    with torch.no_grad():
        peer = torch.jit.freeze(torch.jit.trace(layer, x))
        for _ in range(3):
            ours(xs)
            peer(x)
        mine, theirs = [], []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            ours(xs)
            mine.append(time.perf_counter() - t)
            t = time.perf_counter()
            peer(x)
            theirs.append(time.perf_counter() - t)
    ratio = statistics.median(m / t for m, t in zip(mine, theirs))
    print(f"{name:48s} loom {statistics.median(mine) * 1e3:8.2f} ms  torchscript "
          f"{statistics.median(theirs) * 1e3:8.2f} ms  ratio {ratio:.2f}", flush=True)


def main():
    torch.set_num_threads(1)
    conv = torch.nn.Conv2d
    with threadpool_limits(limits=1, user_api="blas"):
        compare("grouped 3x3, 896 ch in 7 groups, 14x14", conv(896, 896, 3, padding=1, groups=7),
                torch.randn(1, 896, 14, 14))
        compare("grouped 3x3, 2048 ch in 16 groups, 7x7", conv(2048, 2048, 3, padding=1, groups=16),
                torch.randn(1, 2048, 7, 7))
        compare("3x3, 896 ch, 14x14 (no groups)", conv(896, 896, 3, padding=1), torch.randn(1, 896, 14, 14))
        for d in (12, 24, 36):
            compare(f"dilated 3x3, 960 -> 256, 20x20, dilation {d}", conv(960, 256, 3, padding=d, dilation=d),
                    torch.randn(1, 960, 20, 20))
        compare("1x1, 960 -> 256, 20x20", conv(960, 256, 1), torch.randn(1, 960, 20, 20))


if __name__ == "__main__":
    main()
