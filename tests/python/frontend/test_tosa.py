"""TOSA in and out (docs/tosa.md): a CNN and an MLP written in MLIR's TOSA
dialect (as MLIR 16 prints it) import into Loom and agree with NumPy and
with the same network built with loom.op; to_mlir prints them back as
TOSA that mlir-opt-16 verifies, and the round trip TOSA -> Loom -> TOSA ->
Loom is structurally equal; every refusal names the line and column."""
import shutil
import subprocess

import numpy as np
import pytest

import loom
from loom import graph, ir, op
from loom.frontend import mlir
from conftest import LOOMC, ROOT

HOST = str(ROOT / "configs" / "host.yaml")
MLIR_OPT = shutil.which("mlir-opt-16") or shutil.which("/usr/lib/llvm-16/bin/mlir-opt")
needs_mlir_opt = pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-16 is not installed (mlir-16-tools)")


def t(shape, e="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + e + ">"


def dense(a):
    """A tosa.const of array a (float32 or int32), MLIR's hex form."""
    e = {"float32": "f32", "int32": "i32", "int64": "i64"}[str(a.dtype)]
    return (f'"tosa.const"() {{value = dense<"0x{np.ascontiguousarray(a).tobytes().hex().upper()}"> : '
            f'{t(a.shape, e)}}} : () -> {t(a.shape, e)}')


def weights(seed):
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)
    return dict(w1=f(4, 3, 3, 3), b1=f(4), wd=f(3, 3, 4, 2), bd=f(8), wf=f(10, 32), bf=f(10))


def cnn_text(w):
    return f"""// A small CNN in TOSA: conv, relu6, depthwise, pools, a residual, a classifier, softmax.
module {{
  func.func @main(%x: {t((1, 8, 8, 3))}) -> {t((1, 10))} {{
    %w1 = {dense(w['w1'])}
    %b1 = {dense(w['b1'])}
    %0 = "tosa.conv2d"(%x, %w1, %b1) {{dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : ({t((1, 8, 8, 3))}, {t((4, 3, 3, 3))}, {t((4,))}) -> {t((1, 8, 8, 4))}
    %1 = "tosa.clamp"(%0) {{max_fp = 6.000000e+00 : f32, max_int = 6 : i64, min_fp = 0.000000e+00 : f32, min_int = 0 : i64}} : ({t((1, 8, 8, 4))}) -> {t((1, 8, 8, 4))}
    %wd = {dense(w['wd'])}
    %bd = {dense(w['bd'])}
    %2 = "tosa.depthwise_conv2d"(%1, %wd, %bd) {{dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 2, 2>}} : ({t((1, 8, 8, 4))}, {t((3, 3, 4, 2))}, {t((8,))}) -> {t((1, 4, 4, 8))}
    %3 = "tosa.avg_pool2d"(%2) {{kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : ({t((1, 4, 4, 8))}) -> {t((1, 4, 4, 8))}
    %4 = "tosa.add"(%2, %3) : ({t((1, 4, 4, 8))}, {t((1, 4, 4, 8))}) -> {t((1, 4, 4, 8))}
    %5 = "tosa.max_pool2d"(%4) {{kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : ({t((1, 4, 4, 8))}) -> {t((1, 2, 2, 8))}
    %6 = "tosa.reshape"(%5) {{new_shape = array<i64: 1, 32>}} : ({t((1, 2, 2, 8))}) -> {t((1, 32))}
    %wf = {dense(w['wf'])}
    %bf = {dense(w['bf'])}
    %7 = "tosa.fully_connected"(%6, %wf, %bf) : ({t((1, 32))}, {t((10, 32))}, {t((10,))}) -> {t((1, 10))}
    %8 = "tosa.reduce_max"(%7) {{axis = 1 : i64}} : ({t((1, 10))}) -> {t((1, 1))}
    %9 = "tosa.sub"(%7, %8) : ({t((1, 10))}, {t((1, 1))}) -> {t((1, 10))}
    %10 = "tosa.exp"(%9) : ({t((1, 10))}) -> {t((1, 10))}
    %11 = "tosa.reduce_sum"(%10) {{axis = 1 : i64}} : ({t((1, 10))}) -> {t((1, 1))}
    %12 = "tosa.reciprocal"(%11) : ({t((1, 1))}) -> {t((1, 1))}
    %13 = "tosa.mul"(%10, %12) {{shift = 0 : i32}} : ({t((1, 10))}, {t((1, 1))}) -> {t((1, 10))}
    return %13 : {t((1, 10))}
  }}
}}
"""


