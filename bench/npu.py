"""The reference NPU's simulator and its compile time (docs/npu.md,
"Figures"; bench/README.md).

For the examples' CNN (batch 8, 28x28) and torchvision's MobileNetV2
(random weights, batch norms folded, 1x3x96x96): the same module built
with configs/npu.yaml (partitioned: the NPU's regions run on its
simulator) and with configs/host.yaml (every operator as llvm machine
code, the peer).  Prints, each the median of ROUNDS rounds:

* compile time, partitioned and not, and their ratio;
* a call's time on both, their ratio (the simulator's cost), and the
  simulated MACs per host second;
* the cycle report: simulated cycles, MACs, matrix-unit utilisation.

    PYTHONPATH=python /usr/bin/python3 bench/npu.py [RUNS] [ROUNDS]
"""
import pathlib
import statistics
import sys
import time

import numpy as np

import loom
from timing import median_ms

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
NPU, HOST = str(ROOT / "configs" / "npu.yaml"), str(ROOT / "configs" / "host.yaml")


def cnn():
    rng = np.random.default_rng(0)
    shapes = [(8, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1), (16, 8, 3, 3), (16, 1, 1), (10, 784), (10,)]
    return loom.parse((ROOT / "examples" / "cnn.loom").read_text(), "cnn.loom"), [
        rng.standard_normal(s).astype(np.float32) * 0.2 for s in shapes]


def mobilenet_v2():
    import torch
    import torchvision
    sys.path.insert(0, str(ROOT / "tests" / "python" / "frontend"))
    from model_util import randomize_batch_norms
    from loom.frontend.torchscript import from_torchscript
    torch.manual_seed(0)
    model = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
    x = torch.randn(1, 3, 96, 96)
    with torch.no_grad():
        return from_torchscript(model, [x]), [x.numpy()]


def timed_build(module, config):
    start = time.perf_counter()
    lib = loom.build(module, config)
    return lib, time.perf_counter() - start


def bench(name, module, inputs):
    builds = {"npu": [], "host": []}
    calls = {"npu": [], "host": []}
    for _ in range(ROUNDS):
        for kind, config in (("npu", NPU), ("host", HOST)):
            lib, seconds = timed_build(module, config)
            builds[kind].append(seconds)
            calls[kind].append(median_ms(lambda: lib["main"](*inputs), RUNS))
            if kind == "npu":
                report = lib.profile()["npu"]["regions"]
                got = lib["main"](*inputs).numpy()
            else:
                want = lib["main"](*inputs).numpy()
    cycles = sum(r["cycles"] for r in report.values())
    macs = sum(r["macs"] for r in report.values())
    b = {k: statistics.median(v) for k, v in builds.items()}
    c = {k: statistics.median(v) for k, v in calls.items()}
    print(f"{name}: {len(report)} npu regions; max |npu - llvm| / max |llvm| "
          f"{float(np.abs(got - want).max() / np.abs(want).max()):.1e}")
    print(f"  compile   partitioned {b['npu']:6.2f} s   llvm only {b['host']:6.2f} s   ratio {b['npu'] / b['host']:5.2f}")
    print(f"  call      simulated {c['npu']:9.2f} ms   llvm {c['host']:8.3f} ms   ratio {c['npu'] / c['host']:7.1f}   "
          f"simulated MACs per host second {macs / (c['npu'] / 1e3) / 1e6:7.1f} M")
    print(f"  simulated {cycles} cycles ({cycles / 1e6:.3f} ms at 1 GHz), {macs} MACs, matrix unit "
          f"{macs / (cycles * 256):.1%} busy")


def main():
    print(f"{ROUNDS} rounds; calls: median of {RUNS}")
    bench("cnn (examples/cnn.loom, batch 8)", *cnn())
    bench("mobilenet_v2 (1x3x96x96)", *mobilenet_v2())


if __name__ == "__main__":
    main()
