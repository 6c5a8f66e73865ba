#!/usr/bin/python3
"""Cost of calling compiled code from Python (bench/README.md, "Python").

Loom: a compiled function that returns its argument (no kernel: the VM
call and the argument checks) and one that runs relu on one element,
called with a loom NDArray and with a NumPy array (exported through
DLPack on each call).  Peer, in the same run: PyTorch eager's torch.relu
on a one-element tensor.  Medians of 7 batches.

Usage: PYTHONPATH=python /usr/bin/python3 bench/python_call_bench.py
"""
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()  # before NumPy and PyTorch load OpenBLAS (bench/peers.py)

import numpy as np  # noqa: E402
import loom  # noqa: E402


def median_us(fn, calls=20000, batches=7):
    for _ in range(1000):
        fn()
    times = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def main():
    import torch
    torch.set_num_threads(1)
    config = str(ROOT / "configs" / "host.yaml")
    noop = loom.build(loom.parse("@main = fn(%x: Tensor[(1,), float32]) { %x }"), config)["main"]
    relu = loom.build(loom.parse("@main = fn(%x: Tensor[(1,), float32]) { relu(%x) }"), config)["main"]
    x = np.zeros(1, np.float32)
    nd = loom.nd.array(x)
    t = torch.zeros(1)
    peer = median_us(lambda: torch.relu(t))
    print("Python call overhead (median of 7 batches of 20000 calls)")
    for name, fn, target in [("no-op, NDArray argument", lambda: noop(nd), "target < 3 us"),
                             ("no-op, NumPy argument", lambda: noop(x), ""),
                             ("relu, NDArray argument", lambda: relu(nd), ""),
                             ("relu, NumPy argument", lambda: relu(x), "")]:
        loom_us = median_us(fn)
        print(f"  {name:<26} loom {loom_us:6.2f} us | peer torch.relu {peer:6.2f} us | ratio {loom_us / peer:5.2f} | {target}")


if __name__ == "__main__":
    main()
