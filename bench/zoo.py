"""The torchvision zoo, Loom against TorchScript at one thread
(docs/frontends.md, "The zoo"; bench/README.md).

Each model of tests/python/zoo/zoo.py (random weights, batch 1, eval
mode) is exported to ONNX at opset 13, imported with loom.frontend.onnx
and built with configs/host.yaml at num-threads 1; the peer is
torch.jit.trace + torch.jit.freeze under no_grad with
torch.set_num_threads(1) and OpenBLAS held to one thread.  Rounds
alternate the two sides (a call of each per round, ROUNDS rounds after
warm-up); the ratio is the median of the per-round ratios Loom /
TorchScript (below 1: Loom is faster).  The last lines give the
geometric mean of the ratios and the worst three.  It runs itself again
with OpenBLAS at its best kernel (bench/peers.py):

    PYTHONPATH=python /usr/bin/python3 bench/zoo.py [ROUNDS] [MODEL...]
"""
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()  # before NumPy and PyTorch load OpenBLAS (bench/peers.py)

import torch
from threadpoolctl import threadpool_limits

import loom

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python" / "zoo"))
import zoo  # noqa: E402

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 15
WANTED = [a for a in sys.argv[1:] if not a.isdigit()]  # model names, or --one NAME (one model, for the parent)


def config():
    text = (ROOT / "configs" / "host.yaml").read_text().replace("num-threads: 0", "num-threads: 1")
    assert "num-threads: 1" in text
    return loom.Config.parse(text, "host.yaml (num-threads 1)")


def rounds(ours, peer, count):
    """Per-round times (s) of both sides, the calls alternating."""
    for _ in range(3):
        ours()
        peer()
    mine, theirs = [], []
    for _ in range(count):
        t = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - t)
        t = time.perf_counter()
        peer()
        theirs.append(time.perf_counter() - t)
    return mine, theirs


def measure(name):
    """Prints the model's line and, last, `RESULT name ratio`."""
    torch.set_num_threads(1)
    model, x = zoo.make(name)
    try:
        with tempfile.TemporaryDirectory() as directory:
            # (A model past protobuf's 2 GiB goes through a file with
            # external data, as the zoo's test does.)
            module = zoo.import_onnx(model, x, directory if name in zoo.LARGE else None, zoo.opset(name))
        library = loom.build(module, config())
    except Exception as e:  # noqa: BLE001 -- PyTorch's export failing too
        print(f"{name}: not built: {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)
        return
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.freeze(torch.jit.trace(model, x, strict=False))
    args = zoo.inputs(x)
    xs = [a.numpy() for a in args]
    main_fn = library["main"]
    with torch.no_grad(), threadpool_limits(limits=1, user_api="blas"):
        mine, theirs = rounds(lambda: main_fn(*xs), lambda: scripted(*args), ROUNDS)
    ratio = statistics.median(m / t for m, t in zip(mine, theirs))
    print(f"{name:28s} loom {statistics.median(mine) * 1e3:9.2f} ms  torchscript "
          f"{statistics.median(theirs) * 1e3:9.2f} ms  ratio {ratio:5.2f}", flush=True)
    print(f"RESULT {name} {ratio!r}", flush=True)


def main():
    if WANTED[:1] == ["--one"]:
        return measure(WANTED[1])
    names = WANTED or zoo.all_models()
    print(f"Loom vs TorchScript at one thread, {ROUNDS} alternating rounds; torch {torch.__version__}", flush=True)
    ratios = {}
    for name in names:
        # Each model in a process of its own: the memory of one model's
        # build (ViT-L's weights, folded) is not the next one's to find.
        child = subprocess.run([sys.executable, __file__, str(ROUNDS), "--one", name],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = child.stdout.splitlines()
        for line in lines:
            if line.startswith("RESULT "):
                ratios[name] = float(line.split()[2])
            else:
                print(line, flush=True)
        if child.returncode != 0:
            print(f"{name}: the measuring process ended with status {child.returncode}", flush=True)
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        worst = sorted(ratios.items(), key=lambda kv: -kv[1])[:3]
        print(f"geometric mean of {len(ratios)} ratios: {geomean:.2f}; worst: " +
              ", ".join(f"{n} {r:.2f}" for n, r in worst))
        slow = [n for n, r in ratios.items() if r > 1.5]
        print(f"slower than 1.5x TorchScript: {', '.join(slow) if slow else 'none'}")


if __name__ == "__main__":
    main()
