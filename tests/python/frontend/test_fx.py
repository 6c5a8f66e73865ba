"""The PyTorch importer through torch.fx (docs/frontends.md): torchvision's
ResNet-18 and MobileNetV2, a Transformer encoder, a decoder with masks and
multi-head attention (dynamic batch and lengths) against PyTorch, the
unsupported-operator error, weights as parameters."""
import re

import numpy as np
import pytest

import loom
from loom import frontend

from conftest import ROOT, optional_import, requires
from model_util import check_every_length, encoder_with_dynamic_axes, randomize_batch_norms

torch = pytest.importorskip("torch")  # every test: loom.frontend.fx imports it
torchvision = optional_import("torchvision")
from loom.frontend import fx as lfx  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


def check(module, x, **kwargs):
    module = module.eval()
    mod = lfx.from_fx(module, [x], **kwargs)
    with torch.no_grad():
        want = module(x).numpy()
    got = loom.build(mod, HOST)["main"](x.numpy()).numpy()
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), (np.abs(got - want).max(), np.abs(want).max())


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
@requires("torchvision")
def test_torchvision_models_agree_with_pytorch(name):
    torch.manual_seed(0)
    check(randomize_batch_norms(getattr(torchvision.models, name)()), torch.randn(1, 3, 224, 224))


@pytest.mark.parametrize("batch_first", [True, False])
def test_a_transformer_encoder_agrees_with_pytorch(batch_first):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=batch_first)
    encoder = torch.nn.TransformerEncoder(layer, 2)
    check(encoder, torch.randn(1, 128, 256) if batch_first else torch.randn(128, 1, 256))


@pytest.mark.parametrize("batch_first", [True, False])
def test_a_transformer_encoder_with_a_dynamic_batch_and_sequence(batch_first):
    encoder, example, axes, want_type = encoder_with_dynamic_axes(batch_first)
    mod = lfx.from_fx(encoder, [example], dynamic_axes={0: axes})
    assert str(mod.functions["main"].params[0].annotation) == want_type
    check_every_length(loom.build(mod, HOST), encoder, batch_first)


class _Decoder(torch.nn.Module):
    """A two-layer nn.TransformerDecoder over a memory, with a causal mask
    and a padding mask on the memory given as inputs."""

    def __init__(self, batch_first, norm_first):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(32, 4, 64, batch_first=batch_first, norm_first=norm_first,
                                                 activation="gelu")
        self.decoder = torch.nn.TransformerDecoder(layer, 2, norm=torch.nn.LayerNorm(32))

    def forward(self, tgt, memory, causal, padding):
        return self.decoder(tgt, memory, tgt_mask=causal, memory_key_padding_mask=padding)


def _decoder_inputs(batch_first, b, n, s, generator):
    tgt, memory = torch.randn(b, n, 32, generator=generator), torch.randn(b, s, 32, generator=generator)
    if not batch_first:
        tgt, memory = tgt.transpose(0, 1).contiguous(), memory.transpose(0, 1).contiguous()
    padding = torch.zeros(b, s, dtype=torch.bool)
    padding[0, s - 1] = s > 1  # the first sequence's last memory position is padding
    return [tgt, memory, torch.nn.Transformer.generate_square_subsequent_mask(n), padding]


@pytest.mark.parametrize("batch_first, norm_first", [(True, False), (False, True)])
def test_a_transformer_decoder_with_masks_and_a_dynamic_batch_target_and_memory(batch_first, norm_first):
    torch.manual_seed(0)
    decoder = _Decoder(batch_first, norm_first).eval()
    g = torch.Generator().manual_seed(1)
    seq = (lambda a, b: {0: a, 1: b}) if batch_first else (lambda a, b: {0: b, 1: a})
    axes = {0: seq("b", "n"), 1: seq("b", "s"), 2: {0: "n", 1: "n"}, 3: {0: "b", 1: "s"}}
    mod = lfx.from_fx(decoder, _decoder_inputs(batch_first, 2, 5, 6, g), dynamic_axes=axes)
    lib = loom.build(mod, HOST)
    for b, n, s in ((2, 5, 6), (3, 9, 4), (1, 1, 1)):  # one build, every length
        inputs = _decoder_inputs(batch_first, b, n, s, g)
        with torch.no_grad():
            want = decoder(*inputs).numpy()
        got = lib["main"](*[x.numpy() for x in inputs]).numpy()
        assert got.shape == want.shape and np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), (b, n, s)


