"""The ONNX importer (docs/frontends.md): each converter on one-node models
against NumPy, the unsupported-operator error, weights as parameters, and
torchvision's ResNet-18 and MobileNetV2 and a Transformer encoder exported
by torch.onnx.export, against PyTorch."""
import io
import re
import subprocess

import numpy as np
import pytest

import loom
from loom import frontend
from loom.frontend import onnx as lonnx

from conftest import LOOMC, ROOT, optional_import, requires
from model_util import check_every_length, encoder_with_dynamic_axes, randomize_batch_norms

# Each test says what it needs: the converter registry's own tests need
# neither ONNX nor PyTorch, the whole models need both.
onnx = optional_import("onnx")
torch = optional_import("torch")
torchvision = optional_import("torchvision")
if onnx:
    from onnx import TensorProto, helper, numpy_helper

HOST = str(ROOT / "configs" / "host.yaml")
rng = np.random.default_rng(0)


def model(nodes, inputs, outputs, initializers=(), opset=13):
    """A one-graph ONNX model; inputs and outputs are (name, shape) with
    float32 elements (an output shape may be None)."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        initializer=[numpy_helper.from_array(np.asarray(a), name=n) for n, a in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def run(m, *arrays):
    lib = loom.build(lonnx.from_onnx(m), HOST)
    return lib["main"](*arrays).numpy()


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def conv_ref(x, w, stride, pads, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - kh) // stride + 1
    ow = (xp.shape[3] - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out


@requires("onnx")
def test_conv_with_bias_padding_stride_and_groups():
    x, w, b = f32(2, 4, 9, 9), f32(6, 2, 3, 3), f32(6)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 0, 1, 2], group=2, name="c")
    got = run(model([node], [("x", x.shape)], [("y", None)], [("w", w), ("b", b)]), x)
    want = conv_ref(x, w, 2, [1, 0, 1, 2], groups=2) + b.reshape(-1, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@requires("onnx")
def test_same_upper_padding_is_resolved_on_the_shape():
    x, w = f32(1, 3, 7, 7), f32(4, 3, 3, 3)
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")
    got = run(model([node], [("x", x.shape)], [("y", None)], [("w", w)]), x)
    # out 4 = ceil(7 / 2); total padding (4 - 1) * 2 + 3 - 7 = 2: one each side.
    np.testing.assert_allclose(got, conv_ref(x, w, 2, [1, 1, 1, 1]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op_type, fn", [
    ("Relu", lambda x: np.maximum(x, 0)), ("Sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("Tanh", np.tanh),
    ("Abs", np.abs), ("Neg", np.negative), ("Exp", np.exp),
])
@requires("onnx")
def test_unary(op_type, fn):
    x = f32(3, 5)
    got = run(model([helper.make_node(op_type, ["x"], ["y"])], [("x", x.shape)], [("y", x.shape)]), x)
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, fn", [
    ("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide),
])
@requires("onnx")
def test_binary_with_a_broadcast_constant(op_type, fn):
    x, c = f32(2, 3, 4), (f32(4) + 3).astype(np.float32)
    m = model([helper.make_node(op_type, ["x", "c"], ["y"])], [("x", x.shape)], [("y", None)], [("c", c)])
    np.testing.assert_allclose(run(m, x), fn(x, c), rtol=1e-6)


@requires("onnx")
def test_gemm_with_alpha_beta_and_both_transposes():
    a, b, c = f32(5, 3), f32(4, 5), f32(4)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1)
    got = run(model([node], [("a", a.shape)], [("y", None)], [("b", b), ("c", c)]), a)
    np.testing.assert_allclose(got, 0.5 * a.T @ b.T + 2.0 * c, rtol=1e-5, atol=1e-5)


@requires("onnx")
def test_pools_softmax_and_reductions():
    x = f32(2, 3, 8, 8)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["p"], ["q"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["q"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Softmax", ["f"], ["s"], axis=-1),
             helper.make_node("ReduceMean", ["s"], ["y"], axes=[1], keepdims=1)]
    got = run(model(nodes, [("x", x.shape)], [("y", None)]), x)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    p = np.stack([np.stack([xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for j in range(4)], -1)
                  for i in range(4)], -2)
    q = p.reshape(2, 3, 2, 2, 2, 2).mean(axis=(3, 5))
    f = q.mean(axis=(2, 3))
    s = np.exp(f - f.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    np.testing.assert_allclose(got, s.mean(axis=1, keepdims=True), rtol=1e-5)


@requires("onnx")
def test_shape_arithmetic_folds_to_a_constant_reshape():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as torch.onnx.export writes a view.
    x = f32(2, 3, 4)
    i64 = lambda *v: np.asarray(v, dtype=np.int64)  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(i64(0).reshape(()), "zero"),
                                           numpy_helper.from_array(i64(0), "axes"),
                                           numpy_helper.from_array(i64(-1), "minus1")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    mod = lonnx.from_onnx(m)
    text = mod.script()
    assert "reshape(%x, shape=[2, -1])" in text, text  # no shape computation left at run time
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x).numpy(), x.reshape(2, -1))


@requires("onnx")
def test_unsupported_operators_are_one_error_listing_each_type_count_and_first_node():
    nodes = [helper.make_node("Bernoulli", ["x"], ["h1"], name="bernoulli_1"),
             helper.make_node("Relu", ["x"], ["r1"], name="ok"),
             helper.make_node("Bernoulli", ["x"], ["h2"], name="bernoulli_2"),
             helper.make_node("MyOp", ["x"], ["m"], name="custom", domain="com.vendor"),
             helper.make_node("LayerNormalization", ["x", "s"], ["ln"], name="norm")]
    m = model(nodes, [("x", (1, 2, 3)), ("w", (1, 16, 3)), ("r", (1, 16, 4)), ("s", (3,))], [("h1", None)],
              opset=16)
    with pytest.raises(frontend.UnsupportedOperatorError) as info:
        lonnx.from_onnx(m)
    message = str(info.value)
    assert isinstance(info.value, loom.LoomError)
    assert message.startswith("the ONNX model uses 3 operator types Loom cannot import"), message
    # An operator no converter will take says why beside its name.
    assert "  Bernoulli (random numbers): 2 nodes, first 'bernoulli_1'" in message, message
    assert "  com.vendor.MyOp (domain 'com.vendor'): 1 node, first 'custom'" in message, message
    assert "  LayerNormalization (opset 16; the converter takes opsets 17-17): 1 node, first 'norm'" in message
    assert "Relu" not in message


def loomc_import(*args):
    return subprocess.run([str(LOOMC), "import", *map(str, args)], capture_output=True, text=True)


def shape_chain(n_name="n"):
    """x (n, 6) reshaped to (n * 2, 3) by the shape arithmetic exporters
    write: Shape, Gather, Mul, Unsqueeze, Concat, Cast, Reshape."""
    def const(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("i0", np.int64(0)),
             helper.make_node("Gather", ["s", "i0"], ["n"], axis=0), const("two", np.int64(2)),
             helper.make_node("Mul", ["n", "two"], ["n2"]), const("ax", np.asarray([0], np.int64)),
             helper.make_node("Unsqueeze", ["n2", "ax"], ["n2v"]), const("three", np.asarray([3], np.int64)),
             helper.make_node("Concat", ["n2v", "three"], ["target0"], axis=0),
             helper.make_node("Cast", ["target0"], ["target"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "target"], ["r"]), helper.make_node("Relu", ["r"], ["y"])]
    return model(nodes, [("x", (n_name, 6))], [("y", None)])


@requires("onnx")
def test_shape_arithmetic_of_a_dynamic_batch_stays_symbolic():
    mod = lonnx.from_onnx(shape_chain())
    assert str(loom.ir.infer_type(mod.functions["main"].body)) == "Tensor[(%n * 2, 3), float32]"
    lib = loom.build(mod, HOST)
    for n in (1, 4):
        x = f32(n, 6)
        np.testing.assert_array_equal(lib["main"](x).numpy(), np.maximum(x.reshape(-1, 3), 0))


@requires("onnx")
def test_a_symbolic_shape_used_as_a_tensor():
    # cast to a float, it is computed at run time
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT,
                                                                        name="to_float")]
    lib = loom.build(lonnx.from_onnx(model(nodes, [("x", ("n", 6))], [("sf", None)])), HOST)
    for n in (1, 3):
        got = lib["main"](f32(n, 6)).numpy()
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, [n, 6])
    # Equal over a symbolic shape folds where it can be decided (a dimension
    # is never negative: what expand(n, -1) exports), and is refused where not.
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Equal", ["s", "c"], ["e"], name="eq")]
    with pytest.raises(loom.LoomError, match=re.escape("Equal 'eq': comparing a symbolic dimension with 3")):
        lonnx.from_onnx(model(nodes, [("x", ("n", 6))], [("e", None)], [("c", np.array([3, 6], np.int64))]))
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Equal", ["s", "c"], ["e"]),
             helper.make_node("Where", ["e", "one", "s"], ["t"]), helper.make_node("Expand", ["x", "t"], ["y"])]
    m = model(nodes, [("x", ("n", 1))], [("y", None)],
              [("c", np.array([-1, -1], np.int64)), ("one", np.array([1, 1], np.int64))])
    a = f32(4, 1)
    np.testing.assert_array_equal(run_model(lonnx.from_onnx(m), a), a)


@requires("onnx")
def test_loomc_import_writes_the_text_and_its_weights(tmp_path):
    x, w, b = f32(2, 8, 10, 10), f32(16, 8, 3, 3), f32(16)
    m = model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("Relu", ["c"], ["y"])], [("x", ("n", 8, 10, 10))], [("y", None)],
              [("w", w), ("b", b)])
    onnx.save(m, str(tmp_path / "m.onnx"))
    done = loomc_import(tmp_path / "m.onnx", "-o", tmp_path / "m.loom", "--shape", "x=2,8,10,10")
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / 'm.loom'}: 1 function, weights in {tmp_path / 'm.loom.weights'}" in done.stdout
    # The 4.5 KiB weight is raw bytes beside the text; the 64-byte bias inline.
    assert w.tobytes() in (tmp_path / "m.loom.weights").read_bytes()
    text = (tmp_path / "m.loom").read_text()
    assert text.startswith("@main = fn(%x: Tensor[(2, 8, 10, 10), float32])"), text
    lib = loom.build(loom.ir.load(tmp_path / "m.loom"), HOST)
    want = np.maximum(conv_ref(x, w, 1, [1, 1, 1, 1]) + b.reshape(-1, 1, 1), 0)
    np.testing.assert_allclose(lib["main"](x).numpy(), want, rtol=1e-4, atol=1e-4)
    # Without --shape the batch stays symbolic; loomc builds and runs the file.
    assert loomc_import(tmp_path / "m.onnx", "-o", tmp_path / "n.loom").returncode == 0
    assert (tmp_path / "n.loom").read_text().startswith("@main = fn(%x: Tensor[(%n: int64, 8, 10, 10), float32])")
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run([str(LOOMC), "run", str(tmp_path / "n.loom"), "--config", HOST, "--input",
                           str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-4, atol=1e-4)


@requires("onnx")
def test_loomc_import_errors(tmp_path):
    m = model([helper.make_node("Bernoulli", ["x"], ["h"], name="random_1")], [("x", (1, 2, 3))], [("h", None)])
    onnx.save(m, str(tmp_path / "random.onnx"))
    done = loomc_import(tmp_path / "random.onnx", "-o", tmp_path / "m.loom")
    assert done.returncode == 1 and done.stderr.startswith(
        "loomc import: the ONNX model uses 1 operator type Loom cannot import"), done.stderr
    assert "Bernoulli (random numbers): 1 node, first 'random_1'" in done.stderr
    assert not (tmp_path / "m.loom").exists()
    (tmp_path / "junk.onnx").write_bytes(b"\x08junk")
    done = loomc_import(tmp_path / "junk.onnx", "-o", tmp_path / "m.loom")
    assert done.returncode == 1 and "junk.onnx: not an ONNX model" in done.stderr, done.stderr
    done = loomc_import(tmp_path / "missing.onnx", "-o", tmp_path / "m.loom")
    assert done.returncode == 1 and "cannot read" in done.stderr and "missing.onnx" in done.stderr, done.stderr
    done = loomc_import(tmp_path / "model.tflite", "-o", tmp_path / "m.loom")
    assert done.returncode == 2 and "loomc import reads ONNX models (.onnx), TorchScript files" in done.stderr, \
        done.stderr
    done = loomc_import(tmp_path / "missing.pt", "-o", tmp_path / "m.loom")
    assert done.returncode == 1 and "cannot read" in done.stderr and "missing.pt" in done.stderr, done.stderr
    done = loomc_import(tmp_path / "unique.onnx", "-o", tmp_path / "m.loom", "--shape", "x=1,2-3")
    assert done.returncode == 2 and "dimension '2-3' is neither a count nor a name" in done.stderr, done.stderr
    done = loomc_import(tmp_path / "unique.onnx")
    assert done.returncode == 2 and "required: -o/--output" in done.stderr, done.stderr


@requires("onnx")
def test_unsupported_attribute_names_the_node():
    x = f32(1, 1, 4)
    node = helper.make_node("MaxPool", ["x"], ["y", "where"], kernel_shape=[2], name="pool1")
    with pytest.raises(loom.TypeError, match=r"MaxPool 'pool1': the Indices output of a 1-D pool is not supported"):
        lonnx.from_onnx(model([node], [("x", x.shape)], [("y", None), ("where", None)]))


@requires("onnx")
def test_unknown_element_type_is_named():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, (2,))],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, (2,))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(loom.TypeError, match=r"input 'x' \(read by Relu 'y'\) has ONNX element type BFLOAT16"):
        lonnx.from_onnx(m)


@requires("onnx")
def test_weights_as_parameters_and_bind_params():
    x, w = f32(2, 3), f32(3, 4)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", x.shape)], [("y", None)], [("w", w)])
    mod, params = lonnx.from_onnx(m, params="inputs")
    assert [p.name for p in mod.functions["main"].params] == ["x", "w"]
    assert set(params) == {"w"}
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x, params["w"]).numpy(), x @ w, rtol=1e-5)
    bound = frontend.bind_params(mod, params)
    assert [p.name for p in bound.functions["main"].params] == ["x"]
    np.testing.assert_allclose(loom.build(bound, HOST)["main"](x).numpy(), x @ w, rtol=1e-5)
    with pytest.raises(loom.LookupError, match="has no parameter 'v'"):
        frontend.bind_params(mod, {"v": w})


@pytest.mark.parametrize("params", ["constants", "inputs"])
@requires("onnx")
def test_conv_bias_relu_is_one_kernel_whether_weights_are_constants_or_parameters(params):
    x, w, b = f32(1, 3, 8, 8), f32(4, 3, 3, 3), f32(4)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    m = model(nodes, [("x", x.shape)], [("y", None)], [("w", w), ("b", b)])
    imported = lonnx.from_onnx(m, params=params)
    mod, args = (imported, [x]) if params == "constants" else (imported[0], [x, w, b])

    class Last:
        def after(self, info, module):
            self.module = module
    last = Last()
    with loom.transform.PassContext(instruments=[last]):
        lib = loom.build(mod, HOST)
    main = last.module.script().split("@main = ", 1)[1].split("\n}\n", 1)[0]
    # Conv, bias and relu are one fused kernel.  (With the bias a
    # parameter, its reshapes to (C, 1, 1) are a kernel of their own; the
    # llvm target runs the convolution channels-last, so the input, the
    # result and a weight parameter are transposed by kernels of their own.)
    kernels = re.findall(r"call_dps<[^>]*>\(@(\w+)", main)
    moves = r"(fused_)?(reshape|transpose)(_(reshape|transpose))*(_\d+)?$"
    assert [k for k in kernels if not re.match(moves, k)] == ["fused_conv2d_add_relu"], main
    want = np.maximum(conv_ref(x, w, 1, [1, 1, 1, 1]) + b.reshape(-1, 1, 1), 0)
    np.testing.assert_allclose(lib["main"](*args).numpy(), want, rtol=1e-4, atol=1e-4)


@requires("onnx")
def test_printing_an_imported_model_elides_its_weights():
    x, w, b = f32(1, 3, 8, 8), f32(16, 3, 3, 3), f32(16)
    m = model([helper.make_node("Conv", ["x", "w", "b"], ["y"])], [("x", x.shape)], [("y", None)],
              [("w", w), ("b", b)])
    mod = lonnx.from_onnx(m)
    text = mod.script()
    assert str(mod) == text
    assert "# 1 constant (1.7 KiB) elided; print with show_meta=True" in text, text
    assert '"elided: a float32 constant of shape (16, 3, 3, 3), 1.7 KiB"' in text, text
    full = mod.script(show_meta=True)
    assert "elided" not in full and len(full) > 2300
    loom.ir.assert_structural_equal(loom.parse(full), mod)


def test_registering_a_converter_twice_needs_replace():
    with pytest.raises(loom.LookupError, match="'Relu' has a converter for opsets 1-17 already"):
        lonnx.converter("Relu")(lambda ctx, node, x: x)


def test_the_docs_table_is_the_registry():
    doc = (ROOT / "docs" / "frontends.md").read_text()
    table = doc.split("<!-- onnx-table-begin -->\n", 1)[1].split("<!-- onnx-table-end -->", 1)[0].strip()
    assert table == lonnx._table(), "regenerate with: python3 -m loom.frontend.onnx --table"


# ------------------------------------------------------------ whole models


def exported(module, x, opset, **kwargs):
    f = io.BytesIO()
    torch.onnx.export(module, x, f, opset_version=opset, **kwargs)
    return onnx.load_from_string(f.getvalue())


def models():
    yield "resnet18", lambda: randomize_batch_norms(torchvision.models.resnet18()), (1, 3, 224, 224)
    yield "mobilenet_v2", lambda: randomize_batch_norms(torchvision.models.mobilenet_v2()), (1, 3, 224, 224)
    yield "transformer", lambda: torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2), (1, 128, 256)


@pytest.mark.parametrize("name, make, shape", list(models()), ids=[m[0] for m in models()])
@pytest.mark.parametrize("opset", [13, 17])
@requires("onnx", "torch", "torchvision")
def test_models_agree_with_pytorch(name, make, shape, opset):
    torch.manual_seed(0)
    module = make().eval()
    x = torch.randn(*shape)
    mod = lonnx.from_onnx(exported(module, x, opset))
    with torch.no_grad():
        want = module(x).numpy()
    got = loom.build(mod, HOST)["main"](x.numpy()).numpy()
    assert got.shape == want.shape
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-4 * scale, (np.abs(got - want).max(), scale)


@pytest.mark.parametrize("opset", [13, 17])
@requires("onnx", "torch", "torchvision")
def test_a_transformer_with_a_dynamic_batch(opset):
    # Its attention reshapes (seq, batch, d) to (seq, batch * heads, d / heads):
    # the shape arithmetic stays symbolic and the reshape takes it as -1.
    torch.manual_seed(0)
    module = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2).eval()
    m = exported(module, torch.randn(2, 16, 32), opset, input_names=["input"], dynamic_axes={"input": {0: "batch"}})
    mod = lonnx.from_onnx(m)
    assert str(mod.functions["main"].params[0].annotation) == "Tensor[(%batch, 16, 32), float32]"
    lib = loom.build(mod, HOST)
    for n in (1, 3):
        x = torch.randn(n, 16, 32)
        with torch.no_grad():
            want = module(x).numpy()
        got = lib["main"](x.numpy()).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("batch_first", [True, False])
@requires("onnx", "torch", "torchvision")
def test_a_transformer_with_a_dynamic_batch_and_sequence(batch_first):
    # Its attention reshapes to [%seq, %batch * 4, 8]: two symbolic entries,
    # which Loom's reshape takes as they are. One build for every length.
    module, example, axes, want_type = encoder_with_dynamic_axes(batch_first)
    m = exported(module, example, 13, input_names=["input"], dynamic_axes={"input": axes})
    mod = lonnx.from_onnx(m)
    assert str(mod.functions["main"].params[0].annotation) == want_type
    check_every_length(loom.build(mod, HOST), module, batch_first)


def _decoder_and_pooled_models():
    """A GPT-style decoder (positions by torch.arange over the length, a
    causal mask by torch.tril) and a model that prepends a learned token
    with expand(batch, -1, -1) and pools the last position and the mean:
    what exporters write for them over a dynamic batch and length (Range,
    ConstantOfShape, Trilu, Equal and Where over a symbolic shape, Expand
    to one, Slice of a symbolic axis)."""
    class Block(torch.nn.Module):
        def __init__(self, e=32, h=4):
            super().__init__()
            self.h, self.qkv, self.o = h, torch.nn.Linear(e, 3 * e), torch.nn.Linear(e, e)
            self.ln1, self.ln2 = torch.nn.LayerNorm(e), torch.nn.LayerNorm(e)
            self.ff = torch.nn.Sequential(torch.nn.Linear(e, 64), torch.nn.GELU(), torch.nn.Linear(64, e))

        def forward(self, x):
            b, n, e = x.shape
            q, k, v = (t.view(b, n, self.h, e // self.h).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(e, -1))
            mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
            scores = (q @ k.transpose(-1, -2) / (e // self.h) ** 0.5).masked_fill(~mask, float("-inf"))
            x = x + self.o((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, n, e))
            return x + self.ff(self.ln2(x))

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = torch.nn.Embedding(100, 32), torch.nn.Embedding(64, 32)
            self.blocks, self.head = torch.nn.Sequential(Block(), Block()), torch.nn.Linear(32, 100, bias=False)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], dtype=torch.long).unsqueeze(0)
            return self.head(self.blocks(self.wte(ids) + self.wpe(positions)))

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.token, self.fc = torch.nn.Parameter(torch.randn(1, 1, 32)), torch.nn.Linear(32, 5)

        def forward(self, x):
            x = torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1)
            return self.fc(x[:, -1] + x[:, 1:].mean(1))
    return Decoder, Pooled


@pytest.mark.parametrize("which", ["decoder", "pooled"])
@requires("onnx", "torch", "torchvision")
def test_a_decoder_and_a_pooled_model_over_a_dynamic_batch_and_length(which):
    torch.manual_seed(0)
    decoder, pooled = _decoder_and_pooled_models()
    module = (decoder if which == "decoder" else pooled)().eval()

    def example(b, n):
        return torch.randint(0, 100, (b, n)) if which == "decoder" else torch.randn(b, n, 32)
    m = exported(module, example(2, 16), 14, input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "seq"}})
    lib = loom.build(lonnx.from_onnx(m), HOST)
    for b, n in ((1, 1), (3, 7), (2, 40)):
        x = example(b, n)
        with torch.no_grad():
            want = module(x).numpy()
        got = lib["main"](x.numpy()).numpy()
        assert got.shape == want.shape, (b, n)
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), (b, n)


@requires("onnx", "torch")
def test_a_cached_decoder_step_with_symbolic_range_starts_and_slice_bounds():
    # What a decoder exported with its KV cache computes from two symbolic
    # lengths (new tokens %n, cached %p): positions Range(%p, %p + %n), a
    # causal mask sliced [%p, %p + %n) x [0, %p + %n) out of a buffer, the
    # last %n rows of the joined sequence (Slice from -%n): the bounds are
    # shapes used as tensors, read at run time from the inputs' shapes.
    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wpe, self.qkv = torch.nn.Embedding(64, 16), torch.nn.Linear(16, 48)
            self.register_buffer("causal", torch.tril(torch.ones(64, 64, dtype=torch.bool)))

        def forward(self, x, past_k, past_v):
            n, p = x.shape[1], past_k.shape[1]
            x = x + self.wpe(torch.arange(p, p + n))[None]
            q, k, v = self.qkv(x).split(16, -1)
            k, v = torch.cat([past_k, k], 1), torch.cat([past_v, v], 1)
            scores = (q @ k.transpose(1, 2)).masked_fill(~self.causal[p:p + n, :p + n], float("-inf"))
            out = torch.softmax(scores / 4, -1) @ v
            return out + k[:, -n:], v[:, :p + 1].sum(1)

    torch.manual_seed(0)
    module = Step().eval()
    g = torch.Generator().manual_seed(1)

    def inputs(b, n, p):
        return [torch.randn(b, n, 16, generator=g), torch.randn(b, p, 16, generator=g), torch.randn(b, p, 16, generator=g)]
    m = exported(module, tuple(inputs(2, 3, 5)), 14, input_names=["x", "k", "v"],
                 dynamic_axes={"x": {0: "b", 1: "n"}, "k": {0: "b", 1: "p"}, "v": {0: "b", 1: "p"}})
    lib = loom.build(lonnx.from_onnx(m), HOST)
    for b, n, p in ((2, 3, 5), (1, 1, 9), (3, 6, 1)):  # one build: prefill-like and one-token steps
        x = inputs(b, n, p)
        with torch.no_grad():
            want = module(*x)
        got = lib["main"](*[a.numpy() for a in x])
        for g_, w in zip(got, want):
            assert g_.numpy().shape == tuple(w.shape), (b, n, p)
            np.testing.assert_allclose(g_.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


@requires("onnx", "torch", "torchvision")
def test_a_dynamic_batch_stays_symbolic():
    torch.manual_seed(0)
    module = randomize_batch_norms(torchvision.models.resnet18()).eval()
    m = exported(module, torch.randn(2, 3, 64, 64), 13, input_names=["input"],
                 dynamic_axes={"input": {0: "batch"}})
    mod = lonnx.from_onnx(m)
    assert re.match(r"Tensor\[\(%batch, 3, 64, 64\), float32\]", str(mod.functions["main"].params[0].annotation))
    lib = loom.build(mod, HOST)
    for n in (1, 3):
        x = torch.randn(n, 3, 64, 64)
        with torch.no_grad():
            want = module(x).numpy()
        got = lib["main"](x.numpy()).numpy()
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@requires("onnx")
def test_a_model_as_bytes_a_file_object_or_a_path(tmp_path):
    x = f32(2, 3)
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", x.shape)], [("y", None)])
    onnx.save(m, str(tmp_path / "m.onnx"))
    for given in (m.SerializeToString(), bytearray(m.SerializeToString()), open(tmp_path / "m.onnx", "rb"),
                  tmp_path / "m.onnx", str(tmp_path / "m.onnx")):
        np.testing.assert_array_equal(run_model(lonnx.from_onnx(given), x), np.maximum(x, 0))
    with pytest.raises(loom.ParseError, match=r"the 6 bytes given are not an ONNX model"):
        lonnx.from_onnx(b"\x08\x07junk")
    with pytest.raises(loom.TypeError, match=r"from_onnx takes a path, an onnx.ModelProto or the model's bytes, got int"):
        lonnx.from_onnx(3)


@requires("onnx")
def test_inputs_that_decide_shapes_are_named_and_taken_as_constants():
    data, shape = f32(2, 6), np.array([3, 4], np.int64)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 6)),
                                           helper.make_tensor_value_info("shape", TensorProto.INT64, (2,))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(lonnx.ValueNeededError, match=r"Reshape 'r': its target shape is computed at run time from "
                                                     r"the input 'shape'") as info:
        lonnx.from_onnx(m)
    assert info.value.inputs == ["shape"]
    mod = lonnx.from_onnx(m, constants={"shape": shape})
    assert [p.name for p in mod["main"].params] == ["x"]
    np.testing.assert_array_equal(run_model(mod, data), data.reshape(3, 4))
    # The backend finds such inputs itself, one build per value.
    from loom.frontend.onnx import backend
    rep = backend.prepare(m, config=HOST)
    np.testing.assert_array_equal(rep.run([data, shape])[0], data.reshape(3, 4))
    np.testing.assert_array_equal(rep.run([data, np.array([4, 3], np.int64)])[0], data.reshape(4, 3))
    assert rep.compile_time == {"shape"}


def run_model(mod, *arrays):
    return loom.build(mod, HOST)["main"](*arrays).numpy()


@requires("onnx")
def test_loomc_import_loads_user_converters(tmp_path):
    m = model([helper.make_node("MyScale", ["x"], ["y"], name="scale", domain="", factor=3.0)],
              [("x", (2, 3))], [("y", None)])
    onnx.save(m, str(tmp_path / "m.onnx"))
    done = loomc_import(tmp_path / "m.onnx", "-o", tmp_path / "m.loom")
    assert done.returncode == 1 and "MyScale: 1 node, first 'scale'" in done.stderr, done.stderr
    (tmp_path / "mine.py").write_text(
        "import numpy as np\n"
        "from loom import op\n"
        "from loom.frontend.onnx import converter\n\n"
        "@converter('MyScale')\n"
        "def my_scale(ctx, node, x):\n"
        "    shape = ctx.static_shape(node, x)  # Python ints\n"
        "    assert all(isinstance(d, int) for d in shape)\n"
        "    return op.multiply(x, ctx.const(node.attr('factor'), x))\n")
    done = loomc_import(tmp_path / "m.onnx", "-o", tmp_path / "m.loom", "--converters", tmp_path / "mine.py")
    assert done.returncode == 0, done.stderr
    assert "multiply" in (tmp_path / "m.loom").read_text()
    (tmp_path / "broken.py").write_text("x = 1\nraise ValueError('no')\n")
    done = loomc_import(tmp_path / "m.onnx", "-o", tmp_path / "m.loom", "--converters", tmp_path / "broken.py")
    assert done.returncode == 1 and f"--converters {tmp_path / 'broken.py'}:2: ValueError: no" in done.stderr, \
        done.stderr


@requires("onnx")
def test_slice_bounds_mean_the_same_folded_compiled_and_at_run_time():
    # ONNX's bounds (clamped after counting from the end; a negative
    # step's start before the axis is its first element, unlike NumPy's)
    # the same in the import-time fold (all known), the slice operator
    # (bounds known, data not) and runtime.slice (bounds at run time)
    import itertools
    x = np.arange(5, dtype=np.float32)
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in ("s", "e", "st")]
    graph = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])] + ints,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([0]), name="ax")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    steps = (-2, -1, 1, 2)
    at_run_time = {st: loom.build(lonnx.from_onnx(m, constants={"st": np.array([st])}), HOST) for st in steps}
    for s, e, st in itertools.product([-10, -6, -5, -1, 0, 2, 4, 9], [-10, -6, -1, 0, 3, 5, 9], steps):
        bounds = {"s": np.array([s]), "e": np.array([e]), "st": np.array([st])}
        runtime = at_run_time[st]["main"](x, bounds["s"], bounds["e"]).numpy()
        compiled = loom.build(lonnx.from_onnx(m, constants=bounds), HOST)["main"](x).numpy()
        folded = loom.build(lonnx.from_onnx(m, constants={"x": x, **bounds}), HOST)["main"]().numpy()
        n = 5
        start, end = s + n if s < 0 else s, e + n if e < 0 else e  # the ONNX specification's clamping
        start, end = (min(max(start, 0), n), min(max(end, 0), n)) if st > 0 else \
            (min(max(start, 0), n - 1), min(max(end, -1), n - 1))
        want = x[start:end:st] if st > 0 else x[start:(None if end < 0 else end):st]
        for name, got in (("runtime.slice", runtime), ("slice", compiled), ("the fold", folded)):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: x[{s}:{e}:{st}]")


@requires("onnx")
def test_batch_norm_in_training_mode_and_dropout_at_a_ratio_of_zero():
    # BatchNormalization training_mode=1 (opset 15): normalised by the
    # batch's statistics, the running ones moved towards them; Dropout in
    # training mode at a ratio given as an input that is 0: the identity
    x, s, b = f32(3, 4, 5, 2), f32(4), f32(4)
    mean, var = f32(4), np.abs(f32(4)) + 0.5
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1,
                            momentum=0.8, epsilon=1e-3)
    m = model([node], [("x", x.shape), ("s", [4]), ("b", [4]), ("m", [4]), ("v", [4])],
              [("y", None), ("rm", None), ("rv", None)], opset=15)
    lib = loom.build(lonnx.from_onnx(m), HOST)
    y, rm, rv = (t.numpy() for t in lib["main"](x, s, b, mean, var))
    batch_mean, batch_var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    shape = (1, 4, 1, 1)
    want = (x - batch_mean.reshape(shape)) / np.sqrt(batch_var.reshape(shape) + 1e-3) * s.reshape(shape) + \
        b.reshape(shape)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm, mean * 0.8 + batch_mean * 0.2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv, var * 0.8 + batch_var * 0.2, rtol=1e-5, atol=1e-6)
    graph = helper.make_graph([helper.make_node("Dropout", ["x", "r", "t"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(0.0, np.float32), name="r"),
                               numpy_helper.from_array(np.array(True), name="t")])
    lib = loom.build(lonnx.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])), HOST)
    a = f32(3, 4)
    np.testing.assert_array_equal(lib["main"](a).numpy(), a)


@requires("onnx")
def test_det_against_numpy():
    node = helper.make_node("Det", ["x"], ["y"])
    lib = loom.build(lonnx.from_onnx(model([node], [("x", [2, 3, 4, 4])], [("y", None)])), HOST)
    x = f32(2, 3, 4, 4)
    x[1, 2] = x[1, 2, [0, 0, 2, 3]]  # a singular one: two equal rows
    np.testing.assert_allclose(lib["main"](x).numpy(), np.linalg.det(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    with pytest.raises(loom.LoomError, match=re.escape("needs square matrices (..., n, n), got [2, 3]")):
        lonnx.from_onnx(model([node], [("x", [2, 3])], [("y", None)]))
