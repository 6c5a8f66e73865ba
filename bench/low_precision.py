"""Low precision (docs/low-precision.md): integer kernels against Loom's
float32 and against ONNX Runtime, one thread.

* matmul 1024^3: uint8 x int8 summed in int32, and bfloat16 summed in
  float32 (out_dtype), against float32, Loom every side;
* a quantized ResNet-18: torchvision's, random weights, quantized by
  torch.ao.quantization (FX mode, fbgemm's default, calibrated on random
  inputs) and exported by torch.onnx in the QDQ form, run by Loom as
  integer kernels (QDQToInteger), against Loom's float32 ResNet-18 of the
  same weights and against ONNX Runtime on the same QDQ file
  (onnxruntime-node, bench/setup_ort.sh; skipped with a reason without
  it), 224 x 224; and the same model with int8 activations (each
  activation's zero point z - 128: the same real values, the form ONNX
  Runtime's quantizer writes by default), Loom against ONNX Runtime;
* the top-1 agreement of the quantized ResNet-18 and MobileNetV2 with
  their float models over --samples random inputs (random weights make it
  a weak measure);
* PyTorch's own quantized models (the same FX-mode quantization, run by
  PyTorch's fbgemm kernels at one intra-op thread) against Loom's import
  of them with from_fx (docs/frontends.md, "Quantized PyTorch models"),
  ResNet-18, MobileNetV2 and MobileNetV3-Large at 224 x 224, with the
  largest difference of their outputs in quantization steps.

Sides alternate in rounds; printed are each side's median and the median
of the per-round ratios.

    PYTHONPATH=python /usr/bin/python3 bench/low_precision.py [--rounds N] [--samples N] [--only pytorch]
"""
import argparse
import io
import pathlib
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "python" / "frontend"))
import peers  # noqa: E402
from ort import OrtSession, config, cpu_line, why_not_ort  # noqa: E402
from timing import timed_calls  # noqa: E402