def test_multihead_attention_unpacked_in_forward_gives_the_output_and_the_weights():
    # `out, weights = self.attn(...)` unpacks a submodule's result, which
    # torch 1.13's tracer cannot do on Python 3.11 by itself; cross
    # attention over a memory with a boolean padding mask.
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)

        def forward(self, x, memory, padding):
            out, weights = self.attn(x, memory, memory, key_padding_mask=padding)
            return out + x, weights

    torch.manual_seed(0)
    block = Block().eval()
    g = torch.Generator().manual_seed(2)

    def inputs(b, n, s):
        padding = torch.zeros(b, s, dtype=torch.bool)
        padding[:, -1] = True
        return [torch.randn(b, n, 32, generator=g), torch.randn(b, s, 32, generator=g), padding]
    mod = lfx.from_fx(block, inputs(2, 3, 4), dynamic_axes={0: {0: "b", 1: "n"}, 1: {0: "b", 1: "s"},
                                                            2: {0: "b", 1: "s"}})
    lib = loom.build(mod, HOST)
    for b, n, s in ((2, 3, 4), (1, 7, 2)):
        x = inputs(b, n, s)
        with torch.no_grad():
            want = block(*x)
        got = lib["main"](*[a.numpy() for a in x])
        for g_, w in zip(got, want):
            np.testing.assert_allclose(g_.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
        assert np.all(got[1].numpy()[..., -1] == 0)  # the padded key gets no weight


def test_dynamic_axes_are_checked():
    with pytest.raises(loom.TypeError, match=re.escape("from_fx: dynamic_axes has the entry 1: {0: 'b'}; it needs an "
                                                       "input's index (0 to 0)")):
        lfx.from_fx(torch.nn.ReLU(), [torch.randn(2, 3)], dynamic_axes={1: {0: "b"}})
    with pytest.raises(loom.TypeError, match=re.escape("from_fx: dynamic_axes of input 0 (rank 2) has 2: 'b'")):
        lfx.from_fx(torch.nn.ReLU(), [torch.randn(2, 3)], dynamic_axes=[{2: "b"}])
    mod = lfx.from_fx(torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU()), [torch.randn(2, 3)],
                      dynamic_axes={0: {0: "batch"}})
    assert str(mod.functions["main"].params[0].annotation) == "Tensor[(%batch, 3), float32]"


