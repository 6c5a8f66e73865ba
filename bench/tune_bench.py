"""Tuning against AutoSchedule and TorchScript (docs/tuning.md, "Measured").

torchvision's ResNet-18 and a 2-layer nn.TransformerEncoder (d_model 256,
4 heads, FFN 1024, sequence 128; random weights, batch 1, exported to
ONNX and imported),
built with configs/host.yaml at num-threads 1.

  tasks    each convolution of ResNet-18 and each matmul/dense of the
           encoder tuned with TRIALS candidates (loom.tune, strategy
           "model", local:2 workers): AutoSchedule's time, the tuned time
           and their ratio per task; then each whole model built with the
           database against AutoSchedule's build and TorchScript
           (torch.jit.trace + freeze, one thread, OpenBLAS held to one
           with threadpoolctl), medians of RUNS calls
           taken in turn (the three models alternate, so drift of the
           machine falls on all alike); per task, AutoSchedule's and the
           best trace are measured again in turn after the search.
  compare  three convolutions tuned with the cost model and with random search,
           the same trials and seed: the schedule each search held best
           after 8, 16, ... trials, all measured again in turn.
  rate     trials per minute on one task with local:1, local:2 and a Dask
           cluster of 1 and 2 workers (dask-scheduler and dask-worker
           processes on this machine), and a device pool of 2
           loom-rpc-servers on this machine (built here, measured there:
           docs/rpc.md).

    PYTHONPATH=python /usr/bin/python3 bench/tune_bench.py [tasks|compare|rate]... [--trials N] [--runs N]
"""
import argparse
import io
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()  # before NumPy and PyTorch load OpenBLAS (bench/peers.py)

import numpy as np
import onnx
import torch
import torchvision
from threadpoolctl import threadpool_limits

import loom
import loom._ffi
import loom.tune
from loom.frontend import onnx as lonnx

ROOT = pathlib.Path(__file__).resolve().parents[1]


def host_config(threads=1, database=None):
    """configs/host.yaml as a dict (the tuner's workers parse it again)."""
    cfg = {"target": {"kind": "llvm", "mcpu": "native", "num-threads": threads, "opt-level": 3},
           "pipeline": {"opt-level": 2, "passes": ["default"]}}
    if database:
        cfg["pipeline"]["tuning"] = {"database": str(database)}
    return cfg


def models():
    torch.manual_seed(0)
    yield "resnet18", torchvision.models.resnet18(), (1, 3, 224, 224), ("conv2d",)
    yield "transformer", torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2), (1, 128, 256), ("dense", "matmul")


def imported(module, shape):
    module.eval()
    x = torch.randn(*shape)
    buffer = io.BytesIO()
    torch.onnx.export(module, x, buffer, opset_version=13)
    return lonnx.from_onnx(onnx.load_from_string(buffer.getvalue())), x


def interleaved(fns, rounds):
    """Medians (ms) of `rounds` calls of each function, taken in turn
    (a, b, c, a, b, c, ...) so that the machine's drift (a shared VM's
    speed moved by a third within minutes) falls on all of them alike."""
    for f in fns:
        f()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, f in enumerate(fns):
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return [statistics.median(t) * 1e3 for t in times]


def remeasured(task, traces, rounds=3):
    """Each trace's time (us) measured again in this process, in turn
    (see interleaved): the median of the medians of `rounds` measurements."""
    from loom.tune import measure
    out = [[] for _ in traces]
    for _ in range(rounds):
        for k, trace in enumerate(traces):
            job = {"task": task.text, "hash": task.hash, "config": json.dumps(host_config()), "source": "<bench>",
                   "trace": trace}
            out[k].append(measure.measure_job(job)["median_us"])
    return [statistics.median(t) for t in out]


def us(t):
    return f"{t:9.1f}" if t else "        -"


