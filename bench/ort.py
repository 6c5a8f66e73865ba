"""Whole models, Loom against ONNX Runtime and TorchScript on the same
.onnx files and inputs (bench/README.md, "ONNX Runtime").

Each model is exported once with torch.onnx.export (opset 13) to a file
that both Loom (loom.frontend.onnx, configs/host.yaml with num-threads
set) and ONNX Runtime (onnxruntime-node's CPU execution provider,
graph optimisation "all", intra-op threads set, one inter-op thread,
driven by bench/ort_worker.js in a Node process of its own) load; the
third side is TorchScript (trace + freeze under no_grad) at its best
thread setting (peers.best_setting).  At 1 and 2 threads the sides are
timed in alternating rounds, each call timed around the call in its own
language's loop; printed are each side's median, the medians of the
per-round ratios Loom / ONNX Runtime and Loom / TorchScript, and each
side's largest error relative to PyTorch's output scale.  Each model runs
in a process of its own.

Setup (once; never needed by the build or the tests):

    bash bench/setup_ort.sh            # npm install onnxruntime-node into bench/.ort

Run:

    PYTHONPATH=python /usr/bin/python3 bench/ort.py [--rounds N] [--threads 1,2] [MODEL...]

MODEL is one of MODELS below (default: all) or any other torchvision
model (its random weights, as tests/python/zoo makes them; the geometric
means then take it too).  Without Node or
onnxruntime-node it says why and measures Loom against TorchScript only.
"""
import argparse
import json
import math
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402
from timing import timed_calls  # noqa: E402

peers.blas_at_best()

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORT_MODULES = pathlib.Path(os.environ.get("LOOM_ORT_NODE_MODULES", ROOT / "bench" / ".ort" / "node_modules"))
WORKER = ROOT / "bench" / "ort_worker.js"
VISION = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0",
          "squeezenet1_1", "densenet121"]
MODELS = VISION + ["bert_encoder", "gpt2_prefill"]
TARGET = {1: 1.0, 2: 1.1}  # Loom / ONNX Runtime, per model (docs/frontends.md)
GEOMEAN_TARGET = 0.85       # at one thread


def why_not_ort():
    """None when ONNX Runtime can run here, or the reason it cannot."""
    if not shutil.which("node"):
        return "node is not installed"
    if not (ORT_MODULES / "onnxruntime-node").is_dir():
        return f"onnxruntime-node is not in {ORT_MODULES} (run: bash bench/setup_ort.sh)"
    return None


def gpt2_decoder(torch, layers=4, d=256, heads=4, vocab=2048, context=64):
    """A GPT-2-style decoder (pre-norm blocks, causal attention written
    out as matmuls and a mask, tanh GELU, token and position embeddings,
    a tied-size LM head), its prefill on `context` tokens."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("mask", torch.full((context, context), float("-inf")).triu(1))

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (t.reshape(b, n, heads, d // heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (d // heads) ** -0.5 + self.mask[:n, :n]
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
            x = x + self.proj(y)
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(context, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1]).unsqueeze(0)
            return self.head(self.ln(self.blocks(self.wte(ids) + self.wpe(positions))))

    return Decoder().eval(), torch.randint(0, vocab, (1, context))


def torchvision_models():
    """Every model name torchvision's registry knows."""
    import torchvision
    return set(torchvision.models.list_models())


def make(name):
    """(model in eval mode, example input)."""
    import torch
    torch.manual_seed(0)
    if name in VISION or (name not in MODELS and name in torchvision_models()):
        sys.path.insert(0, str(ROOT / "tests" / "python" / "zoo"))
        import zoo
        model, x = zoo.make(name)
        if isinstance(x, tuple):
            raise SystemExit(f"{name} takes {len(x)} inputs; bench/ort.py times models of one input and one output")
        return model, x
    if name == "bert_encoder":  # 4 layers, d_model 256, 4 heads, FFN 1024, GELU, sequence 128
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, activation="gelu", batch_first=True)
        return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval(), torch.randn(1, 128, 256)
    if name == "gpt2_prefill":
        return gpt2_decoder(torch)
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)} or a torchvision model")


