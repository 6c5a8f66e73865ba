#!/usr/bin/python3
"""Operators off the beaten path, Loom against its peers in one run
(bench/README.md, "Operators").

Every case is built in Python (constants for weights, as an importer
makes them), built once into a library with `loomc build` and
configs/host.yaml, loaded into this process and called from Python on
random inputs, timed around each call exactly as its peer is (before,
Loom was timed in `loomc run --bench`'s C++ loop and its peer one Python
call at a time, which decided the microsecond cases).  Loom runs at 1
and at 2 threads (loom.runtime.set_num_threads); its peer with the same
budget at its best setting: PyTorch eager under no_grad at the fastest
of its intra-op and OpenBLAS thread counts (peers.best_setting; the
table says which), NumPy as it runs (one thread for elementwise work), or
another Loom form of the same computation.  Each thread count runs in a
child process whose OpenBLAS starts at its best kernel
(peers.py).  Loom and its peer are timed alternately in rounds
(peers.in_rounds): the table gives their medians and the median of the
rounds' ratios, and the target; the 2-thread section also gives each
case's 2-thread time over its 1-thread time, measured the same way.

    /usr/bin/python3 bench/ops.py [--runs N] [--busy] [CASE...]

--busy keeps one core busy with a spinning process for the whole run
(a second core busy with other work, as on a shared machine).
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402

peers.blas_at_best()

import limits  # noqa: E402

import numpy as np  # noqa: E402

from timing import median_ms  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
LOOMC = pathlib.Path(os.environ.get("LOOMC", ROOT / "build" / "bin" / "loomc"))
HOST = (ROOT / "configs" / "host.yaml").read_text()
# The llvm target's default pipeline (cpu_channels_last) runs ConvertLayout:
# channels last (docs/target-llvm.md "Layout"); channels first is the same
# with it disabled.
CHANNELS_LAST = HOST
CHANNELS_FIRST = HOST.replace("    - default", "    - default\n  disabled: [ConvertLayout]")
assert CHANNELS_FIRST != HOST
rng = np.random.default_rng(22)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def build_library(tmp, name, mod, config):
    """The case built once into a library (the thread count is read when it runs)."""
    import loom
    lib = tmp / f"{name}.so"
    if not lib.exists():
        path, cfg = tmp / f"{name}.loom", tmp / f"{name}.yaml"
        loom.ir.save(mod, str(path))
        cfg.write_text(config)
        out = subprocess.run([str(LOOMC), "build", str(path), "--config", str(cfg), "-o", str(lib)],
                             capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"loomc build {name}: {out.stderr}")
    return lib


class LoomTimer:
    """Loom's median time (ms) over a number of calls of a case built once
    into a library, loaded here and called from Python on random inputs,
    with the runtime's pool at `threads` threads; `scale` multiplies it
    (a time per byte moved).  Each batch of calls lasts at least MIN_MS:
    right after the pool is resized the scheduler has often not yet
    moved its new threads off the caller's CPU, and a short case measured
    there (softmax [1x128x256]: 24 runs, 1 ms) showed no gain from a
    second thread that a longer batch shows."""

    MIN_MS = 50.0

    def __init__(self, tmp, name, mod, threads, config=HOST, scale=1.0):
        import loom
        self.module = loom.runtime.load_module(str(build_library(tmp, name, mod, config)))
        self.main = self.module["main"]
        shapes = [[d.value for d in p.annotation.shape] for p in mod["main"].params]
        self.args = [f32(*shape) for shape in shapes]
        self.threads, self.scale = threads, scale
        self.estimate = {}  # threads -> the last median (ms)

    def __call__(self, runs, threads=None):
        import loom
        threads = threads or self.threads
        loom.runtime.set_num_threads(threads)
        if threads in self.estimate:
            runs = max(runs, int(self.MIN_MS / max(self.estimate[threads], 1e-3)) + 1)
        self.estimate[threads] = median_ms(lambda: self.main(*self.args), runs)
        return self.estimate[threads] * self.scale


def peer_timer(f):
    return lambda runs: median_ms(f, runs)


# ---- the cases: each yields (figure, Loom's timer, the peer's, how the ratio reads, target, runs) ----

def mlp_cases(tmp, threads, runs):
    import torch
    from loom import graph, op
    import loom
    sizes = [784, 512, 512, 10]
    ws = [f32(n, k, scale=k ** -0.5) for k, n in zip(sizes, sizes[1:])]
    bs = [f32(n) for n in sizes[1:]]
    layers = []
    for w, b in zip(ws, bs):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.weight.data, lin.bias.data = torch.from_numpy(w), torch.from_numpy(b)
        layers.append(lin)
    for batch in (1, 64):
        x = graph.Var("x", shape=(batch, 784))
        h = x
        for i, (w, b) in enumerate(zip(ws, bs)):
            h = op.add(op.dense(h, graph.Constant(w)), graph.Constant(b))
            h = op.relu(h) if i < 2 else op.softmax(h)
        mod = loom.IRModule({"main": graph.Function([x], h)})
        loom_t = LoomTimer(tmp, f"mlp{batch}", mod, threads)
        xt = torch.randn(batch, 784)

        def eager():
            with torch.no_grad():
                y = torch.relu(layers[0](xt))
                y = torch.relu(layers[1](y))
                return torch.softmax(layers[2](y), dim=-1)

        peer, label = peers.torch_timer(eager, threads)
        yield f"MLP 784-512-512-10 batch {batch} (ms)", loom_t, peer, f"vs {label}", "<= 0.8", runs * 4


def matmul_cases(tmp, threads, runs):
    import loom
    from loom import graph, op
    for shape, name in [((1024, 1024, 1024), "1024^3"), ((4, 128, 64, 128), "attn [4,128,64]x[4,64,128]")]:
        *batch, m, k, n = shape if len(shape) == 4 else (None, *shape)
        batch = [b for b in batch if b]
        times = {}
        for ta, tb in [(False, False), (False, True), (True, False)]:
            a = graph.Var("a", shape=(*batch, k, m) if ta else (*batch, m, k))
            b = graph.Var("b", shape=(*batch, n, k) if tb else (*batch, k, n))
            mod = loom.IRModule({"main": graph.Function([a, b], op.matmul(a, b, transpose_a=ta, transpose_b=tb))})
            times[ta, tb] = LoomTimer(tmp, f"mm{len(batch)}{int(ta)}{int(tb)}", mod, threads)
        for (ta, tb), label in [((False, True), "transpose_b"), ((True, False), "transpose_a")]:
            # Same FLOPs: the GFLOP/s ratio is the inverse of the time ratio.
            yield (f"matmul {name} {label} (ms)", times[ta, tb], times[False, False], "vs plain", "<= 1.25",
                   runs if m >= 1024 else runs * 20)


def conv_block_cases(tmp, threads, runs):
    import loom
    from loom import graph, op

    def conv(x, cin, cout, k, groups=1, relu=True):
        w = graph.Constant(f32(cout, cin // groups, k, k, scale=(cin // groups * k * k) ** -0.5))
        y = op.add(op.conv2d(x, w, padding=[k // 2] * 4, groups=groups), graph.Constant(f32(cout, 1, 1)))
        return op.relu(y) if relu else y

    x = graph.Var("x", shape=(1, 64, 56, 56))
    basic = op.relu(op.add(conv(conv(x, 64, 64, 3), 64, 64, 3, relu=False), x))
    x2 = graph.Var("x", shape=(1, 24, 56, 56))
    inverted = op.add(conv(conv(conv(x2, 24, 144, 1), 144, 144, 3, groups=144), 144, 24, 1, relu=False), x2)
    for name, x, body in [("ResNet basic block 64x56x56", x, basic), ("MobileNetV2 block 24-144-24 56x56", x2, inverted)]:
        mod = loom.IRModule({"main": graph.Function([x], body)})
        key = "resnet" if "ResNet" in name else "mbv2"
        nchw = LoomTimer(tmp, f"{key}_nchw", mod, threads, CHANNELS_FIRST)
        nhwc = LoomTimer(tmp, f"{key}_nhwc", mod, threads, CHANNELS_LAST)
        yield f"{name} ConvertLayout (ms)", nhwc, nchw, "vs NCHW", "<= 1.0 (conv <= 1.2)", runs


# MobileNetV2's and EfficientNet-B0's depthwise layers (channels, map, window, stride).
DEPTHWISE = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (192, 28, 3, 1), (576, 14, 3, 1), (960, 7, 3, 1),
             (144, 56, 5, 2), (240, 28, 5, 1), (672, 14, 5, 1), (1152, 7, 5, 1)]
# Their pointwise (1x1) layers (input channels, output channels, map).
POINTWISE = [(16, 96, 112), (24, 144, 56), (32, 192, 28), (96, 576, 14), (160, 960, 7), (320, 1280, 7), (960, 160, 7)]
# ResNet-18's 3x3 convolutions (channels, map), which the Winograd pass rewrites.
RESNET_3X3 = [(64, 56), (128, 28), (256, 14), (512, 7)]


def lanes():
    import loom
    return loom.target.vector_bits(loom.target.host()) // 32


def blocked_conv(x, cout, k, stride, groups, act="clip"):
    """conv2d + bias + clip(0, 6) (or hard-swish) in channel blocks of the
    target's vector lanes, as ConvertLayout leaves a layer of a network
    with depthwise convolutions (docs/target-llvm.md, "Layout"): x is
    (1, C/b, H, W, b) (C padded to whole blocks), weights OIHW{b}i{b}o or,
    depthwise, OIHW1i{b}o."""
    from loom import graph, op
    _, cb, _, _, b = (d.value for d in x.annotation.shape)
    o = lanes()  # the result's block: the lanes (the input's is fewer for a 3-channel image)
    ob = -(-cout // o)
    if groups > 1:
        w = graph.Constant(f32(ob, 1, k, k, 1, o, scale=k ** -1.0))
        kernel = f"OIHW1i{o}o"
    else:
        w = graph.Constant(f32(ob, cb, k, k, b, o, scale=(cb * b * k * k) ** -0.5))
        kernel = f"OIHW{b}i{o}o"
    y = op.conv2d(x, w, strides=[stride, stride], padding=[k // 2] * 4, groups=groups, data_layout=f"NCHW{b}c",
                  kernel_layout=kernel)
    y = op.add(y, graph.Constant(f32(ob, 1, 1, o)))
    if act == "hardswish":
        return op.multiply(y, op.clip(op.add(op.multiply(y, graph.Constant(np.array(1 / 6, np.float32))),
                                             graph.Constant(np.array(0.5, np.float32))), a_min=0.0, a_max=1.0))
    return op.clip(y, a_min=0.0, a_max=6.0)


def blocked_input(c, h, name="x"):
    """(1, C/b, H, W, b), the last block padded; C at most the lanes is one block of C (an image's 3)."""
    from loom import graph
    b = lanes()
    return graph.Var(name, shape=(1, -(-c // b), h, h, b) if c > b else (1, 1, h, h, c))


def depthwise_cases(tmp, threads, runs):
    """Depthwise convolutions in channel blocks against their roofline
    (bench/limits.py): the larger of np.copyto moving as many bytes as the
    layer does (its input, output and weights read or written once) and
    its multiply-adds at the measured FMA peak of `threads` threads, so at
    most 1.67 is at least 60 % of the layer's limit (docs/target-llvm.md)."""
    import loom
    from loom import graph
    for c, h, k, stride in DEPTHWISE:
        x = blocked_input(c, h)
        mod = loom.IRModule({"main": graph.Function([x], blocked_conv(x, c, k, stride, c))})
        ho = (h - 1) // stride + 1
        moved = 4 * (h * h * c + ho * ho * c + c * k * k + c)
        yield (f"depthwise {k}x{k} s{stride} {c}x{h}x{h} (ms)", LoomTimer(tmp, f"dw{c}_{h}_{k}_{stride}", mod, threads),
               limits.roofline_timer(moved, c * ho * ho * k * k, threads), "vs roofline", "<= 1.67", runs * 4)


def pointwise_cases(tmp, threads, runs):
    """1x1 convolutions in channel blocks against their roofline (their
    multiply-adds at the FMA peak, or the bytes they move if that takes
    longer): at most 1.25 is at least 80 % of the FMA peak.  Input
    channels the lanes do not divide (24) are padded to whole blocks, as
    ConvertLayout pads them; only the real multiply-adds count."""
    import loom
    from loom import graph
    for cin, cout, h in POINTWISE:
        x = blocked_input(cin, h)
        conv = loom.IRModule({"main": graph.Function([x], blocked_conv(x, cout, 1, 1, 1))})
        moved = 4 * (h * h * (cin + cout) + cin * cout)
        yield (f"pointwise {cin}->{cout} {h}x{h} (ms)", LoomTimer(tmp, f"pw{cin}_{cout}_{h}", conv, threads),
               limits.roofline_timer(moved, cin * cout * h * h, threads), "vs roofline", "<= 1.25", runs * 4)


def stem_and_se_cases(tmp, threads, runs):
    """MobileNetV3's stem (3 -> 16 channels, stride 2, hard-swish) read from
    the image's 3-channel block without a padded copy, and a
    squeeze-and-excitation block (global pool, two 1x1 layers, relu and
    hard-sigmoid, the scale multiplied in), each against its roofline."""
    import loom
    from loom import graph, op
    x = blocked_input(3, 224)
    stem = loom.IRModule({"main": graph.Function([x], blocked_conv(x, 16, 3, 2, 1, act="hardswish"))})
    moved = 4 * (224 * 224 * 3 + 112 * 112 * 16)
    yield ("MobileNetV3 stem 3->16 s2 224x224 + hard-swish (ms)", LoomTimer(tmp, "stem", stem, threads),
           limits.roofline_timer(moved, 112 * 112 * 16 * 27, threads), "vs roofline", "<= 1.67", runs * 4)
    b = lanes()
    for c, h in [(72, 28), (480, 14)]:
        x = blocked_input(c, h)
        cb, sq = -(-c // b), max(c // 4, b) // b * b
        s = op.global_avg_pool2d(x, layout=f"NCHW{b}c")
        s = op.relu(op.add(op.conv2d(s, graph.Constant(f32(sq // b, cb, 1, 1, b, b, scale=c ** -0.5)),
                                     data_layout=f"NCHW{b}c", kernel_layout=f"OIHW{b}i{b}o"),
                           graph.Constant(f32(sq // b, 1, 1, b))))
        s = op.conv2d(s, graph.Constant(f32(cb, sq // b, 1, 1, b, b, scale=sq ** -0.5)), data_layout=f"NCHW{b}c",
                      kernel_layout=f"OIHW{b}i{b}o")
        sixth, half = graph.Constant(np.array(1 / 6, np.float32)), graph.Constant(np.array(0.5, np.float32))
        s = op.clip(op.add(op.multiply(op.add(s, graph.Constant(f32(cb, 1, 1, b))), sixth), half), a_min=0.0, a_max=1.0)
        mod = loom.IRModule({"main": graph.Function([x], op.multiply(x, s))})
        # x read twice (the pool, the scale), the result written, the two layers' weights and biases read once
        moved = 4 * (3 * h * h * cb * b + 2 * cb * b * sq + sq + cb * b)
        yield (f"squeeze-and-excitation {c}x{h}x{h} (ms)", LoomTimer(tmp, f"se{c}", mod, threads),
               limits.roofline_timer(moved, 2 * c * sq, threads), "vs roofline", "<= 1.67", runs * 4)


def winograd_cases(tmp, threads, runs):
    """ResNet-18's 3x3 convolutions (+ bias, relu) built as a model's are
    (channels-first, the default pipeline converting them), against the
    same with `disabled: [Winograd]` (direct, channels-last)."""
    import loom
    from loom import graph, op
    direct = HOST.replace("    - default", "    - default\n  disabled: [Winograd]")
    for c, h in RESNET_3X3:
        x = graph.Var("x", shape=(1, c, h, h))
        w = graph.Constant(f32(c, c, 3, 3, scale=(9 * c) ** -0.5))
        y = op.relu(op.add(op.conv2d(x, w, padding=[1]), graph.Constant(f32(c, 1, 1))))
        mod = loom.IRModule({"main": graph.Function([x], y)})
        yield (f"3x3 conv {c}x{h}x{h} Winograd (ms)", LoomTimer(tmp, f"wg{c}", mod, threads),
               LoomTimer(tmp, f"direct{c}", mod, threads, direct), "vs direct", "<= 0.8", runs * 4)


def reduction_cases(tmp, threads, runs):
    import torch
    import loom
    from loom import graph, op
    for shape in [(128, 1024), (1, 128, 256)]:
        xt = torch.randn(*shape)
        g, b = f32(shape[-1]), f32(shape[-1])
        gt, bt = torch.from_numpy(g), torch.from_numpy(b)
        for name, build, peer in [
                ("softmax", lambda x: op.softmax(x), lambda: torch.softmax(xt, -1)),
                ("log_softmax", lambda x: op.log_softmax(x), lambda: torch.log_softmax(xt, -1)),
                ("layer_norm", lambda x: op.layer_norm(x, graph.Constant(g), graph.Constant(b)),
                 lambda: torch.nn.functional.layer_norm(xt, (shape[-1],), gt, bt))]:
            x = graph.Var("x", shape=shape)
            mod = loom.IRModule({"main": graph.Function([x], build(x))})

            def eager():
                with torch.no_grad():
                    return peer()

            label = "x".join(map(str, shape))
            timer, setting = peers.torch_timer(eager, threads)
            yield (f"{name} [{label}] (ms)", LoomTimer(tmp, f"{name}{len(shape)}", mod, threads), timer,
                   f"vs {setting}", "<= 1.0", runs * 4)


def elementwise_cases(tmp, threads, runs):
    import loom
    from loom import graph, op
    n = 1024
    a, b = graph.Var("a", shape=(n,)), graph.Var("b", shape=(n,))
    loom_t = LoomTimer(tmp, "add1k", loom.IRModule({"main": graph.Function([a, b], op.add(a, b))}), threads)
    x, y = f32(n), f32(n)
    out = np.empty_like(x)
    yield ("add 1K elements (ms)", loom_t, peer_timer(lambda: np.add(x, y, out=out)), "vs np.add out= (1 thr)", "<= 2.0",
           runs * 20)
    n = 1 << 24
    a, b = graph.Var("a", shape=(n,)), graph.Var("b", shape=(n,))
    # Bandwidth: relu(a + b) moves 3 arrays, np.copyto 2; the ratio is of
    # times per byte moved (below 1: Loom moves bytes faster).
    loom_t = LoomTimer(tmp, "relu16m", loom.IRModule({"main": graph.Function([a, b], op.relu(op.add(a, b)))}),
                       threads, scale=2 / 3)
    src = f32(n)
    dst = np.empty_like(src)
    yield ("relu(a+b) 16M, ms per 2 arrays moved", loom_t, peer_timer(lambda: np.copyto(dst, src)), "vs np.copyto (1 thr)",
           "<= 1.0", runs)


CASES = {"mlp": mlp_cases, "matmul": matmul_cases, "conv": conv_block_cases, "depthwise": depthwise_cases,
         "pointwise": pointwise_cases, "stem": stem_and_se_cases, "winograd": winograd_cases,
         "reduce": reduction_cases, "elementwise": elementwise_cases}


def child(threads, runs, wanted):
    import torch
    torch.set_num_threads(threads)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for key, cases in CASES.items():
            if wanted and key not in wanted:
                continue
            for figure, loom, peer, versus, target, n in cases(pathlib.Path(d), threads, runs):
                loom_t, peer_t, ratio = peers.in_rounds(loom, peer, n)
                # 2 threads against 1: Loom's 1-thread time again, in rounds with its 2-thread time.
                scaling = peers.in_rounds(loom, lambda k: loom(k, threads=1), n)[2] if threads == 2 else None
                rows.append([figure, loom_t, peer_t, ratio, versus, target, scaling])
                print(f"  {figure:<48} loom {loom_t:9.4f} | peer {peer_t:9.4f} | {versus:<14} {ratio:5.2f} "
                      f"| target {target}" + (f" | 2t/1t {scaling:.2f}" if scaling else ""), file=sys.stderr, flush=True)
    print(json.dumps(rows))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--child", type=int, default=0)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("cases", nargs="*", choices=[[]] + list(CASES))
    args = parser.parse_args()
    if args.child:
        child(args.child, args.runs, args.cases)
        return
    if not LOOMC.exists():
        sys.exit(f"{LOOMC} is missing: run 'bash scripts/setup.sh' first")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        results = {}
        for threads in (1, 2):
            env = peers.peer_env(OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
            env.pop("LOOM_NUM_THREADS", None)  # it would fix the pool's size for the whole process
            print(f"threads: {threads}", file=sys.stderr, flush=True)
            out = subprocess.run([sys.executable, __file__, "--child", str(threads), "--runs", str(args.runs),
                                  *args.cases], env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
            results[threads] = json.loads(out.strip().splitlines()[-1])
    finally:
        if busy:
            busy.kill()
    import numpy
    print(f"\nOperators, medians of {args.runs}+ runs (ms){' with one core kept busy' if args.busy else ''}; "
          f"NumPy {numpy.__version__}: {peers.blas_kernel()}")
    print(f"| figure | threads | Loom | peer | ratio | target | 2 thr / 1 thr |")
    print("|---|---|---|---|---|---|---|")
    for threads in (1, 2):
        for figure, loom_t, peer_t, ratio, versus, target, scaling in results[threads]:
            print(f"| {figure} | {threads} | {loom_t:.4g} | {peer_t:.4g} | {ratio:.2f} {versus} | {target} "
                  f"| {f'{scaling:.2f}' if scaling else ''} |")


if __name__ == "__main__":
    main()
