#!/usr/bin/python3
"""Remote against local (bench/README.md, "RPC"; docs/rpc.md).

A loom-rpc-server on this machine (loopback, a key) and this process's
own runtime time the same library with the same evaluator
(loom.runtime.time_evaluator locally, RemoteModule.time_evaluator over
RPC): the MLP example (examples/mlp.loom, batch 64) for configs/host.yaml,
in alternating rounds (local first in even rounds, remote first in odd
ones).  Each round gives each side's median over REPEAT repeats of at
least MIN_MS each; the report gives each side's median over the rounds
and the median of the rounds' remote/local ratios (target: within 5 %).
Then the round trip of one call of @noop (bench/languages/calls.loom:
returns its argument) timed by the client's clock, beside the local
call, and the same through loomc run --remote.  No peer of another
project runs, so nothing is handicapped (bench/peers.py).

Usage: /usr/bin/python3 bench/rpc.py [--rounds N] [--min-ms MS]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python" / "rpc"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import loom  # noqa: E402
import loom.rpc  # noqa: E402
from rpc_util import Server  # noqa: E402


def build(source, out):
    subprocess.run([BUILD / "bin" / "loomc", "build", str(source), "--config", str(ROOT / "configs/host.yaml"), "-o",
                    str(out)], check=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--min-ms", type=float, default=100)
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="loom-bench-rpc-"))
    build(ROOT / "examples/mlp.loom", tmp / "mlp.so")
    build(ROOT / "bench/languages/calls.loom", tmp / "calls.so")
    rng = np.random.default_rng(0)
    shapes = [(64, 784), (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    arrays = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]

    server = Server(tmp)
    try:
        sess = loom.rpc.connect(server.address, key=server.key)
        sess.upload(tmp / "mlp.so")
        sess.upload(tmp / "calls.so")
        remote_mod = sess.load_module("mlp.so")
        remote_args = [sess.array(a) for a in arrays]
        local_fn = loom.runtime.load_module(str(tmp / "mlp.so"))["main"]
        local_args = [loom.nd.array(a) for a in arrays]
        remote_eval = remote_mod.time_evaluator("main", number=1, repeat=args.repeat, min_repeat_ms=args.min_ms)
        local_eval = loom.runtime.time_evaluator(local_fn, number=1, repeat=args.repeat, min_repeat_ms=args.min_ms)
        local, remote, ratios = [], [], []
        for r in range(args.rounds):
            order = [("local", lambda: local_eval(*local_args)), ("remote", lambda: remote_eval(*remote_args))]
            if r % 2:
                order.reverse()
            got = {name: f().median for name, f in order}
            local.append(got["local"])
            remote.append(got["remote"])
            ratios.append(got["remote"] / got["local"])
            print(f"round {r}: local {got['local'] * 1e3:.3f} ms, remote {got['remote'] * 1e3:.3f} ms, "
                  f"ratio {ratios[-1]:.3f}", flush=True)
        print(f"MLP (batch 64) time_evaluator: local median {statistics.median(local) * 1e3:.3f} ms, remote median "
              f"{statistics.median(remote) * 1e3:.3f} ms, median ratio remote/local {statistics.median(ratios):.3f} "
              f"(target within 5 %)")

        noop_remote = sess.load_module("calls.so")["noop"]
        x_remote = sess.array(np.ones(1, np.float32))
        noop_local = loom.runtime.load_module(str(tmp / "calls.so"))["noop"]
        x_local = np.ones(1, np.float32)
        trips, locals_ = [], []
        for r in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.calls):
                noop_remote(x_remote)  # its result's release rides with the next call
            trips.append((time.perf_counter() - start) / args.calls)
            start = time.perf_counter()
            for _ in range(args.calls):
                noop_local(x_local)
            locals_.append((time.perf_counter() - start) / args.calls)
        print(f"no-op call: remote round trip {statistics.median(trips) * 1e6:.1f} us (one CALL request)"
              f", local {statistics.median(locals_) * 1e6:.2f} us, from Python")
        sess.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
