"""Timing for the Python benchmarks (bench/README.md): the median of
`runs` calls after `warmup` untimed ones, in milliseconds."""
import statistics
import time


def median_ms(f, runs, warmup=3):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3
