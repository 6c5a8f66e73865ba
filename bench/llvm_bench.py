#!/usr/bin/python3
"""Benchmarks of the llvm target against its peers, in one run
(bench/README.md, "llvm").  Loom runs through `loomc run --bench N`, which
prints the median latency of N calls of the compiled function; the peers
(NumPy/OpenBLAS, PyTorch eager) run in this process.  Each figure prints
Loom, the peer, the ratio and the target.  Threads: every figure runs with
1 and with 2 threads (LOOM_NUM_THREADS, OPENBLAS_NUM_THREADS,
torch.set_num_threads), each thread count in a child process so that
OpenBLAS sees its setting before it starts.

Usage: /usr/bin/python3 bench/llvm_bench.py [--runs N]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

from timing import median_ms

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOOMC = pathlib.Path(os.environ.get("LOOMC", ROOT / "build" / "bin" / "loomc"))
CONFIG = ROOT / "configs" / "host.yaml"


def loom_median_ms(model, runs, threads):
    env = dict(os.environ, LOOM_NUM_THREADS=str(threads))
    out = subprocess.run([str(LOOMC), "run", str(model), "--config", str(CONFIG), "--seed", "1", "--bench", str(runs)],
                         capture_output=True, text=True, env=env, check=True).stdout
    return float(re.search(r"median ([0-9.e+-]+) ms", out).group(1))


def line(name, loom, peer, unit, ratio, target):
    print(f"  {name:<34} loom {loom:9.3f} {unit:<6} | peer {peer:9.3f} {unit:<6} | ratio {ratio:5.2f} | {target}", flush=True)


def child(threads, runs):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    tmp = pathlib.Path(tempfile.mkdtemp())
    print(f"threads: {threads}")

    # fp32 matmul 1024^3, GFLOP/s.
    (tmp / "mm.loom").write_text("@main = fn(%a: Tensor[(1024, 1024), float32], %b: Tensor[(1024, 1024), float32]) "
                                 "-> Tensor[(1024, 1024), float32] { matmul(%a, %b) }\n")
    flops = 2 * 1024 ** 3
    loom = flops / loom_median_ms(tmp / "mm.loom", runs, threads) / 1e6
    a, b = (np.random.default_rng(k).random((1024, 1024), dtype=np.float32) for k in (1, 2))
    peer = flops / median_ms(lambda: a @ b, runs) / 1e6
    line("matmul 1024^3 (GFLOP/s)", loom, peer, "GF/s", loom / peer, "target >= 0.6")

    # relu(a + b) on 16M floats: effective bandwidth against np.copyto.
    n = 1 << 24
    (tmp / "ew.loom").write_text(f"@main = fn(%a: Tensor[({n}), float32], %b: Tensor[({n}), float32]) "
                                 f"-> Tensor[({n}), float32] {{ relu(add(%a, %b)) }}\n")
    loom = 3 * 4 * n / loom_median_ms(tmp / "ew.loom", runs, threads) / 1e6
    src = np.random.default_rng(3).random(n, dtype=np.float32)
    dst = np.empty_like(src)
    peer = 2 * 4 * n / median_ms(lambda: np.copyto(dst, src), runs) / 1e6
    line("relu(a+b) 16M (GB/s) vs copyto", loom, peer, "GB/s", loom / peer, "target >= 0.8")

    # MLP 784-512-512-10 at batch 64: latency against PyTorch eager.
    loom = loom_median_ms(ROOT / "examples" / "mlp.loom", runs * 4, threads)
    layers = [torch.nn.Linear(784, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)]
    x = torch.randn(64, 784)

    def mlp():
        with torch.no_grad():
            h = torch.relu(layers[0](x))
            h = torch.relu(layers[1](h))
            return torch.softmax(layers[2](h), dim=-1)

    peer = median_ms(mlp, runs * 4)
    line("MLP 784-512-512-10, batch 64 (ms)", loom, peer, "ms", loom / peer, "target <= 1.2")

    # The small CNN of examples/cnn.loom (3x3 convolutions with padding,
    # bias, ReLU, 2x2 max pooling, dense, softmax) against PyTorch eager.
    loom = loom_median_ms(ROOT / "examples" / "cnn.loom", runs * 4, threads)
    F = torch.nn.functional
    x = torch.randn(8, 1, 28, 28)
    k1, c1 = torch.randn(8, 1, 3, 3), torch.randn(8, 1, 1)
    k2, c2 = torch.randn(16, 8, 3, 3), torch.randn(16, 1, 1)
    w, b = torch.randn(10, 784), torch.randn(10)

    def cnn():
        with torch.no_grad():
            y1 = F.max_pool2d(torch.relu(F.conv2d(x, k1, padding=1) + c1), 2, 2)
            y2 = F.max_pool2d(torch.relu(F.conv2d(y1, k2, padding=1) + c2), 2, 2)
            return torch.softmax(F.linear(y2.flatten(1), w, b), dim=-1)

    peer = median_ms(cnn, runs * 4)
    line("CNN examples/cnn.loom, batch 8 (ms)", loom, peer, "ms", loom / peer, "no target (reported)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--child", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.runs)
        return
    if not LOOMC.exists():
        sys.exit(f"{LOOMC} is missing: run 'bash scripts/setup.sh' first")
    print(f"llvm target benchmarks (medians of {args.runs}+ runs; Loom through {LOOMC.name} run --bench)")
    for threads in (1, 2):
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        subprocess.run([sys.executable, __file__, "--child", str(threads), "--runs", str(args.runs)], env=env, check=True)
    # Compile time: the MLP from text to a library (`loomc build`, a whole
    # process: plugin loading, passes, LLVM, the system linker).
    times = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([str(LOOMC), "build", str(ROOT / "examples" / "mlp.loom"), "--config", str(CONFIG), "-o",
                            f"{d}/mlp.so"], check=True)
            times.append(time.perf_counter() - t)
    print(f"  {'compile MLP text -> library (s)':<34} loom {statistics.median(times):9.3f} s      | target < 1 s")


if __name__ == "__main__":
    main()
