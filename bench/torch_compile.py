"""loom.torch.compile against TorchScript, called from PyTorch
(docs/extern-torchscript.md, "Back to PyTorch"; bench/README.md).

torchvision's ResNet-18 (random weights, eval mode, batch 1, 224x224)
compiled with loom.torch.compile (configs/host.yaml: every core) and
called with a torch tensor, giving a torch tensor (DLPack both ways); the
peer is torch.jit.trace + torch.jit.freeze of the same module under
no_grad at its fastest thread setting for the core count (intra-op and
OpenBLAS threads, bench/peers.py; printed).  ROUNDS rounds alternate the
two, which goes first alternating too, each the median of RUNS calls
after warm-up; prints the medians of
the rounds' medians and the median of the rounds' ratios Loom /
TorchScript (below 1: Loom is faster), and the largest difference of the
outputs.

    PYTHONPATH=python /usr/bin/python3 bench/torch_compile.py [RUNS] [ROUNDS]
"""
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()  # before NumPy and PyTorch load OpenBLAS (bench/peers.py)

import torch
import torchvision

import loom.torch as ltorch
from timing import median_ms

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def main():
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count())
    module = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    start = time.perf_counter()
    compiled = ltorch.compile(module, [x], config=str(ROOT / "configs" / "host.yaml"))
    print(f"loom.torch.compile(resnet18): {time.perf_counter() - start:.1f} s; torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads; {ROUNDS} rounds of {RUNS} calls")
    with torch.no_grad():
        frozen = torch.jit.freeze(torch.jit.trace(module, x))
        want = frozen(x)
        got = compiled(x)

    def peer():
        with torch.no_grad():
            return frozen(x)

    setting, _ = peers.best_setting(peer, peers.torch_settings(os.cpu_count()), lambda s: peers.torch_threads(*s))
    ours, theirs, ratios = [], [], []
    for r in range(ROUNDS):
        with peers.torch_threads(*setting):
            if r % 2:
                b = median_ms(peer, RUNS)
            a = median_ms(lambda: compiled(x), RUNS)
            if r % 2 == 0:
                b = median_ms(peer, RUNS)
        ours.append(a)
        theirs.append(b)
        ratios.append(a / b)
    print(f"resnet18  loom.torch.compile {statistics.median(ours):8.2f} ms  torchscript frozen "
          f"({setting[0]} intra-op + {setting[1]} OpenBLAS threads) "
          f"{statistics.median(theirs):8.2f} ms  ratio {statistics.median(ratios):5.2f}  "
          f"(max |loom - torch| / max |torch| {float((got - want).abs().max() / want.abs().max()):.1e})")


if __name__ == "__main__":
    main()
