"""What every Python benchmark does for its peers (bench/README.md,
"Peers at their best").

* OpenBLAS (NumPy's and PyTorch's BLAS here) at its best kernel.  The
  machines set OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512, which
  halve its speed on a CPU with AVX-512; but unset, Debian's OpenBLAS
  0.3.21 does not recognise every newer CPU and falls back to its generic
  Prescott kernel (on this project's AVX-512/AMX machines: NumPy's 1024^3
  matmul at 27 GFLOP/s, against 68 with Haswell and 110-134 with
  SkylakeX or Cooperlake).  `peer_env()` drops OPENBLAS_L2_SIZE and sets
  OPENBLAS_CORETYPE to the newest kernel the CPU's flags allow
  (`best_openblas_kernel()`).  OpenBLAS reads them when it loads, so a
  benchmark calls `blas_at_best()` before it imports NumPy or PyTorch:
  the script runs again in that environment.  Loom does not use
  OpenBLAS, so its side is not affected; tests and CI keep the machine's
  variables.
* `blas_kernel()` says which OpenBLAS kernel NumPy and PyTorch run, for
  the benchmark's header.
* `best_setting()` times a peer under each of its candidate thread
  settings and keeps the fastest, so that a peer with two thread pools
  (PyTorch's intra-op threads and OpenBLAS's) is neither oversubscribed
  nor held to one core when two help it.
* `alternate()` times several sides in rounds, the order rotating, and
  gives each side's per-round medians; `in_rounds()` does it for two
  sides and gives their medians and the median of the per-round ratios;
  `torch_timer()` times PyTorch at its best setting.  `alternate()` and
  `in_rounds()` pause PAUSE_S before each side: OpenBLAS's threads spin
  for a while after a call (0.11 s of a whole core here after PyTorch at
  two threads, measured with getrusage over an idle wait), and a side
  that starts then runs on one core of two; Loom's threads spin for 50 µs
  at most, then sleep.
"""
import contextlib
import os
import statistics
import sys
import time

HANDICAPS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PAUSE_S = 0.25  # before each side: longer than a peer's threads spin after a call


def cpu_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def best_openblas_kernel(flags=None):
    """The newest OpenBLAS 0.3.21 kernel (an OPENBLAS_CORETYPE) whose
    instructions this CPU has, or None to let OpenBLAS detect it."""
    flags = cpu_flags() if flags is None else flags
    avx512 = {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"}
    if avx512 <= flags and "avx512_bf16" in flags:
        return "Cooperlake"
    if avx512 <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def peer_env(base=None, **extra):
    """An environment for a peer's process: OpenBLAS at its best kernel."""
    env = {k: v for k, v in (base or os.environ).items() if k not in HANDICAPS}
    kernel = best_openblas_kernel()
    if kernel:
        env["OPENBLAS_CORETYPE"] = kernel
    env.update({k: str(v) for k, v in extra.items()})
    return env


def blas_at_best():
    """Runs this script again with OpenBLAS at its best (peer_env), before
    any import of NumPy or PyTorch; returns when it already is."""
    env = peer_env()
    if any(os.environ.get(v) != env.get(v) for v in HANDICAPS):
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def blas_kernel():
    """'OpenBLAS 0.3.21, SkylakeX kernel, 2 threads' for the BLAS that
    NumPy (and PyTorch, which links the same one here) loaded."""
    try:
        import numpy  # noqa: F401 -- loads OpenBLAS
        from threadpoolctl import threadpool_info
    except ImportError as e:
        return f"unknown ({e})"
    found = [f"{i.get('internal_api')} {i.get('version')}, {i.get('architecture')} kernel, "
             f"{i.get('num_threads')} threads" for i in threadpool_info() if i.get("user_api") == "blas"]
    wanted = best_openblas_kernel()
    note = "" if wanted is None or os.environ.get("OPENBLAS_CORETYPE") == wanted else f" (not at its best: {wanted})"
    return ("; ".join(found) or "no BLAS loaded") + note


@contextlib.contextmanager
def torch_threads(intra, blas):
    """PyTorch at `intra` intra-op threads with OpenBLAS held to `blas`."""
    import torch
    from threadpoolctl import threadpool_limits
    before = torch.get_num_threads()
    torch.set_num_threads(intra)
    try:
        with threadpool_limits(limits=blas, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)


def torch_settings(threads):
    """Candidate (intra-op, OpenBLAS) thread counts for PyTorch at a budget
    of `threads` cores."""
    if threads == 1:
        return [(1, 1)]
    return [(threads, 1), (1, threads), (threads, threads)]


def best_setting(call, settings, enter, calls=5):
    """The setting under which `call` is fastest (median of `calls` after
    one warm-up), and that median in seconds.  `enter(setting)` is a
    context manager that applies it."""
    best = None
    for setting in settings:
        with enter(setting):
            call()
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                call()
                times.append(time.perf_counter() - t)
        median = statistics.median(times)
        if best is None or median < best[1]:
            best = (setting, median)
    return best


def alternate(sides, rounds, per_round, pause=PAUSE_S):
    """Times each side's `per_round` calls in turn, `rounds` times, the
    order rotating each round.  `sides` maps a name to a function of a
    count that returns that many per-call times (ms).  A pause between
    sides lets the last one's spinning threads go to sleep.  Returns
    {name: [per-round medians]}."""
    names = list(sides)
    out = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            time.sleep(pause)
            out[name].append(statistics.median(sides[name](per_round)))
    return out


def in_rounds(first, second, runs, rounds=5):
    """The medians of `first` and `second` (functions of a number of runs
    that return a time) and the median of their per-round ratio, timed
    alternately in `rounds` rounds of runs // rounds each (which goes
    first alternates too), so that a change in the machine's load between
    rounds cancels out of the ratio."""
    per = max(runs // rounds, 3)
    a, b = [], []

    def timed(side, out):
        time.sleep(PAUSE_S)  # the other side's spinning threads go to sleep
        out.append(side(per))

    for r in range(rounds):
        if r % 2:
            timed(second, b)
            timed(first, a)
        else:
            timed(first, a)
            timed(second, b)
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b))


def torch_timer(f, threads):
    """PyTorch running `f` at its fastest (intra-op, OpenBLAS) thread
    setting for `threads` cores: a function of a number of runs giving
    their median (ms), and the setting's label."""
    from timing import median_ms
    (intra, blas), _ = best_setting(f, torch_settings(threads), lambda s: torch_threads(*s))

    def timer(runs):
        with torch_threads(intra, blas):
            return median_ms(f, runs)

    return timer, f"torch {intra}+{blas} blas"


def ratio(per_round, ours, theirs):
    """The median of the per-round ratios ours / theirs."""
    return statistics.median(a / b for a, b in zip(per_round[ours], per_round[theirs]))