def matmul(args):
    import loom
    from loom import graph, ir, op
    n = 1024
    rng = np.random.default_rng(0)
    libs, inputs = {}, {}
    kinds = {"float32": ("float32", "float32", ""), "int8": ("uint8", "int8", "int32"),
             "bfloat16": ("bfloat16", "bfloat16", "float32")}
    for name, (xd, wd, out) in kinds.items():
        x = graph.Var("x", shape=(n, n), dtype=xd)
        w = graph.Var("w", shape=(n, n), dtype=wd)
        mod = ir.IRModule({"main": graph.Function([x, w], op.matmul(x, w, out_dtype=out))})
        libs[name] = loom.build(mod, config(1))["main"]
        if xd == "float32":
            inputs[name] = [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
        elif xd == "bfloat16":  # the upper halves of float32s: bfloat16 bit patterns
            inputs[name] = [loom.nd.array(np.ascontiguousarray(
                (rng.standard_normal((n, n)).astype(np.float32).view(np.uint32) >> 16).astype(np.int16)))
                .view("bfloat16") for _ in range(2)]
        else:
            inputs[name] = [rng.integers(0, 256, (n, n)).astype(np.uint8),
                            rng.integers(-128, 128, (n, n)).astype(np.int8)]
    a, b = inputs["int8"]
    assert np.array_equal(libs["int8"](a, b).numpy()[:4], a[:4].astype(np.int64) @ b.astype(np.int64))
    sides = {k: (lambda c, k=k: timed_calls(lambda: libs[k](*inputs[k]), c)) for k in libs}
    per = peers.alternate(sides, args.rounds, 3)
    flops = 2 * n ** 3
    for k in libs:
        ms = statistics.median(per[k])
        print(f"matmul 1024^3 {k:8s} {ms:8.2f} ms  {flops / ms / 1e6:7.1f} GOP/s")
    ikernel = "AMX tiles, AMXMatmul" if "amx_int8" in peers.cpu_flags() else "vpdpbusd or pmaddwd"
    print(f"matmul 1024^3 int8 ({ikernel}) speed-up over float32: {peers.ratio(per, 'float32', 'int8'):.2f}x "
          f"(target 2.5x)")
    flags = peers.cpu_flags()
    kernel = ("AMX tiles, AMXMatmul" if "amx_bf16" in flags else "vdpbf16ps pairs" if "avx512_bf16" in flags
              else "no avx512_bf16 here: widened to float32")
    print(f"matmul 1024^3 bfloat16 (summed in float32; {kernel}) speed-up over float32: "
          f"{peers.ratio(per, 'float32', 'bfloat16'):.2f}x (target 1.7x)")


def model(args, name, timed):
    """Builds the quantized and the float `name` at 224 x 224; times them
    (and ONNX Runtime) when `timed`; reports the top-1 agreement."""
    import torch
    import loom
    from loom.frontend import onnx as lonnx
    import qdq_reference
    data, float_model, _ = qdq_reference.quantized_model(name, size=224)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qpath = pathlib.Path(directory) / f"{name}_qdq.onnx"
        qpath.write_bytes(data)
        f = io.BytesIO()
        torch.onnx.export(float_model, torch.from_numpy(x), f, opset_version=13)
        t = time.perf_counter()
        quantized = loom.build(lonnx.from_onnx(data), config(1))["main"]
        compile_s = time.perf_counter() - t
        flt = loom.build(lonnx.from_onnx(f.getvalue()), config(1))["main"]
        if timed:
            time_sides(args, name, data, qpath, directory, x, quantized, flt, compile_s)
            signed = qdq_reference.with_int8_activations(data)
            spath = pathlib.Path(directory) / f"{name}_qdq_s8.onnx"
            spath.write_bytes(signed)
            time_signed(args, name, signed, spath, directory, x, loom.build(lonnx.from_onnx(signed), config(1))["main"])
    agree = 0
    rng = np.random.default_rng(1)
    for _ in range(args.samples):
        s = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        agree += int(quantized(s).numpy().argmax() == flt(s).numpy().argmax())
    print(f"top-1 agreement of the quantized {name} with the float one over {args.samples} random inputs: "
          f"{agree / args.samples:.1%} (random weights: a weak measure)")


def time_sides(args, name, data, qpath, directory, x, quantized, flt, compile_s):
    import qdq_reference
    sides = {"int8": lambda c: timed_calls(lambda: quantized(x), c),
             "float32": lambda c: timed_calls(lambda: flt(x), c)}
    reason = why_not_ort()
    session = None
    if reason is None:
        import onnx
        session = OrtSession(qpath, {onnx.load_from_string(data).graph.input[0].name: x}, 1, directory)
        sides["ort"] = session.times
        step = qdq_reference.output_step(data)
        gap = np.abs(session.outputs()[0] - quantized(x).numpy()).max() / step
    try:
        for side in sides.values():
            side(2)
        per = peers.alternate(sides, args.rounds, 5)
    finally:
        if session:
            session.close()
    for k in sides:
        print(f"{name} 224 {k:8s} {statistics.median(per[k]):8.2f} ms")
    print(f"{name} quantized (QDQ, integer kernels) compile {compile_s:.1f} s; speed-up over Loom float32: "
          f"{peers.ratio(per, 'float32', 'int8'):.2f}x (target 2x)")
    if session:
        print(f"{name} quantized / ONNX Runtime {session.version} on the same QDQ file: "
              f"{peers.ratio(per, 'int8', 'ort'):.2f}x its time (target 1.0); outputs differ by at most "
              f"{gap:.0f} quantization steps")
    else:
        print(f"ONNX Runtime: skipped: {reason}")


def time_signed(args, name, data, path, directory, x, quantized):
    """Loom against ONNX Runtime on the model with int8 activations."""
    import onnx
    import qdq_reference
    reason = why_not_ort()
    if reason is not None:
        print(f"{name} with int8 activations: ONNX Runtime skipped: {reason}")
        return
    session = OrtSession(path, {onnx.load_from_string(data).graph.input[0].name: x}, 1, directory)
    sides = {"int8 s8": lambda c: timed_calls(lambda: quantized(x), c), "ort s8": session.times}
    try:
        gap = np.abs(session.outputs()[0] - quantized(x).numpy()).max() / qdq_reference.output_step(data)
        for side in sides.values():
            side(2)
        per = peers.alternate(sides, args.rounds, 5)
    finally:
        session.close()
    for k in sides:
        print(f"{name} 224 {k:8s} {statistics.median(per[k]):8.2f} ms")
    print(f"{name} quantized with int8 activations (ONNX Runtime's default form) / ONNX Runtime {session.version} on "
          f"the same file: {peers.ratio(per, 'int8 s8', 'ort s8'):.2f}x its time; outputs differ by at most "
          f"{gap:.0f} quantization steps")


def pytorch_quantized(args, name):
    """Loom's from_fx import of PyTorch's quantized `name` against PyTorch
    running it (fbgemm, one thread), 224 x 224."""
    import torch
    import loom
    from loom.frontend import fx as lfx
    import qdq_reference
    data, _, quantized = qdq_reference.quantized_model(name, size=224)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    xt = torch.from_numpy(x)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = loom.build(lfx.from_fx(quantized, [xt]), config(1))["main"]
    compile_s = time.perf_counter() - t
    torch.set_num_threads(1)

    def theirs():
        with torch.no_grad():
            return quantized(xt)
    step = qdq_reference.output_step(data)
    gap = np.abs(ours(x).numpy() - theirs().numpy()).max() / step
    sides = {"loom fx": lambda c: timed_calls(lambda: ours(x), c), "pytorch": lambda c: timed_calls(theirs, c)}
    for side in sides.values():
        side(2)
    per = peers.alternate(sides, args.rounds, 5)
    print(f"{name} 224 quantized: Loom (from_fx) {statistics.median(per['loom fx']):8.2f} ms, PyTorch (fbgemm, 1 "
          f"thread) {statistics.median(per['pytorch']):8.2f} ms: {peers.ratio(per, 'loom fx', 'pytorch'):.2f}x its "
          f"time; compile {compile_s:.1f} s; outputs differ by at most {gap:.0f} quantization steps")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--only", choices=["pytorch"], help="only PyTorch's quantized models against Loom's import")
    args = parser.parse_args()
    peers.blas_at_best()
    print(f"low precision, 1 thread; {cpu_line()}")
    if args.only is None:
        matmul(args)
        model(args, "resnet18", timed=True)
        model(args, "mobilenet_v2", timed=False)
    for name in ("resnet18", "mobilenet_v2", "mobilenet_v3_large"):
        pytorch_quantized(args, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
