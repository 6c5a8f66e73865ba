"""The reference NPU (docs/npu.md, docs/npu-spec.md): partitioning
gives it what its pattern table takes, its codegen compiles each region to
a command stream, its simulator runs it.  Models against NumPy (float64
references), in process and from one exported library in a fresh process;
tiling on a small scratchpad; the cycle report; golden command streams; a
stream written by hand; and every refusal.  The operator suite also runs
with configs/npu.yaml (conftest CONFIGS)."""
import json
import os
import re
import struct
import subprocess

import numpy as np
import pytest

import loom
from loom import graph, op
from conftest import LOOMC, ROOT, run_exported
from op.test_ops_numpy import conv2d_ref

NPU = str(ROOT / "configs" / "npu.yaml")
HOST = str(ROOT / "configs" / "host.yaml")
CNN = (ROOT / "examples" / "cnn.loom").read_text()
GOLDEN = ROOT / "tests" / "fixtures" / "npu"


def max_pool(x, k, s, pad=0):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    return np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s].max(axis=(-2, -1))


def cnn_inputs(rng):
    shapes = [(8, 1, 28, 28), (8, 1, 3, 3), (8, 1, 1), (16, 8, 3, 3), (16, 1, 1), (10, 784), (10,)]
    return [rng.standard_normal(s).astype(np.float32) * (1 if i == 0 else 0.2) for i, s in enumerate(shapes)]