class SelfAttention(torch.nn.Module):
    """Attention over (batch, length, features) whose forward torch.fx
    cannot trace symbolically (control flow on the rank, a shape unpacked),
    so from_fx takes its aten graph, traced symbolically for dynamic_axes."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))
        self.out, self.norm, self.heads = torch.nn.Linear(d, d), torch.nn.LayerNorm(d), heads
        self.scale = (d // heads) ** -0.5
        self.register_buffer("offset", torch.randn(d))

    def split(self, t, b, n, d):
        return t.reshape(b, n, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x):
        if x.dim() == 2:
            x = x.unsqueeze(0)
        b, n, d = x.shape
        z = self.norm(x)
        q, k, v = (self.split(f(z), b, n, d) for f in (self.q, self.k, self.v))
        a = (q @ k.transpose(-2, -1)) * self.scale
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
        positions = torch.arange(n).reshape(1, n, 1) * 0.01
        return x + self.out(torch.nn.functional.gelu(y)) + positions + self.offset


@pytest.mark.parametrize("params", ["constants", "inputs"])
def test_dynamic_axes_through_the_aten_graph_traced_symbolically(params):
    torch.manual_seed(0)
    module = SelfAttention().eval()
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(module)
    got = lfx.from_fx(module, [torch.randn(2, 7, 32)], dynamic_axes={0: {0: "b", 1: "n"}}, params=params)
    mod, weights = got if params == "inputs" else (got, {})
    assert str(mod.functions["main"].params[0].annotation) == "Tensor[(%b, %n, 32), float32]"
    assert sorted(weights) == ([] if params == "constants" else sorted(
        name.replace(".", "_") for name, _ in module.named_parameters()))
    lib = loom.build(mod, HOST)
    for b, n in ((2, 7), (1, 1), (3, 19), (1, 64)):
        x = torch.randn(b, n, 32)
        with torch.no_grad():
            want = module(x).numpy()
        got = lib["main"](x.numpy(), *weights.values()).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), (b, n)


def test_in_place_operators_on_the_symbolic_aten_path():
    class InPlace(torch.nn.Module):  # control flow on the rank; relu_ on a tensor read before
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            if x.dim() == 1:
                x = x.unsqueeze(0)
            y = self.lin(x)
            z = y * 2
            y.relu_()
            return y + z
    module = InPlace().eval()
    lib = loom.build(lfx.from_fx(module, [torch.randn(3, 8)], dynamic_axes={0: {0: "b"}}), HOST)
    for b in (1, 6):
        x = torch.randn(b, 8)
        with torch.no_grad():
            want = module(x).numpy()
        np.testing.assert_allclose(lib["main"](x.numpy()).numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_module_whose_code_tests_a_dynamic_dimension_is_refused():
    class Shuffle(torch.nn.Module):  # unpacks a shape: fx cannot trace it symbolically
        def forward(self, x):
            n, c = x.shape
            return x.reshape(n, 2, c // 2).transpose(1, 2).reshape(n, c)
    mod = lfx.from_fx(Shuffle(), [torch.randn(2, 4)], dynamic_axes={0: {0: "batch"}})
    lib = loom.build(mod, HOST)
    for b in (1, 5):
        x = torch.randn(b, 4)
        np.testing.assert_array_equal(lib["main"](x.numpy()).numpy(), Shuffle()(x).numpy())

    class Branch(torch.nn.Module):
        def forward(self, x):
            n, c = x.shape
            return x * 2 if c > 4 else x + 1
    with pytest.raises(loom.TypeError, match=re.escape("from_fx: the traced code compares the dynamic dimension "
                                                       "c (") + ".*so a graph traced at one size would not hold"):
        lfx.from_fx(Branch(), [torch.randn(2, 6)], dynamic_axes={0: {1: "c"}})

    class Ones(torch.nn.Module):  # the length made a Python int (PyTorch 1.13 refuses it while tracing)
        def forward(self, x):
            return x + torch.ones(int(x.shape[1]))
    with pytest.raises(loom.TypeError, match=re.escape("from_fx: PyTorch could not trace the module symbolically "
                                                       "for dynamic_axes (")):
        lfx.from_fx(Ones(), [torch.randn(2, 3)], dynamic_axes={0: {1: "c"}})
    # Where PyTorch makes the int silently (later versions), the two traces
    # at two sizes differ: the difference names the node.
    from torch.fx.experimental.proxy_tensor import make_fx
    a = make_fx(lambda x: x + torch.ones(3))(torch.randn(3))
    b = make_fx(lambda x: x + torch.ones(4))(torch.randn(4))
    assert lfx._graph_difference(a, b) == "aten::ones 'ones'"
    assert lfx._graph_difference(a, a) is None


def test_a_small_network_with_functions_methods_and_weights_as_parameters():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8 * 4 * 4, 5)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            y = torch.nn.functional.relu6(y * 2.0) + 1.0
            return self.fc(y.flatten(1))

    torch.manual_seed(0)
    net = randomize_batch_norms(Net()).eval()
    x = torch.randn(2, 3, 8, 8)
    check(net, x)
    mod, params = lfx.from_fx(net, [x], params="inputs")
    names = [p.name for p in mod.functions["main"].params]
    assert names[0] == "input0" and set(names[1:]) == set(params)
    assert "model_conv_weight" in params and params["model_conv_weight"].shape == (8, 3, 3, 3)
    bound = frontend.bind_params(mod, params)
    with torch.no_grad():
        want = net(x).numpy()
    np.testing.assert_allclose(loom.build(bound, HOST)["main"](x.numpy()).numpy(), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("form", ["x @ w.transpose(-1, -2)", "x @ w.permute(0, 2, 1)", "einsum('bik,bjk->bij')",
                                  "einsum('bik,jk->bij')", "repeat_interleave(w, 2, dim=1)",
                                  "repeat_interleave(w, counts, dim=1)"])
def test_weights_transposed_or_repeated_before_a_batched_product(form):
    """Computed at import on the weights (fx.py, _fold): a transpose that
    PyTorch follows with _reshape_alias at the transposed strides must
    reach the product transposed, not as the weight's bytes reinterpreted
    (MViT V2's relative positions were off by their own size so)."""
    products = {
        "x @ w.transpose(-1, -2)": lambda s, x: x @ s.w.transpose(-1, -2),
        "x @ w.permute(0, 2, 1)": lambda s, x: x @ s.w.permute(0, 2, 1),
        "einsum('bik,bjk->bij')": lambda s, x: torch.einsum("bik,bjk->bij", x, s.w),
        "einsum('bik,jk->bij')": lambda s, x: torch.einsum("bik,jk->bij", x, s.w[0]),
        "repeat_interleave(w, 2, dim=1)": lambda s, x: x @ torch.repeat_interleave(s.w, 2, dim=1).transpose(1, 2),
        "repeat_interleave(w, counts, dim=1)":
            lambda s, x: x @ torch.repeat_interleave(s.w, torch.tensor([1, 0, 3, 1, 2]), dim=1).transpose(1, 2),
    }

    class Product(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(2, 5, 3))

        def forward(self, x):
            return products[form](self, x)

    torch.manual_seed(0)
    check(Product(), torch.randn(2, 4, 3))


def test_unsupported_calls_are_one_error_listing_each_type_count_and_first_node():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.sort(x, dim=1)[0] + torch.sort(x * 2, dim=1)[0] + torch.cummax(x, 1)[0] + torch.relu(x)

    with pytest.raises(frontend.UnsupportedOperatorError) as info:
        lfx.from_fx(Odd(), [torch.randn(2, 4)])
    message = str(info.value)
    # The module-level graph has no converter for sort and cummax: its
    # aten graph is tried, which has none either, and the error lists those.
    assert message.startswith("the PyTorch (aten) model uses 2 operator types Loom cannot import"), message
    assert "  aten::sort: 2 nodes, first 'sort'" in message, message
    assert "  aten::cummax: 1 node, first 'cummax'" in message, message
    assert "its module-level graph has no converter for torch.cummax, torch.sort" in message, message
    assert "relu" not in message


def test_an_unsupported_attribute_names_the_node():
    # (A 2-D pool's indices import through the aten graph: test_sampling.py.)
    net = torch.nn.Sequential(torch.nn.MaxPool3d(2, return_indices=True)).eval()
    with pytest.raises(loom.TypeError, match=r"aten::max_pool3d_with_indices 'max_pool3d_with_indices': its result 1 "
                                             r"is not supported"):
        lfx.from_fx(net, [torch.randn(1, 1, 4, 4, 4)])


def test_the_docs_table_is_the_registry():
    doc = (ROOT / "docs" / "frontends.md").read_text()
    table = doc.split("<!-- torch-table-begin -->\n", 1)[1].split("<!-- torch-table-end -->", 1)[0].strip()
    assert table == lfx._table(), "regenerate with: python3 -m loom.frontend.fx --table"
    aten_table = doc.split("<!-- aten-table-begin -->\n", 1)[1].split("<!-- aten-table-end -->", 1)[0].strip()
    assert aten_table == lfx._table("aten"), "regenerate with: python3 -m loom.frontend.fx --aten-table"


def test_a_module_in_training_mode_is_imported_as_it_computes_there_with_a_warning():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    x = torch.randn(2, 3, 8, 8)
    with pytest.warns(UserWarning, match=r"from_fx: the module is in training mode"):
        mod = lfx.from_fx(net, [x])
    assert net.training  # not switched behind the user's back
    with torch.no_grad():
        want = net(x).numpy()  # batch statistics
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x.numpy()).numpy(), want, rtol=1e-4, atol=1e-5)
    mod = lfx.from_fx(net, [x], eval=True)
    assert net.training  # switched for the import only
    with torch.no_grad():
        want = net.eval()(x).numpy()
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x.numpy()).numpy(), want, rtol=1e-4, atol=1e-5)


