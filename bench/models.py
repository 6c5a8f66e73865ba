"""Real models, Loom against TorchScript (docs/frontends.md; bench/README.md).

torchvision's ResNet-18 and MobileNetV2 (random weights, eval mode, batch
1, 224x224) and a 2-layer nn.TransformerEncoder (d_model 256, 4 heads, FFN
1024, sequence 128, batch 1) are exported to ONNX, imported with
loom.frontend.onnx and built with configs/host.yaml (num-threads set to
1 or 2); the peer is torch.jit.trace + torch.jit.freeze under no_grad with
torch.set_num_threads to the same count, and OpenBLAS (which torch's
linear layers call, with a thread pool of its own that set_num_threads
does not limit) held to it with threadpoolctl.  Same inputs, medians of
RUNS calls after warm-up, ratio Loom / TorchScript (below 1: Loom is
faster); "cores" is the CPU time over the wall time of each side's timed
calls, which shows how many cores it kept busy.
Also: ResNet-18 from the .onnx file on disk to a loaded library, then
export_library of it and load_module of the file.

    PYTHONPATH=python /usr/bin/python3 bench/models.py [RUNS] [MODEL...]
"""
import io
import pathlib
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
import torchvision
from threadpoolctl import threadpool_limits

import loom
from loom.frontend import onnx as lonnx
from timing import median_ms

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 20
WANTED = [a for a in sys.argv[1:] if not a.isdigit()]


def models():
    torch.manual_seed(0)
    yield "resnet18", torchvision.models.resnet18(), (1, 3, 224, 224)
    yield "mobilenet_v2", torchvision.models.mobilenet_v2(), (1, 3, 224, 224)
    yield "transformer", torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2), (1, 128, 256)


def config(threads):
    text = (ROOT / "configs" / "host.yaml").read_text().replace("num-threads: 0", f"num-threads: {threads}")
    assert f"num-threads: {threads}" in text
    return loom.Config.parse(text, f"host.yaml (num-threads {threads})")


def timed(f):
    """The median of RUNS calls in ms, and the cores they kept busy (CPU
    time over wall time of all of them)."""
    wall, cpu = time.perf_counter(), time.process_time()
    ms = median_ms(f, RUNS)
    return ms, (time.process_time() - cpu) / (time.perf_counter() - wall)


def exported(module, x):
    buffer = io.BytesIO()
    torch.onnx.export(module, x, buffer, opset_version=13)
    return buffer.getvalue()


def main():
    print(f"Loom vs TorchScript, medians of {RUNS} runs (ms); torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads by default")
    rows = []
    for name, module, shape in models():
        if WANTED and name not in WANTED:
            continue
        module.eval()
        x = torch.randn(*shape)
        data = exported(module, x)
        with torch.no_grad():
            scripted = torch.jit.freeze(torch.jit.trace(module, x))
            want = module(x).numpy()
        if name == "resnet18":
            with tempfile.TemporaryDirectory() as tmp:
                path = pathlib.Path(tmp) / "resnet18.onnx"
                path.write_bytes(data)
                start = time.perf_counter()
                lib = loom.build(lonnx.from_onnx(path), config(1))
                print(f"resnet18: the .onnx file to a loaded library in {time.perf_counter() - start:.2f} s")
                so = pathlib.Path(tmp) / "resnet18.so"
                start = time.perf_counter()
                lib.export_library(str(so))
                exported_s = time.perf_counter() - start
                start = time.perf_counter()
                loaded = loom.runtime.load_module(str(so))
                loaded_s = time.perf_counter() - start
                error = np.abs(loaded["main"](x.numpy()).numpy() - want).max() / np.abs(want).max()
                print(f"resnet18: export_library {exported_s:.2f} s ({so.stat().st_size / 2**20:.1f} MiB), "
                      f"load_module {loaded_s:.2f} s (max error / scale {error:.1e})")
        mod = lonnx.from_onnx(onnx.load_from_string(data))
        xs = x.numpy()
        for threads in (1, 2):
            lib = loom.build(mod, config(threads))
            got = lib["main"](xs).numpy()
            error = np.abs(got - want).max() / np.abs(want).max()
            # Loom first: PyTorch's OpenMP threads keep spinning for a while
            # after its last call and took the second core from Loom's
            # worker when Loom ran right after it (2.9 ms -> 5.8 ms for the
            # encoder at 2 threads); Loom's threads spin 50 us at most.
            ours, our_cores = timed(lambda: lib["main"](xs))
            torch.set_num_threads(threads)
            with torch.no_grad(), threadpool_limits(limits=threads, user_api="blas"):
                peer, peer_cores = timed(lambda: scripted(x))
            rows.append((name, threads, ours, peer, error))
            print(f"{name:13s} {threads} thread{'s' if threads > 1 else ' '}  loom {ours:8.2f} ({our_cores:.1f} cores)  "
                  f"torchscript {peer:8.2f} ({peer_cores:.1f} cores)  ratio {ours / peer:5.2f}  "
                  f"(max error / scale {error:.1e})")
    return rows


if __name__ == "__main__":
    main()
