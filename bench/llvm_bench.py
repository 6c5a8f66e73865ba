#!/usr/bin/python3
"""Benchmarks of the llvm target against its peers, in one run
(bench/README.md, "llvm").  Loom's models are built with `loomc build`
(configs/host.yaml), loaded into this process and called from Python,
timed around each call as the peers (NumPy/OpenBLAS, PyTorch eager) are;
before, Loom was timed in `loomc run --bench`'s C++ loop.  The sides
alternate in 5 rounds (peers.in_rounds) and each figure is the median of the rounds'
ratios.  Threads: every figure runs with 1 and with 2 threads (Loom:
loom.runtime.set_num_threads; NumPy: OPENBLAS_NUM_THREADS; PyTorch: the
fastest of its intra-op and OpenBLAS thread settings, printed), each
thread count in a child process whose OpenBLAS starts at its best
kernel (peers.py).

Usage: /usr/bin/python3 bench/llvm_bench.py [--runs N]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()

from timing import median_ms  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
LOOMC = pathlib.Path(os.environ.get("LOOMC", ROOT / "build" / "bin" / "loomc"))
CONFIG = ROOT / "configs" / "host.yaml"


class Loom:
    """A model of text built into a library, loaded here, called on
    random inputs from Python."""

    def __init__(self, model, tmp, threads):
        import numpy as np
        import loom
        lib = pathlib.Path(tmp) / (pathlib.Path(model).stem + ".so")
        subprocess.run([str(LOOMC), "build", str(model), "--config", str(CONFIG), "-o", str(lib)], check=True)
        self.module = loom.runtime.load_module(str(lib))
        self.main = self.module["main"]
        rng = np.random.default_rng(1)
        self.args = [rng.random([d.value for d in p.annotation.shape], dtype=np.float32)
                     for p in loom.ir.load(str(model))["main"].params]
        loom.runtime.set_num_threads(threads)

    def __call__(self, runs):
        return median_ms(lambda: self.main(*self.args), runs)


def line(name, loom, peer, unit, ratio, target):
    print(f"  {name:<34} loom {loom:9.3f} {unit:<6} | peer {peer:9.3f} {unit:<6} | ratio {ratio:5.2f} | {target}", flush=True)


def child(threads, runs):
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    tmp = pathlib.Path(tempfile.mkdtemp())
    print(f"threads: {threads}; {peers.blas_kernel()}")

    # fp32 matmul 1024^3, GFLOP/s.
    (tmp / "mm.loom").write_text("@main = fn(%a: Tensor[(1024, 1024), float32], %b: Tensor[(1024, 1024), float32]) "
                                 "-> Tensor[(1024, 1024), float32] { matmul(%a, %b) }\n")
    flops = 2 * 1024 ** 3
    a, b = (np.random.default_rng(k).random((1024, 1024), dtype=np.float32) for k in (1, 2))
    ours, theirs, ratio = peers.in_rounds(Loom(tmp / "mm.loom", tmp, threads), lambda k: median_ms(lambda: a @ b, k), runs)
    line("matmul 1024^3 (GFLOP/s)", flops / ours / 1e6, flops / theirs / 1e6, "GF/s", 1 / ratio,
         f"target >= 0.6 (NumPy at {threads} OpenBLAS threads)")

    # relu(a + b) on 16M floats: effective bandwidth against np.copyto.
    n = 1 << 24
    (tmp / "ew.loom").write_text(f"@main = fn(%a: Tensor[({n}), float32], %b: Tensor[({n}), float32]) "
                                 f"-> Tensor[({n}), float32] {{ relu(add(%a, %b)) }}\n")
    src = np.random.default_rng(3).random(n, dtype=np.float32)
    dst = np.empty_like(src)
    ours, theirs, ratio = peers.in_rounds(Loom(tmp / "ew.loom", tmp, threads),
                                    lambda k: median_ms(lambda: np.copyto(dst, src), k), runs)
    # Bandwidth: Loom moves 3 arrays, np.copyto 2.
    line("relu(a+b) 16M (GB/s) vs copyto", 3 * 4 * n / ours / 1e6, 2 * 4 * n / theirs / 1e6, "GB/s",
         1.5 / ratio, "target >= 0.8 (np.copyto runs on one thread)")

    # MLP 784-512-512-10 at batch 64: latency against PyTorch eager.
    layers = [torch.nn.Linear(784, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 10)]
    x = torch.randn(64, 784)

    def mlp():
        with torch.no_grad():
            h = torch.relu(layers[0](x))
            h = torch.relu(layers[1](h))
            return torch.softmax(layers[2](h), dim=-1)

    peer, setting = peers.torch_timer(mlp, threads)
    ours, theirs, ratio = peers.in_rounds(Loom(ROOT / "examples" / "mlp.loom", tmp, threads), peer, runs * 4)
    line("MLP 784-512-512-10, batch 64 (ms)", ours, theirs, "ms", ratio, f"target <= 1.2 ({setting})")

    # The small CNN of examples/cnn.loom (3x3 convolutions with padding,
    # bias, ReLU, 2x2 max pooling, dense, softmax) against PyTorch eager.
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

    peer, setting = peers.torch_timer(cnn, threads)
    ours, theirs, ratio = peers.in_rounds(Loom(ROOT / "examples" / "cnn.loom", tmp, threads), peer, runs * 4)
    line("CNN examples/cnn.loom, batch 8 (ms)", ours, theirs, "ms", ratio, f"no target, reported ({setting})")


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
    print(f"llvm target benchmarks (medians of {args.runs}+ runs in 5 alternating rounds; both sides "
          "timed around each call from Python)")
    for threads in (1, 2):
        env = peers.peer_env(OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        env.pop("LOOM_NUM_THREADS", None)
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
