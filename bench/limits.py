"""The machine's limits, for benchmarks that report a kernel against its
roofline (bench/README.md, "Operators against their limits").

* `fma_peak()`: multiply-adds per second one thread issues when it does
  nothing else, measured (not read from a datasheet: the clock, the
  number of FMA pipes and whether a 512-bit FMA takes one of them or
  two differ from CPU to CPU).  A small C loop of twelve independent
  chains of vector multiply-adds, as wide as the target's vectors
  (loom.target.vector_bits), compiled here with the system's C compiler
  at -O2 -march=native and called through ctypes.
* `copy_timer(nbytes)`: a timer of np.copyto moving `nbytes` (half read,
  half written), the bandwidth a kernel of that many bytes could reach
  from wherever the bytes fit (L2, L3 or memory).
* `roofline_timer(nbytes, macs, threads)`: the larger of the two: the
  time a kernel moving `nbytes` and doing `macs` multiply-adds cannot beat.

    /usr/bin/python3 bench/limits.py      # prints this machine's figures
"""
import ctypes
import functools
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]

SOURCE = r"""
typedef float vec __attribute__((vector_size(LANES * 4)));
float loom_fma_chains(long iterations) {
  vec a[12], b, c;
  for (int k = 0; k < LANES; ++k) { b[k] = 0.999999f; c[k] = 1e-6f; }
  for (int j = 0; j < 12; ++j) a[j] = c * (float)(j + 1);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) a[j] = a[j] * b + c;
  }
  float sum = 0;
  for (int j = 0; j < 12; ++j)
    for (int k = 0; k < LANES; ++k) sum += a[j][k];
  return sum;
}
"""


def lanes():
    sys.path.insert(0, str(ROOT / "python"))
    import loom
    return max(loom.target.vector_bits(loom.target.host()) // 32, 4)


@functools.lru_cache(maxsize=None)
def fma_peak(width=None):
    """One thread's multiply-adds per second (float32), the best of five."""
    width = width or lanes()
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = pathlib.Path(tmp) / "peak.c", pathlib.Path(tmp) / "peak.so"
        src.write_text(SOURCE)
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-march=native", "-ffp-contract=fast", f"-DLANES={width}", "-shared", "-fPIC",
                        str(src), "-o", str(lib)], check=True)
        f = ctypes.CDLL(str(lib)).loom_fma_chains
        f.argtypes, f.restype = [ctypes.c_long], ctypes.c_float
        iterations = 2_000_000
        f(iterations)  # warm: the clock up, the page in
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            f(iterations)
            best = min(best, time.perf_counter() - t)
    return iterations * 12 * width / best


def copy_timer(nbytes):
    """A timer (runs -> median ms) of np.copyto moving `nbytes` in all."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from timing import median_ms
    src = np.ones(max(nbytes // 8, 1), np.float32)  # not zeros: calloc maps them to one shared page
    dst = np.empty_like(src)
    return lambda runs: median_ms(lambda: np.copyto(dst, src), runs)


def roofline_timer(nbytes, macs, threads=1):
    """A timer (runs -> ms): the larger of copying `nbytes` (timed now, one
    thread, as np.copyto runs) and `macs` multiply-adds at the FMA peak of
    `threads` threads."""
    copy = copy_timer(nbytes)
    compute_ms = macs / (fma_peak() * threads) * 1e3
    return lambda runs: max(copy(runs), compute_ms)


if __name__ == "__main__":
    peak = fma_peak()
    print(f"FMA peak, one thread, {lanes()} lanes: {peak / 1e9:.1f} G multiply-adds/s "
          f"({2 * peak / 1e9:.1f} GFLOP/s)")
    for n in (1 << 18, 1 << 21, 1 << 24, 1 << 27):
        ms = copy_timer(n)(50)
        print(f"np.copyto of {n >> 10} KiB moved: {ms:.4f} ms, {n / ms / 1e6:.1f} GB/s")