def part_tasks(args, db):
    print(f"== tasks: {args.trials} trials per task, strategy model, workers local:2, one thread; "
          f"database {db}")
    for name, module, shape, kinds in models():
        mod, x = imported(module, shape)
        found = [t for t in loom.tune.tasks(mod, host_config()) if any(k in t.name for k in kinds)]
        start = time.time()
        results = loom.tune.tune(mod, host_config(), trials=args.trials * len(found), database=db,
                                 workers="local:2", tasks=found, progress=False)
        print(f"{name}: {len(found)} tasks, {sum(r['trials'] for r in results)} trials in "
              f"{(time.time() - start) / 60:.1f} min")
        print(f"  {'task':40s} {'calls':>5s} {'AutoSchedule us':>15s} {'tuned us':>9s} {'ratio':>6s}   "
              f"(AutoSchedule's and the best trace measured again, in turn)")
        database = loom.tune.Database(db)
        weighted = []
        for task, r in zip(found, results):
            best = database.best(task.hash, task.target, r["cpu"])
            base_us, best_us = remeasured(task, [task.sample(-1)[0], best["trace"]])
            weighted.append((r["calls"] * base_us, r["calls"] * best_us))
            print(f"  {r['name'][:40]:40s} {r['calls']:5d} {us(base_us):>15s} {us(best_us)} {best_us / base_us:6.2f}")
        print(f"  these tasks, weighted by calls: tuned / AutoSchedule "
              f"{sum(b for _, b in weighted) / sum(a for a, _ in weighted):.2f}")
        # The whole model: AutoSchedule, tuned, TorchScript (one thread).
        auto = loom.build(mod, host_config())
        tuned = loom.build(mod, host_config(database=db))
        xs = x.numpy()
        torch.set_num_threads(1)
        # OpenBLAS (torch's linear layers) has its own threads: held to one too.
        with torch.no_grad(), threadpool_limits(limits=1, user_api="blas"):
            scripted = torch.jit.freeze(torch.jit.trace(module, x))
            want = module(x).numpy()
            error = np.abs(tuned["main"](xs).numpy() - want).max() / np.abs(want).max()
            auto_ms, tuned_ms, peer_ms = interleaved(
                [lambda: auto["main"](xs), lambda: tuned["main"](xs), lambda: scripted(x)], args.runs)
        print(f"  whole model, one thread, medians of {args.runs} calls taken in turn (ms): AutoSchedule "
              f"{auto_ms:.2f}, tuned {tuned_ms:.2f}, TorchScript {peer_ms:.2f}; tuned / TorchScript "
              f"{tuned_ms / peer_ms:.2f}, AutoSchedule / TorchScript {auto_ms / peer_ms:.2f}, tuned / AutoSchedule "
              f"{tuned_ms / auto_ms:.2f} (max error / scale {error:.1e})")