class OrtSession:
    """An ONNX Runtime session in a Node process (bench/ort_worker.js)."""

    def __init__(self, model_path, inputs, threads, directory):
        spec = {"model": str(model_path), "threads": threads, "inputs": []}
        for i, (name, array) in enumerate(inputs.items()):
            file = pathlib.Path(directory) / f"input{i}.bin"
            file.write_bytes(array.tobytes())
            spec["inputs"].append({"name": name, "dtype": str(array.dtype), "shape": list(array.shape),
                                   "file": str(file)})
        spec_file = pathlib.Path(directory) / f"spec{threads}.json"
        spec_file.write_text(json.dumps(spec))
        self.directory = directory
        self.process = subprocess.Popen(["node", str(WORKER), str(spec_file)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True,
                                        env=peers.peer_env(NODE_PATH=str(ORT_MODULES)))
        self.version = self._read()["version"]

    def _read(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the ONNX Runtime worker ended (status {self.process.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"ONNX Runtime: {reply['error']}")
        return reply

    def _ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def times(self, count):
        return self._ask({"run": count})["ms"]

    def outputs(self):
        import numpy as np
        got = []
        for out in self._ask({"outputs": str(pathlib.Path(self.directory) / "out")})["outputs"]:
            got.append(np.fromfile(out["file"], dtype=out["dtype"]).reshape(out["shape"]))
        return got

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.write(json.dumps({"quit": True}) + "\n")
            self.process.stdin.flush()
            self.process.wait(timeout=30)


def config(threads):
    import loom
    text = (ROOT / "configs" / "host.yaml").read_text().replace("num-threads: 0", f"num-threads: {threads}")
    assert f"num-threads: {threads}" in text
    return loom.Config.parse(text, f"host.yaml (num-threads {threads})")


def error(got, want):
    import numpy as np
    return float(np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max())


def measure(name, rounds, thread_counts, with_ort):
    """Prints the model's lines and, per thread count, `RESULT {json}`."""
    import numpy as np
    import onnx
    import torch
    import loom
    from loom.frontend import onnx as lonnx

    model, x = make(name)
    with torch.no_grad():
        want = model(x).numpy().astype(np.float64)
    with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = pathlib.Path(directory) / f"{name}.onnx"
        torch.onnx.export(model, x, str(path), opset_version=13)
        graph = onnx.load(str(path)).graph
        initializers = {i.name for i in graph.initializer}
        input_names = [i.name for i in graph.input if i.name not in initializers]
        assert len(input_names) == 1, input_names
        xs = x.numpy()
        with torch.no_grad():
            scripted = torch.jit.freeze(torch.jit.trace(model, x, strict=False))
        for threads in thread_counts:
            start = time.perf_counter()
            library = loom.build(lonnx.from_onnx(path), config(threads))
            compile_s = time.perf_counter() - start
            main = library["main"]
            ours_error = error(main(xs).numpy(), want)
            session = OrtSession(path, {input_names[0]: xs}, threads, directory) if with_ort else None
            try:
                ort_error = error(session.outputs()[0], want) if session else math.nan

                def call_ts():
                    with torch.no_grad():
                        return scripted(x)

                (intra, blas), _ = peers.best_setting(call_ts, peers.torch_settings(threads),
                                                       lambda s: peers.torch_threads(*s))
                with torch.no_grad():
                    ts_error = error(scripted(x).numpy(), want)
                sides = {"loom": lambda n: timed_calls(lambda: main(xs), n)}
                if session:
                    sides["ort"] = session.times
                for _ in range(2):  # warm-up
                    for side in sides.values():
                        side(1)
                    call_ts()
                estimate = statistics.median(timed_calls(lambda: main(xs), 3))
                per_round = max(3, min(50, int(300 / max(estimate, 1e-3))))

                def ts_times(count):
                    with peers.torch_threads(intra, blas):
                        return timed_calls(call_ts, count)

                sides["ts"] = ts_times
                per = peers.alternate(sides, rounds, per_round)
            finally:
                if session:
                    session.close()
            nan = math.nan
            result = {"model": name, "threads": threads, "loom_ms": statistics.median(per["loom"]),
                      "ort_ms": statistics.median(per["ort"]) if session else nan,
                      "ts_ms": statistics.median(per["ts"]),
                      "loom_ort": peers.ratio(per, "loom", "ort") if session else nan,
                      "loom_ts": peers.ratio(per, "loom", "ts"),
                      "errors": [ours_error, ort_error, ts_error], "compile_s": compile_s,
                      "ts_setting": [intra, blas], "ort_version": session.version if session else None}
            print(f"{name:19s} {threads} thr  loom {result['loom_ms']:8.2f}  ort {result['ort_ms']:8.2f}  "
                  f"ts {result['ts_ms']:8.2f} ms  loom/ort {result['loom_ort']:5.2f}  loom/ts {result['loom_ts']:5.2f}  "
                  f"error loom {ours_error:.0e} ort {ort_error:.0e} ts {ts_error:.0e}  "
                  f"compile {compile_s:4.1f} s  ts threads {intra}+{blas} blas  ({rounds}x{per_round} calls)",
                  flush=True)
            print("RESULT " + json.dumps(result), flush=True)


def cpu_line():
    model = "unknown CPU"
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    flags = peers.cpu_flags()
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags]
    return f"{model}; {', '.join(isa) or 'no AVX2'}; {os.cpu_count()} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", metavar="MODEL")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    reason = why_not_ort()
    if args.one:
        measure(args.one, args.rounds, threads, reason is None)
        return 0
    if reason:
        print(f"ONNX Runtime: skipped: {reason}; Loom against TorchScript only")
    import torch
    print(f"Loom vs ONNX Runtime (onnxruntime-node) and TorchScript; {cpu_line()}; torch {torch.__version__}; "
          f"BLAS: {peers.blas_kernel()}; {args.rounds} alternating rounds per thread count", flush=True)
    results = []
    known = set(MODELS) | (torchvision_models() if args.models else set())
    for name in args.models:
        if name not in known:
            sys.exit(f"unknown model {name!r}; known: {', '.join(MODELS)} or a torchvision model")
    for name in args.models or MODELS:
        child = subprocess.run([sys.executable, __file__, "--one", name, "--rounds", str(args.rounds),
                                "--threads", args.threads], stdout=subprocess.PIPE, text=True)
        for line in child.stdout.splitlines():
            if line.startswith("RESULT "):
                results.append(json.loads(line[7:]))
            else:
                print(line, flush=True)
        if child.returncode:
            print(f"{name}: the measuring process ended with status {child.returncode}", flush=True)
    if results and results[0]["ort_version"]:
        print(f"ONNX Runtime {results[0]['ort_version']}")
    for t in threads:
        rows = [r for r in results if r["threads"] == t and r["ort_version"]]
        if not rows:
            continue
        geomean = math.exp(sum(math.log(r["loom_ort"]) for r in rows) / len(rows))
        over = [f"{r['model']} {r['loom_ort']:.2f}" for r in rows if r["loom_ort"] > TARGET[t]]
        line = f"{t} thread{'s' if t > 1 else ''}: geometric mean of Loom / ONNX Runtime over {len(rows)} models {geomean:.2f}"
        if t == 1:
            line += f" (target {GEOMEAN_TARGET})"
        print(f"{line}; above {TARGET[t]}: {', '.join(over) if over else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