def test_an_operator_without_converter_on_weights_alone_is_computed_at_import():
    # torch.linalg.inv and torch.det of a weight read no input: PyTorch
    # computes them at import (with the checks they call); of an input they
    # are refused, every type listed.
    class OfWeights(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 4) + 4 * torch.eye(4))

        def forward(self, x):
            return x @ torch.linalg.inv(self.w) + torch.det(self.w)

    class OfInput(torch.nn.Module):
        def forward(self, x):
            return x @ torch.linalg.inv(x)
    torch.manual_seed(0)
    module, x = OfWeights().eval(), torch.randn(3, 4)
    got = loom.build(lfx.from_fx(module, [x]), HOST)["main"](x.numpy()).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, module(x).numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(frontend.UnsupportedOperatorError, match=r"(?s)2 operator types.*_linalg_check_errors.*"
                                                                  r"linalg_inv_ex: 1 node"):
        lfx.from_fx(OfInput().eval(), [torch.randn(4, 4)])


def test_outputs_that_are_none_are_dropped_with_a_warning():
    class WithNone(torch.nn.Module):
        def forward(self, x):
            return x * 2, None
    x = torch.randn(2, 3)
    with pytest.warns(UserWarning, match=r"the module's outputs \[1\] are None; the function returns the others"):
        mod = lfx.from_fx(WithNone().eval(), [x])
    got = loom.build(mod, HOST)["main"](x.numpy())
    np.testing.assert_array_equal(got[0].numpy(), x.numpy() * 2)


class _Det(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.det(x) * 2


def test_linalg_det_against_pytorch():
    x = torch.randn(3, 5, 5)
    lib = loom.build(lfx.from_fx(_Det(), [x]), HOST)
    for _ in range(2):
        x = torch.randn(3, 5, 5, dtype=torch.float32)
        np.testing.assert_allclose(lib["main"](x.numpy()).numpy(), _Det()(x).numpy(), rtol=1e-4, atol=1e-5)