def part_compare(args):
    trials = args.compare_trials
    print(f"== compare: cost model against random search, {trials} trials per task, seed 0, local:2")
    name, module, shape, kinds = next(models())
    mod, _ = imported(module, shape)
    found = {t.name: t for t in loom.tune.tasks(mod, host_config())}
    # Three convolutions where searches found room: the 7x7 stem, a 3x3
    # at 56x56 and a 3x3 with the residual added.
    picked = [found[n] for n in ("fused_conv2d_add_relu", "fused_conv2d_add_relu_1", "fused_conv2d_add_add_relu")]
    marks = [m for m in (8, 16, 24, 32, 48, 64, 96, 128) if m <= trials]
    chosen = {}  # (strategy, task, mark) -> the trace the search held best after `mark` trials
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in ("random", "model"):
            db = os.path.join(tmp, f"{strategy}.jsonl")
            loom.tune.tune(mod, host_config(), trials=trials * len(picked), database=db, workers="local:2",
                           tasks=picked, strategy=strategy, seed=0, progress=False, verify=0)
            records = loom.tune.Database(db).records
            for task in picked:
                mine = [r for r in records if r["task"] == task.hash]
                for m in marks:
                    timed = [r for r in mine[:m] if r.get("median_us")]
                    chosen[strategy, task.hash, m] = min(timed, key=lambda r: r["median_us"])["trace"]
    # The machine's speed drifts by a third within minutes, so the two
    # searches' own times do not compare: every trace they chose is
    # measured again, all of a task's in turn.
    print(f"  {'task':30s} {'strategy':8s} " + " ".join(f"{m:>7d}" for m in marks) +
          "   (us: the best after N trials, measured again in turn)")
    for task in picked:
        traces = []
        for key, trace in chosen.items():
            if key[1] == task.hash and trace not in traces:
                traces.append(trace)
        times = remeasured(task, traces)
        for strategy in ("random", "model"):
            cells = [f"{times[traces.index(chosen[strategy, task.hash, m])]:7.1f}" for m in marks]
            print(f"  {task.name[:30]:30s} {strategy:8s} " + " ".join(cells))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_cluster(workers, logdir):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    procs = [subprocess.Popen(["dask-scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=open(logdir / "scheduler.log", "w"), stderr=subprocess.STDOUT, env=env)]
    for k in range(workers):
        procs.append(subprocess.Popen(["dask-worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--no-nanny",
                                       "--no-dashboard"], stdout=open(logdir / f"w{k}.log", "w"),
                                      stderr=subprocess.STDOUT, env=env))
    from distributed import Client
    client = Client(f"tcp://127.0.0.1:{port}", timeout="30s")
    client.wait_for_workers(workers, timeout=60)
    return client, procs


def device_pool(servers, logdir):
    """A Dask scheduler and `servers` loom-rpc-servers, each fronted by a
    worker with the resource loom-rpc:bench (docs/rpc.md, "Device pools on
    Dask"): the pool's client, its address and the processes."""
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    sys.path.insert(0, str(ROOT / "tests" / "python" / "rpc"))
    from rpc_util import Server
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    procs = [subprocess.Popen(["dask-scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=open(logdir / "pool-scheduler.log", "w"), stderr=subprocess.STDOUT, env=env)]
    rpc_servers = []
    for k in range(servers):
        d = logdir / f"server{k}"
        d.mkdir(exist_ok=True)
        rpc_servers.append(Server(d))
        procs.append(subprocess.Popen([sys.executable, "-m", "loom.rpc.worker", f"dask://127.0.0.1:{port}", "--server",
                                       rpc_servers[-1].address, "--key", str(rpc_servers[-1].key), "--device-key",
                                       "bench"], stdout=open(logdir / f"front{k}.log", "w"),
                                      stderr=subprocess.STDOUT, env=env))
    from distributed import Client
    client = Client(f"tcp://127.0.0.1:{port}", timeout="30s")
    client.wait_for_workers(servers, timeout=60)
    return client, f"dask://127.0.0.1:{port}", procs, rpc_servers


def part_rate(args):
    trials = args.rate_trials
    print(f"== rate: trials per minute, {trials} trials of one task (ResNet-18's first convolution)")
    name, module, shape, kinds = next(models())
    mod, _ = imported(module, shape)
    task = [t for t in loom.tune.tasks(mod, host_config()) if "conv2d" in t.name][0]
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("local:1", "local:2", "dask 1 worker", "dask 2 workers", "rpc pool 2 servers"):
            client, procs, servers, device_key = None, [], [], None
            workers = label
            if label.startswith("dask"):
                client, procs = dask_cluster(int(label.split()[1]), pathlib.Path(tmp))
                workers = client
            if label.startswith("rpc pool"):
                client, workers, procs, servers = device_pool(2, pathlib.Path(tmp))
                device_key = "bench"
            try:
                # A warm-up trial starts the workers' processes.
                loom.tune.tune(mod, host_config(), trials=2, workers=workers, tasks=[task], progress=False,
                               device_key=device_key)
                start = time.time()
                loom.tune.tune(mod, host_config(), trials=trials, workers=workers, tasks=[task], seed=1,
                               progress=False, device_key=device_key)
                minutes = (time.time() - start) / 60
                print(f"  {label:16s} {trials / minutes:6.1f} trials/min")
            finally:
                if client is not None:
                    client.close()
                for p in procs:
                    p.terminate()
                    p.wait(10)
                for server in servers:
                    server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("parts", nargs="*", default=["tasks", "compare", "rate"])
    parser.add_argument("--trials", type=int, default=24, help="trials per task (tasks)")
    parser.add_argument("--compare-trials", type=int, default=48)
    parser.add_argument("--rate-trials", type=int, default=24)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--database", default=None, help="where part tasks keeps its records (default: a temp file)")
    args = parser.parse_args()
    print(f"cpu: {loom._ffi.call('tune.cpu')}; torch {torch.__version__}")
    if "tasks" in args.parts:
        if args.database:
            part_tasks(args, args.database)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                part_tasks(args, os.path.join(tmp, "tuned.jsonl"))
    if "compare" in args.parts:
        part_compare(args)
    if "rate" in args.parts:
        part_rate(args)


if __name__ == "__main__":
    sys.exit(main())