def cnn_reference(x, k1, c1, k2, c2, w, b):
    conv = lambda x, k: conv2d_ref(x, k, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    h = max_pool(np.maximum(conv(x, k1) + c1, 0), 2, 2)
    h = max_pool(np.maximum(conv(h, k2) + c2, 0), 2, 2)
    z = h.reshape(8, -1) @ w.T.astype(np.float64) + b
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def npu_module(lib):
    """The npu module of a built library's tree."""
    pending = [lib]
    while pending:
        m = pending.pop(0)
        if m.kind == "npu":
            return m
        pending.extend(m.imports)
    raise AssertionError("no npu module in the tree")


def built_ir(model, config, tmp_path):
    (tmp_path / "m.loom").write_text(model)
    return subprocess.run([str(LOOMC), "build", str(tmp_path / "m.loom"), "--config", config, "--emit", "ir"],
                          capture_output=True, text=True, check=True).stdout


def test_the_cnn_runs_its_convolutions_pooling_and_dense_on_the_npu(rng, tmp_path):
    text = built_ir(CNN, NPU, tmp_path)
    main = text[text.index("@main = fn"):]
    main = main[:main.index("\n}\n")]
    # Two regions: conv-bias-relu, pool, conv-bias-relu, pool; then dense
    # with its bias. flatten (a reshape the table lacks) and softmax stay
    # on the CPU, between and after them.
    assert re.findall(r"@(npu_region\w*|flatten|softmax)", main) == ["npu_region", "flatten", "npu_region_1", "softmax"]
    assert text.count('composite: "npu.conv2d_bias_act"') == 2 and text.count('composite: "npu.max_pool2d"') == 2
    assert text.count('composite: "npu.dense_bias"') == 1
    inputs = cnn_inputs(rng)
    lib = loom.build(loom.parse(CNN, "cnn.loom"), NPU)
    np.testing.assert_allclose(lib["main"](*inputs).numpy(), cnn_reference(*inputs), rtol=1e-4, atol=1e-6)
    # The cycle report: MACs exactly the model's (8 images; two
    # convolutions of 1->8 and 8->16 channels, 3x3; dense 784->10).
    report = lib.profile()["npu"]
    first, second = report["regions"]["npu_region"], report["regions"]["npu_region_1"]
    assert first["macs"] == 8 * 8 * 28 * 28 * 9 + 8 * 16 * 14 * 14 * 8 * 9 and second["macs"] == 8 * 10 * 784
    assert first["classes"]["MATMUL"]["macs"] == first["macs"] and first["calls"] == 1
    assert first["classes"]["LOAD"]["dma_bytes"] + first["classes"]["STORE"]["dma_bytes"] == first["dma_bytes"]
    # The DMA of the next tile overlaps the current tile's compute: the run
    # is shorter than its engines' busy cycles one after the other.
    busy = sum(c["cycles"] for c in first["classes"].values())
    assert 0 < first["cycles"] < busy
    assert 0 < first["matrix_utilisation"] <= 1
    assert first["matrix_utilisation"] == pytest.approx(first["macs"] / (first["cycles"] * 256), rel=1e-3)


def resnet_and_mobilenet_blocks(rng):
    """A ResNet basic block (3x3 conv-bias-relu, 3x3 conv-bias, residual
    add, relu) then a MobileNetV2 block (1x1 expand with relu6, depthwise
    3x3 stride 2 with relu6, 1x1 project), average pooling and a
    classifier; every weight a constant, laid out at compile time."""
    f = lambda *s: (rng.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)
    p = dict(k1=f(16, 16, 3, 3), b1=f(16, 1, 1), k2=f(16, 16, 3, 3), b2=f(16, 1, 1), e=f(32, 16, 1, 1), eb=f(32, 1, 1),
             d=f(32, 1, 3, 3), db=f(32, 1, 1), q=f(24, 32, 1, 1), qb=f(24, 1, 1), w=f(10, 24), wb=f(10))
    x = graph.Var("x", shape=(2, 16, 12, 12))
    c = {k: graph.Constant(v) for k, v in p.items()}
    h = op.relu(op.add(op.conv2d(x, c["k1"], padding=[1]), c["b1"]))
    h = op.relu(op.add(op.add(op.conv2d(h, c["k2"], padding=[1]), c["b2"]), x))
    h = op.clip(op.add(op.conv2d(h, c["e"]), c["eb"]), a_min=0.0, a_max=6.0)
    h = op.clip(op.add(op.conv2d(h, c["d"], strides=[2], padding=[1], groups=32), c["db"]), a_min=0.0, a_max=6.0)
    h = op.add(op.conv2d(h, c["q"]), c["qb"])
    h = op.global_avg_pool2d(h)
    y = op.add(op.dense(op.flatten(h), c["w"]), c["wb"])
    return loom.IRModule({"main": graph.Function([x], y)}), p


def blocks_reference(x, p):
    conv = lambda x, k, s=1, pad=0, g=1: conv2d_ref(x, k, (s, s), (pad,) * 4, (1, 1), g)
    h = np.maximum(conv(x, p["k1"], pad=1) + p["b1"], 0)
    h = np.maximum(conv(h, p["k2"], pad=1) + p["b2"] + x, 0)
    h = np.clip(conv(h, p["e"]) + p["eb"], 0, 6)
    h = np.clip(conv(h, p["d"], 2, 1, 32) + p["db"], 0, 6)
    h = conv(h, p["q"]) + p["qb"]
    return h.mean(axis=(2, 3)) @ p["w"].T.astype(np.float64) + p["wb"]


def small_scratchpad_config(tmp_path, kib):
    path = tmp_path / f"npu{kib}.yaml"
    path.write_text(f"target:\n  kind: llvm\n  partition:\n    - {{kind: npu, scratchpad-kib: {kib}}}\n")
    return str(path)


@pytest.mark.parametrize("kib", [256, 2], ids=["256KiB", "2KiB"])
def test_resnet_and_mobilenet_blocks_with_constant_weights_match_numpy(rng, tmp_path, kib):
    mod, p = resnet_and_mobilenet_blocks(rng)
    x = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
    lib = loom.build(mod, NPU if kib == 256 else small_scratchpad_config(tmp_path, kib))
    want = blocks_reference(x.astype(np.float64), p)
    np.testing.assert_allclose(lib["main"](x).numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    streams = npu_module(lib).inspect_source("npu")
    # Every weight and bias went into the stream's constant section; the
    # residual add, the depthwise convolution and the pooling are npu code.
    assert re.search(r"constants (\d+) bytes", streams).group(1) != "0"
    assert "depthwise" in streams and "POOL" in streams and "\tadd n=" in streams
    report = lib.profile()["npu"]
    needed = max(int(w) for w in re.findall(r"scratchpad (\d+) words", streams))
    assert needed <= kib * 256  # each tile fits (twice over) the device's scratchpad
    if kib == 2:
        # Tiled, not refused: more instructions than on the big scratchpad.
        assert sum(r["classes"]["MATMUL"]["instructions"] for r in report["regions"].values()) > 20


def test_an_exported_library_runs_in_a_fresh_process(rng, tmp_path):
    inputs = cnn_inputs(rng)
    path = tmp_path / "cnn.so"
    loom.build(loom.parse(CNN, "cnn.loom"), NPU).export_library(str(path))
    got = run_exported(path, inputs, tmp_path, [["vm"], ["library"], ["npu"]],
                       "assert lib.profile()['npu']['regions']['npu_region']['calls'] == 1\n")
    np.testing.assert_allclose(got, cnn_reference(*inputs), rtol=1e-4, atol=1e-6)
    # loomc shows the tree and disassembles the streams; run --profile
    # prints the cycle report.
    shown = subprocess.run([str(LOOMC), "inspect", str(path), "--source", "npu"], capture_output=True, text=True,
                           check=True).stdout
    assert re.search(r"^      npu: 2 functions \(npu_region, npu_region_1\)", shown, re.M), shown
    assert "; npu command stream 1.0:" in shown and "MATMUL\tconv M=8 N=784 K=9" in shown
    ran = subprocess.run([str(LOOMC), "run", str(path), "--profile"], capture_output=True, text=True, check=True).stdout
    assert "profile of the npu module:" in ran and re.search(r"macs: 2257920\n", ran), ran


def test_arrays_on_the_npu_device_are_passed_as_they_are(rng):
    # The npu's device is the vendor device "npu" (its memory is host
    # memory): an npu function takes its arrays directly.
    lib = loom.build(loom.parse("@main = fn(%x: Tensor[(4, 6), float32]) { clip(%x, a_min=-0.5, a_max=0.5) }"), NPU)
    region = npu_module(lib)["npu_region"]
    x = rng.standard_normal((4, 6)).astype(np.float32)
    on_npu, out = loom.nd.array(x, device="npu"), loom.nd.array(np.zeros((4, 6), np.float32), device="npu")
    assert str(on_npu.device) == "npu:0"
    region(on_npu, out)
    np.testing.assert_array_equal(out.copyto("cpu").numpy(), np.clip(x, -0.5, 0.5))
    with pytest.raises(loom.LoomError, match="copy"):
        out.numpy()
    with pytest.raises(loom.LoomError, match=r"npu: @npu_region: argument 1 has extent 4 in dimension 1, expected 6"):
        region(on_npu, loom.nd.array(np.zeros((6, 4), np.float32), device="npu"))


def test_mobilenet_v2_from_the_importer_runs_on_the_npu_but_flatten(tmp_path):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    from frontend.model_util import randomize_batch_norms
    from loom.frontend.torchscript import from_torchscript
    torch.manual_seed(0)
    model = randomize_batch_norms(torchvision.models.mobilenet_v2()).eval()
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        mod = from_torchscript(model, [x])
        want = model(x).numpy()
    lib = loom.build(mod, NPU)
    got = lib["main"](x.numpy()).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    # 52 convolutions (17 of them depthwise), 10 residual adds, the
    # pooling and the classifier on the npu; only flatten on the CPU.
    report = lib.profile()["npu"]["regions"]
    assert len(report) == 2
    text = npu_module(lib).inspect_source("npu")
    assert text.count("MATMUL\tdepthwise") >= 17 and text.count("\tadd n=") >= 10
    assert [m.function_names() for m in lib.imports] == [["flatten"]]


# Layers whose command streams are golden files (tests/fixtures/npu/): a
# convolution with bias and relu6, a depthwise convolution with stride 2,
# dense with its bias on two chunks of a 4 KiB scratchpad, and max pooling
# with padding.
GOLDEN_LAYERS = {
    "conv2d_bias_clip": ("fn(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 3, 3), float32], "
                         "%b: Tensor[(4, 1, 1), float32]) { clip(add(conv2d(%x, %w, padding=[1]), %b), a_min=0.0, a_max=6.0) }", 256,
                         [(1, 3, 6, 6), (4, 3, 3, 3), (4, 1, 1)]),
    "depthwise_stride2": ("fn(%x: Tensor[(1, 8, 8, 8), float32], %w: Tensor[(8, 1, 3, 3), float32]) "
                          "{ conv2d(%x, %w, strides=[2], padding=[1], groups=8) }", 256, [(1, 8, 8, 8), (8, 1, 3, 3)]),
    "dense_bias_chunks": ("fn(%x: Tensor[(4, 300), float32], %w: Tensor[(6, 300), float32], %b: Tensor[(6), float32]) "
                          "{ add(dense(%x, %w), %b) }", 4, [(4, 300), (6, 300), (6,)]),
    "max_pool2d_pad": ("fn(%x: Tensor[(1, 2, 5, 5), float32]) { max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1]) }",
                       256, [(1, 2, 5, 5)]),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_LAYERS))
def test_command_streams_match_their_golden_files(tmp_path, name):
    body, kib, shapes = GOLDEN_LAYERS[name]
    config = NPU if kib == 256 else small_scratchpad_config(tmp_path, kib)
    lib = loom.build(loom.parse(f"@main = {body}\n", name + ".loom"), config)
    got = npu_module(lib).inspect_source("npu")
    golden = GOLDEN / f"{name}.txt"
    if not golden.exists() and os.environ.get("LOOM_WRITE_GOLDEN"):
        golden.write_text(got)
    assert got == golden.read_text(), f"{golden} differs; the stream now reads:\n{got}"
    # And the stream computes the layer.
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    reference = loom.build(loom.parse(f"@main = {body}\n"), HOST)["main"](*args).numpy()
    np.testing.assert_allclose(lib["main"](*args).numpy(), reference, rtol=1e-5, atol=1e-5)


def test_what_the_npu_lacks_stays_on_the_cpu(tmp_path):
    model = ("@main = fn(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) {\n"
             "  let %g = conv2d(%x, %w, padding=[1], groups=2);\n"              # grouped, not depthwise
             "  let %a = avg_pool2d(%g, pool_size=[3, 3], padding=[1]);\n"     # the mean over the inside
             "  let %s = softmax(%a, axis=1);\n"                                 # no such unit
             "  relu(%s)\n}\n")
    text = built_ir(model, NPU, tmp_path)
    assert text.count('codegen: "npu"') == 2 and "npu.relu" in text, text  # only the relu: its region and composite
    for kept in ("@conv2d", "@avg_pool2d", "@softmax"):
        assert re.search(kept + r"\w* = prim_func", text), kept


def test_a_bias_that_broadcasts_beyond_the_channels_is_not_the_npus(rng, tmp_path):
    # (4, 1, 1, 1) against (1, 4, 6, 6) makes (4, 4, 6, 6): not one value per
    # channel, so the add stays on the CPU and only the convolution is the npu's.
    model = ("@main = fn(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 3, 3), float32], "
             "%b: Tensor[(4, 1, 1, 1), float32]) { add(conv2d(%x, %w, padding=[1]), %b) }\n")
    text = built_ir(model, NPU, tmp_path)
    assert 'composite: "npu.conv2d"' in text and "npu.conv2d_bias" not in text, text
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(1, 3, 6, 6), (4, 3, 3, 3), (4, 1, 1, 1)])
    got = loom.build(loom.parse(model), NPU)["main"](x, w, b).numpy()
    want = conv2d_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b
    assert got.shape == (4, 4, 6, 6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- a stream by hand (docs/npu-spec.md) -----------------------------------

def header(buffers, instructions, scratchpad, constants=b"", major=1, minor=0, inputs=2, outputs=1):
    h = b"LNPU" + struct.pack("<HHIIIIQQII", major, minor, 64, len(buffers), len(instructions), scratchpad,
                              len(constants), 0, inputs, outputs)
    return h + bytes(64 - len(h))


def buffer(kind, index, words):
    return struct.pack("<BBHIQQQ", kind, 0, 0, index, 0, words, 0)


def instruction(opcode, fields, wait=0, signal=0, dtype=0):
    fields = list(fields) + [0] * (22 - len(fields))
    return struct.pack("<BBHHH22i", opcode, dtype, wait, signal, 0, *fields)


def add_stream(n=10, spad_b=16, scratchpad=32, **kw):
    """out = a + b: LOAD a -> spad 0, LOAD b -> spad spad_b, VEC add,
    STORE; the VEC waits on semaphore 0, the STORE on 1."""
    bufs = [buffer(0, 0, n), buffer(0, 1, n), buffer(1, 0, n)]
    insts = [instruction(1, [0, 0, 0, n, 1, 1, 1, 0, 0, 1, 0, 0]),
             instruction(1, [1, 0, spad_b, n, 1, 1, 1, 0, 0, 1, 0, 0], signal=1),
             instruction(5, [0, n, 0, 0, spad_b], wait=1, signal=2),
             instruction(2, [2, 0, 0, n, 1, 1, 1, 0, 0, 1, 0, 0], wait=2),
             instruction(8, [])]
    return header(bufs, insts, scratchpad, **kw) + b"".join(bufs) + b"".join(insts)


def run_stream(stream, n=10, kib=1):
    a, b = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    out = loom.nd.array(np.zeros(n, np.float32))
    report = json.loads(loom.runtime.get_global_func("npu.run_stream")(stream, [loom.nd.array(a), loom.nd.array(b)],
                                                                       [out], kib))
    return out.numpy(), report


def test_a_stream_written_by_hand_runs_and_is_timed():
    out, report = run_stream(add_stream())
    np.testing.assert_array_equal(out, np.arange(10) + 0.5)
    # Two loads one after the other on the DMA engine (64 + 1 cycles each),
    # the add (8 + 1), the store (65): 204 cycles, 120 bytes moved.
    assert report["cycles"] == 65 + 65 + 9 + 65 and report["dma_bytes"] == 120
    text = loom.runtime.get_global_func("npu.disassemble")(add_stream())
    assert "VEC\tadd n=10 dst=0 src0=0 src1=16  wait s0  signal s1" in text


@pytest.mark.parametrize("stream, message", ids=["magic", "truncated", "trailing", "version", "opcode", "int8"], argvalues=[
    (b"NOPE" + bytes(60), "at byte 0: not an npu command stream (no magic 'LNPU')"),
    (add_stream()[:100], "at byte 12: the header counts 3 buffers and 5 instructions, more than the stream's 100 bytes hold"),
    (add_stream() + b"\0", "the header's sizes add up to 640 bytes, the stream has 641"),
    (add_stream(major=2), "at byte 4: version 2.0, this executor reads version 1.x"),
    (add_stream()[:64 + 96] + instruction(9, []) + add_stream()[64 + 96 + 96:], "has unknown opcode 9"),
    (add_stream()[:64 + 96] + instruction(1, [0], dtype=1) + add_stream()[64 + 96 + 96:], "at byte 161: instruction 0 has dtype int8, which version 1.0 does not have (the integer mode is version 1.1)"),
])
def test_malformed_streams_are_refused_with_where(stream, message):
    for name in ("npu.disassemble", "npu.run_stream"):
        with pytest.raises(loom.LoomError, match=re.escape(message)):
            if name == "npu.disassemble":
                loom.runtime.get_global_func(name)(stream)
            else:
                run_stream(stream)


@pytest.mark.parametrize("stream, kib, message", ids=["needs-more", "outside", "output-too-small"], argvalues=[
    (add_stream(scratchpad=2048), 1, "the stream needs 2048 words of scratchpad, the device has 256"),
    (add_stream(spad_b=250), 1, "instruction 1 (LOAD): scratchpad range [250, 259] lies outside its 256 words"),
    (add_stream(n=10)[:64 + 32 * 2] + buffer(1, 0, 12) + add_stream(n=10)[64 + 32 * 3:], 1,
     "output 0 has 10 words, the stream uses 12"),
])
def test_a_stream_that_overflows_is_refused(stream, kib, message):
    with pytest.raises(loom.LoomError, match=re.escape(message)):
        run_stream(stream, kib=kib)


def test_a_wait_nothing_signalled_is_a_deadlock():
    stream = bytearray(add_stream())
    stream[64 + 3 * 32 + 96 * 2 + 2] = 4  # the VEC waits on semaphore 2 instead
    with pytest.raises(loom.LoomError, match=r"instruction 2 \(VEC\): waits on semaphore 2, which no earlier instruction "
                                         r"signalled: the stream would deadlock"):
        run_stream(bytes(stream))


def test_a_config_naming_no_table_and_a_target_without_its_partition_are_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("target:\n  kind: llvm\n  partition: [npv]\n")
    with pytest.raises(loom.LoomError, match=r"bad.yaml:3:15: no pattern table named 'npv'.*did you mean 'npu'"):
        loom.build(loom.parse(CNN, "cnn.loom"), str(bad))
    # npu is a codegen to partition for, not a module's target.
    direct = tmp_path / "direct.yaml"
    direct.write_text("target: {kind: npu}\n")
    with pytest.raises(loom.LoomError, match=re.escape("target kind 'npu' compiles only the regions partitioning gives it; "
                                                       "build for a CPU target and partition for it: target: {kind: llvm, "
                                                       "partition: [npu]}")):
        loom.build(loom.parse(CNN, "cnn.loom"), str(direct))
