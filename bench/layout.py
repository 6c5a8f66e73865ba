"""The llvm target's layout rule (docs/target-llvm.md, "Layout"): each
ImageNet CNN built three ways from the same ONNX file -- channel blocks
(`ConvertLayout.layout: NCHWc`), channels-last (`NHWC`) and
channels-first (ConvertLayout disabled) -- at one thread, timed in
alternating rounds; prints each build's time, each side's median, the
medians of the per-round ratios blocks / channels-last and channels-last
/ channels-first, which layout the default (`auto`) takes, and the
largest difference between the outputs relative to their scale.  Each
model runs in the benchmark's process, one after another.

    PYTHONPATH=python /usr/bin/python3 bench/layout.py [--rounds N] [--calls N] [MODEL...]

MODEL is a torchvision model name (default: the seven CNNs of bench/ort.py).
"""
import argparse
import pathlib
import statistics
import sys
import tempfile
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402
from timing import timed_calls  # noqa: E402

peers.blas_at_best()

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "squeezenet1_1",
          "densenet121"]
CONFIG = """target: {kind: llvm, mcpu: native, num-threads: 1}
pipeline:
  passes: [default]
"""
SIDES = {"blocks": CONFIG + "  config: {ConvertLayout.layout: NCHWc}\n",
         "channels-last": CONFIG + "  config: {ConvertLayout.layout: NHWC}\n",
         "channels-first": CONFIG + "  disabled: [ConvertLayout]\n"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=8, help="calls per side per round (their median counts)")
    parser.add_argument("models", nargs="*", default=MODELS)
    args = parser.parse_args()
    import numpy as np
    import torch
    import torchvision
    import loom
    from loom.frontend import onnx as lonnx
    warnings.filterwarnings("ignore")
    print(f"Loom's layouts, llvm, 1 thread; {args.rounds} rounds of {args.calls} calls")
    print("| model | build blocks / last / first (s) | blocks (ms) | channels-last (ms) | channels-first (ms) "
          "| blocks / last | last / first | default | output difference |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        d = pathlib.Path(directory)
        for name in args.models:
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)(weights=None).eval()
            x = torch.randn(1, 3, 224, 224)
            path = d / f"{name}.onnx"
            torch.onnx.export(model, x, str(path), opset_version=13)
            calls, outputs, builds = {}, {}, {}
            module = lonnx.from_onnx(path)
            for side, text in SIDES.items():
                config = d / f"{side}.yaml"
                config.write_text(text)
                start = time.perf_counter()
                library = loom.build(lonnx.from_onnx(path), str(config))
                builds[side] = time.perf_counter() - start
                library.export_library(str(d / f"{name}_{side}.so"))
                f = loom.runtime.load_module(str(d / f"{name}_{side}.so"))["main"]
                xa = loom.nd.array(x.numpy())
                outputs[side] = f(xa).numpy()
                calls[side] = (lambda f=f, xa=xa: f(xa))
            medians = {side: [] for side in SIDES}
            ratios = {"blocks": [], "channels-last": []}
            for r in range(args.rounds):
                order = list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]
                per = {side: statistics.median(timed_calls(calls[side], args.calls)) for side in order}
                for side in SIDES:
                    medians[side].append(per[side])
                ratios["blocks"].append(per["blocks"] / per["channels-last"])
                ratios["channels-last"].append(per["channels-last"] / per["channels-first"])
            first = outputs["channels-first"]
            diff = max(float(np.abs(outputs[side] - first).max() / max(np.abs(first).max(), 1e-30))
                       for side in ("blocks", "channels-last"))
            default = "blocks" if any(op_is_depthwise(module)) else "channels-last"
            print(f"| {name} | {builds['blocks']:.1f} / {builds['channels-last']:.1f} / {builds['channels-first']:.1f} "
                  + "".join(f"| {statistics.median(medians[side]):.2f} " for side in SIDES)
                  + f"| {statistics.median(ratios['blocks']):.2f} | {statistics.median(ratios['channels-last']):.2f} "
                  f"| {default} | {diff:.1e} |", flush=True)


def op_is_depthwise(module):
    """For each conv2d of the module, whether it has several groups: what
    the default layout (auto) looks for, a depthwise convolution (docs/
    passes.md, ConvertLayout; the seven CNNs group only depthwise)."""
    import re
    for m in re.finditer(r"\bgroups=(\d+)", module.script()):
        yield int(m.group(1)) > 1

if __name__ == "__main__":
    main()
