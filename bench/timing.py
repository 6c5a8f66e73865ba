"""Timing for the Python benchmarks (bench/README.md): per-call times,
and the median of `runs` calls after `warmup` untimed ones, in
milliseconds."""
import statistics
import time


def timed_calls(f, count):
    """Per-call times (ms) of `count` calls of f, each timed around the call."""
    times = []
    for _ in range(count):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return times


def median_ms(f, runs, warmup=3):
    for _ in range(warmup):
        f()
    return statistics.median(timed_calls(f, runs))