def conv_nhwc(x, w, pad, stride=1, groups=1):
    """NumPy: x N H W C, w O KH KW C/groups, pad (top, bottom, left, right)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)))
    o, kh, kw, cg = w.shape
    n, h, wd, c = x.shape
    ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, ho, wo, o))
    for oc in range(o):
        g = oc // (o // groups)
        win = np.lib.stride_tricks.sliding_window_view(x[..., g * cg:(g + 1) * cg], (kh, kw), axis=(1, 2))
        win = win[:, ::stride, ::stride][:, :ho, :wo]  # N Ho Wo C KH KW
        out[..., oc] = np.einsum("nhwcij,ijc->nhw", win, w[oc])
    return out


def pool_nhwc(x, k, stride, pad, kind):
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::stride, ::stride]
    return win.max(axis=(-2, -1)) if kind == "max" else np.nanmean(win, axis=(-2, -1))


def cnn_reference(x, w):
    h = np.clip(conv_nhwc(x, w["w1"], (1, 1, 1, 1)) + w["b1"], 0, 6)
    kh, kw, c, m = w["wd"].shape
    wd = w["wd"].reshape(kh, kw, c * m).transpose(2, 0, 1)[..., None]
    h = conv_nhwc(h, wd, (0, 1, 0, 1), stride=2, groups=c) + w["bd"]
    h = h + pool_nhwc(h, 3, 1, 1, "avg")
    h = pool_nhwc(h, 2, 2, 0, "max").reshape(1, 32)
    z = h @ w["wf"].T.astype(np.float64) + w["bf"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def cnn_with_loom_op(w):
    """The same network, written with loom.op."""
    x = graph.Var("x", shape=(1, 8, 8, 3))
    c = graph.Constant
    kh, kw, ch, m = w["wd"].shape
    wd = np.ascontiguousarray(w["wd"].reshape(kh, kw, ch * m).transpose(2, 0, 1)[..., None])
    h = op.clip(op.add(op.conv2d(x, c(w["w1"]), padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="OHWI"),
                       c(w["b1"])), a_min=0.0, a_max=6.0)
    h = op.add(op.conv2d(h, c(wd), strides=[2, 2], padding=[0, 0, 1, 1], groups=ch, data_layout="NHWC",
                         kernel_layout="OHWI"), c(w["bd"]))
    h = op.add(h, op.avg_pool2d(h, pool_size=[3, 3], padding=[1, 1, 1, 1], layout="NHWC"))
    h = op.reshape(op.max_pool2d(h, pool_size=[2, 2], strides=[2, 2], layout="NHWC"), shape=[1, 32])
    z = op.add(op.dense(h, c(w["wf"])), c(w["bf"]))
    return ir.IRModule({"main": graph.Function([x], op.softmax(z, axis=1))})


def run(mod, *args):
    out = loom.build(mod, HOST)["main"](*args)
    return out.numpy() if hasattr(out, "numpy") else [o.numpy() for o in out]


def test_a_cnn_in_tosa_agrees_with_numpy_and_with_the_same_network_built_with_loom_op():
    w = weights(0)
    mod = mlir.from_tosa(cnn_text(w))
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((1, 8, 8, 3)).astype(np.float32)
        got = run(mod, x)
        np.testing.assert_allclose(got, cnn_reference(x, w), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, run(cnn_with_loom_op(w), x), rtol=1e-5, atol=1e-6)


def mlp_text(w):
    i32 = lambda v: np.array(v, np.int32)
    return f"""func.func @mlp(%x: {t((2, 16))}) -> ({t((2, 4))}, {t((2, 8), "i32")}) {{
  %w1 = {dense(w['w1'])}
  %b1 = {dense(w['b1'])}
  %0 = "tosa.fully_connected"(%x, %w1, %b1) : ({t((2, 16))}, {t((32, 16))}, {t((32,))}) -> {t((2, 32))}
  %1 = "tosa.tanh"(%0) : ({t((2, 32))}) -> {t((2, 32))}
  %pads = {dense(np.array([[0, 0], [1, 2]], np.int64))}
  %2 = "tosa.pad"(%1, %pads) : ({t((2, 32))}, {t((2, 2), "i64")}) -> {t((2, 35))}
  %3 = "tosa.slice"(%2) {{size = array<i64: 2, 32>, start = array<i64: 0, 1>}} : ({t((2, 35))}) -> {t((2, 32))}
  %perm = {dense(i32([1, 0]))}
  %4 = "tosa.transpose"(%3, %perm) : ({t((2, 32))}, {t((2,), "i32")}) -> {t((32, 2))}
  %5 = "tosa.transpose"(%4, %perm) : ({t((32, 2))}, {t((2,), "i32")}) -> {t((2, 32))}
  %6 = "tosa.concat"(%1, %5) {{axis = 1 : i64}} : ({t((2, 32))}, {t((2, 32))}) -> {t((2, 64))}
  %7 = "tosa.mul"(%6, %6) {{shift = 0 : i32}} : ({t((2, 64))}, {t((2, 64))}) -> {t((2, 64))}
  %one = "tosa.const"() {{value = dense<1.000000e+00> : {t((1, 1))}}} : () -> {t((1, 1))}
  %8 = "tosa.add"(%7, %one) : ({t((2, 64))}, {t((1, 1))}) -> {t((2, 64))}
  %9 = "tosa.rsqrt"(%8) : ({t((2, 64))}) -> {t((2, 64))}
  %w2 = {dense(w['w2'])}
  %b2 = {dense(w['b2'])}
  %10 = "tosa.fully_connected"(%9, %w2, %b2) : ({t((2, 64))}, {t((8, 64))}, {t((8,))}) -> {t((2, 8))}
  %11 = "tosa.reshape"(%10) {{new_shape = array<i64: 1, 2, 8>}} : ({t((2, 8))}) -> {t((1, 2, 8))}
  %w3 = {dense(w['w3'])}
  %12 = "tosa.matmul"(%11, %w3) : ({t((1, 2, 8))}, {t((1, 8, 4))}) -> {t((1, 2, 4))}
  %13 = "tosa.reshape"(%12) {{new_shape = array<i64: 2, 4>}} : ({t((1, 2, 4))}) -> {t((2, 4))}
  %14 = "tosa.sigmoid"(%13) : ({t((2, 4))}) -> {t((2, 4))}
  %scale = "tosa.const"() {{value = dense<4.000000e+00> : {t((1, 1))}}} : () -> {t((1, 1))}
  %15 = "tosa.mul"(%10, %scale) {{shift = 0 : i32}} : ({t((2, 8))}, {t((1, 1))}) -> {t((2, 8))}
  %16 = "tosa.cast"(%15) : ({t((2, 8))}) -> {t((2, 8), "i32")}
  %17 = "tosa.clamp"(%16) {{max_fp = 3.000000e+00 : f32, max_int = 3 : i64, min_fp = -3.000000e+00 : f32, min_int = -3 : i64}} : ({t((2, 8), "i32")}) -> {t((2, 8), "i32")}
  return %14, %17 : {t((2, 4))}, {t((2, 8), "i32")}
}}
"""


def mlp_weights(seed):
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)
    return dict(w1=f(32, 16), b1=f(32), w2=f(8, 64), b2=f(8), w3=f(1, 8, 4))


def mlp_reference(x, w):
    h = np.tanh(x.astype(np.float64) @ w["w1"].T + w["b1"])
    c = np.concatenate([h, h], axis=1)
    z = (1 / np.sqrt(c * c + 1)) @ w["w2"].T + w["b2"]
    y = 1 / (1 + np.exp(-(z @ w["w3"][0])))
    q = np.clip(np.round(z * 4), -3, 3).astype(np.int32)  # TOSA's cast rounds to nearest even
    return y, q


def mlp_with_loom_op(w):
    """The same MLP, written with loom.op."""
    x = graph.Var("x", shape=(2, 16))
    c = graph.Constant
    h = op.tanh(op.add(op.dense(x, c(w["w1"])), c(w["b1"])))
    p = op.slice(op.pad(h, pad_width=[0, 0, 1, 2]), begin=[0, 1], end=[2, 33])
    p = op.transpose(op.transpose(p, axes=[1, 0]), axes=[1, 0])
    joined = op.concat(h, p, axis=1)
    r = op.rsqrt(op.add(op.multiply(joined, joined), c(np.ones((1, 1), np.float32))))
    z = op.add(op.dense(r, c(w["w2"])), c(w["b2"]))
    y = op.sigmoid(op.reshape(op.matmul(op.reshape(z, shape=[1, 2, 8]), c(w["w3"])), shape=[2, 4]))
    q = op.multiply(z, c(np.full((1, 1), 4, np.float32)))
    q = op.clip(op.cast(op.round(q), dtype="int32"), a_min=-3.0, a_max=3.0)
    return ir.IRModule({"main": graph.Function([x], graph.Tuple([y, q]))})


def test_an_mlp_in_tosa_agrees_with_numpy_and_with_the_same_network_built_with_loom_op():
    w = mlp_weights(1)
    mod = mlir.from_tosa(mlp_text(w))
    x = np.random.default_rng(2).standard_normal((2, 16)).astype(np.float32)
    y, q = run(mod, x)
    want_y, want_q = mlp_reference(x, w)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    assert q.dtype == np.int32 and np.abs(q - want_q).max() <= 1 and (q == want_q).mean() > 0.9
    assert len(np.unique(want_q)) > 3
    same_y, same_q = run(mlp_with_loom_op(w), x)
    np.testing.assert_allclose(y, same_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(q, same_q)


@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_the_tosa_round_trip_gives_the_same_module(name):
    text = cnn_text(weights(0)) if name == "cnn" else mlp_text(mlp_weights(1))
    first = mlir.from_tosa(text)
    printed = first.to_mlir()
    second = mlir.from_tosa(printed)
    assert ir.structural_equal(first, second), printed
    assert mlir.from_tosa(second.to_mlir()) is not None and second.to_mlir() == printed


@needs_mlir_opt
@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_mlir_opt_verifies_the_inputs_and_what_to_mlir_prints(name, tmp_path):
    text = cnn_text(weights(0)) if name == "cnn" else mlp_text(mlp_weights(1))
    for label, source in (("input", text), ("printed", mlir.from_tosa(text).to_mlir())):
        path = tmp_path / f"{label}.mlir"
        path.write_text(source)
        done = subprocess.run([MLIR_OPT, "--verify-diagnostics", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, f"{label}:\n{done.stderr}"


def test_loom_op_networks_print_as_tosa_that_builds_to_the_same_numbers():
    # A network that did not come from TOSA: built with loom.op, printed,
    # imported back, the same outputs.
    w = weights(3)
    mod = cnn_with_loom_op(w)
    body = mod["main"].body
    mod = ir.IRModule({"main": graph.Function(list(mod["main"].params), body.args[0])})  # softmax has no TOSA op
    back = mlir.from_tosa(mod.to_mlir())
    x = np.random.default_rng(4).standard_normal((1, 8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(run(back, x), run(mod, x), rtol=1e-5, atol=1e-5)


def test_loomc_imports_a_tosa_file(tmp_path):
    w = weights(0)
    (tmp_path / "cnn.mlir").write_text(cnn_text(w))
    done = subprocess.run([str(LOOMC), "import", str(tmp_path / "cnn.mlir"), "-o", str(tmp_path / "cnn.loom")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    mod = loom.ir.load(str(tmp_path / "cnn.loom"))
    x = np.random.default_rng(5).standard_normal((1, 8, 8, 3)).astype(np.float32)
    np.testing.assert_allclose(run(mod, x), cnn_reference(x, w), rtol=1e-5, atol=1e-6)


# ---- refusals --------------------------------------------------------------------

BAD = """func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = "tosa.erf"(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %1 = "tosa.floor"(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %2 = "tosa.erf"(%1) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  return %2 : tensor<1x4xf32>
}
"""


def test_unsupported_operations_are_listed_in_one_error_with_where():
    with pytest.raises(loom.frontend.UnsupportedOperatorError) as e:
        mlir.from_tosa(BAD, filename="bad.mlir")
    message = str(e.value)
    assert "uses 2 operations Loom cannot import" in message
    assert "tosa.erf: 2 operations, first at bad.mlir:2:8" in message and "tosa.floor: 1 operation, first at " \
                                                                        "bad.mlir:3:8" in message, message


@pytest.mark.parametrize("text, message", ids=["syntax", "custom-syntax", "element", "undefined", "shift", "quantized",
                                               "perms"], argvalues=[
    ("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = \"tosa.exp\"(%x : (tensor<2xf32>) -> tensor<2xf32>\n"
     "  return %0 : tensor<2xf32>\n}\n", "<mlir>:2:22: expected ',' or ')', found ': (tensor<2x'"),
    ("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = tosa.exp %x : tensor<2xf32>\n"
     "  return %0 : tensor<2xf32>\n}\n", "<mlir>:2:8: 'tosa.exp' in its custom syntax"),
    ("func.func @main(%x: tensor<2xc64>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n",
     "<mlir>:1:21: element type 'c64' is not one the reader takes"),
    ("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = \"tosa.exp\"(%y) : (tensor<2xf32>) -> "
     "tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n", "<mlir>:2:8: tosa.exp uses %y, which nothing before it defines"),
    ("func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {\n  %0 = \"tosa.mul\"(%x, %x) {shift = 3 : i32} : "
     "(tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>\n  return %0 : tensor<2xi32>\n}\n",
     "<mlir>:2:8: tosa.mul: shift = 3: a fixed-point multiply is not imported"),
    ("func.func @main(%x: tensor<1x2xi8>, %w: tensor<3x2xi8>, %b: tensor<3xi32>) -> tensor<1x3xi32> {\n"
     "  %0 = \"tosa.fully_connected\"(%x, %w, %b) {quantization_info = #tosa.conv_quant<input_zp = 1, weight_zp = 0>} "
     ": (tensor<1x2xi8>, tensor<3x2xi8>, tensor<3xi32>) -> tensor<1x3xi32>\n  return %0 : tensor<1x3xi32>\n}\n",
     "<mlir>:2:8: tosa.fully_connected: attribute 'quantization_info' (quantized TOSA) is not imported"),
    ("func.func @main(%x: tensor<2x3xf32>, %p: tensor<2xi32>) -> tensor<3x2xf32> {\n  %0 = \"tosa.transpose\"(%x, %p) : "
     "(tensor<2x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>\n  return %0 : tensor<3x2xf32>\n}\n",
     "<mlir>:2:8: tosa.transpose: perms must be a constant"),
])
def test_bad_tosa_is_refused_with_its_line_and_column(text, message):
    with pytest.raises(loom.LoomError) as e:
        mlir.from_tosa(text)
    assert message in str(e.value), str(e.value)


def test_what_tosa_cannot_say_is_refused_by_to_mlir():
    x = graph.Var("x", shape=(1, 3, 8, 8))
    w = graph.Constant(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(loom.LoomError, match=r"conv2d in NCHW/OIHW: TOSA's is NHWC/OHWI"):
        ir.IRModule({"main": graph.Function([x], op.conv2d(x, w))}).to_mlir()
    with pytest.raises(loom.LoomError, match="operator softmax has no TOSA counterpart"):
        ir.IRModule({"main": graph.Function([x], op.softmax(x, axis=1))}).to_mlir()
    with pytest.raises(loom.LoomError, match="to_mlir is an IRModule's"):
        x.to_mlir()


@needs_mlir_opt
@pytest.mark.parametrize("flags", [["--mlir-print-debuginfo"], ["--mlir-print-op-generic"], ["--canonicalize"]],
                         ids=["locations", "generic", "canonicalized"])
def test_what_mlir_opt_writes_of_the_networks_imports_to_the_same_numbers(flags, tmp_path):
    # The same networks as MLIR's own tool writes them: loc(...) trailers
    # and #loc aliases, the fully generic form, and canonicalized.
    x = np.random.default_rng(6).standard_normal((1, 8, 8, 3)).astype(np.float32)
    xm = np.random.default_rng(7).standard_normal((2, 16)).astype(np.float32)
    for text, arg in ((cnn_text(weights(0)), x), (mlp_text(mlp_weights(1)), xm)):
        (tmp_path / "in.mlir").write_text(text)
        done = subprocess.run([MLIR_OPT, *flags, str(tmp_path / "in.mlir"), "-o", str(tmp_path / "out.mlir")],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        got, want = run(mlir.from_tosa(str(tmp_path / "out.mlir")), arg), run(mlir.from_tosa(text), arg)
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
