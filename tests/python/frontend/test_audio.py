"""Speech models of torchaudio.models through both PyTorch importers
(docs/frontends.md, "Speech models"): wav2vec 2.0 and HuBERT (a
convolutional feature encoder with group norm, a weight-normalized
positional convolution, a Transformer), Conv-TasNet (PReLU, global
layer norm as group norm, 1-D convolutions, transposed), Wav2Letter and
DeepSpeech, with random weights, against PyTorch; and the operators they
brought (PReLU, native group norm, weight norm) on their own."""
import io
import warnings

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import, requires

torch = pytest.importorskip("torch")
torchaudio = pytest.importorskip("torchaudio")  # every test: the models are torchaudio's
onnx = optional_import("onnx")
from loom.frontend import fx as lfx  # noqa: E402

nn = torch.nn
HOST = str(ROOT / "configs" / "host.yaml")


def _import(importer, module, inputs):
    if importer == "fx":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # wav2vec2's (features, None): the None dropped, with a warning
            return lfx.from_fx(module, list(inputs))
    from loom.frontend import onnx as lonnx
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs), buffer, opset_version=17)
    return lonnx.from_onnx(buffer.getvalue())


def check(importer, module, inputs, tolerance=1e-5):
    module = module.eval()
    with torch.no_grad():
        want = module(*inputs)
    want = (want[0] if isinstance(want, tuple) else want).numpy()
    got = loom.build(_import(importer, module, inputs), HOST)["main"](*[x.numpy() for x in inputs])
    got = (got if hasattr(got, "numpy") else got[0]).numpy()
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= tolerance * np.abs(want).max(), np.abs(got - want).max() / np.abs(want).max()


MODELS = {
    "wav2vec2_base": (lambda: torchaudio.models.wav2vec2_base(), [(1, 16000)]),
    "hubert_base": (lambda: torchaudio.models.hubert_base(), [(1, 16000)]),
    "conv_tasnet": (lambda: torchaudio.models.conv_tasnet_base(num_sources=2), [(1, 1, 8000)]),
    "wav2letter": (lambda: torchaudio.models.Wav2Letter(num_classes=40, input_type="waveform", num_features=1),
                   [(1, 1, 8000)]),
    "deepspeech": (lambda: torchaudio.models.DeepSpeech(n_feature=40, n_hidden=128, n_class=30), [(1, 1, 50, 40)]),
}
IMPORTERS = [pytest.param("onnx", marks=requires("onnx")), "fx"]


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_speech_model_agrees_with_pytorch(name, importer):
    make, shapes = MODELS[name]
    torch.manual_seed(0)
    check(importer, make(), [torch.randn(*s) for s in shapes])


class SpeechOperators(nn.Module):
    """PReLU per channel and shared, group norm, a weight-normalized
    convolution."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.weight_norm(nn.Conv1d(4, 6, 3, padding=1), dim=2)
        self.norm = nn.GroupNorm(3, 6)
        self.prelu, self.shared = nn.PReLU(6), nn.PReLU()

    def forward(self, x):
        return self.shared(self.norm(self.prelu(self.conv(x))) - 0.5)


@pytest.mark.parametrize("importer", IMPORTERS)
def test_the_operators_speech_models_brought(importer):
    torch.manual_seed(0)
    module = SpeechOperators()
    with torch.no_grad():
        module.prelu.weight.uniform_(-0.5, 0.5)
    check(importer, module, [torch.randn(2, 4, 9)])


def test_weight_norm_of_weights_given_as_inputs():
    # Weights as the function's parameters (params="inputs"): the weight
    # norm is computed in the graph, not at import.
    from loom import frontend
    torch.manual_seed(0)
    module, x = SpeechOperators().eval(), torch.randn(2, 4, 9)
    mod, params = lfx.from_fx(module, [x], params="inputs")
    assert "sqrt(" in str(mod)  # the norm of v, in the graph
    with torch.no_grad():
        want = module(x).numpy()
    got = loom.build(frontend.bind_params(mod, params), HOST)["main"](x.numpy()).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_torch_compile_takes_wav2vec2():
    # torch.jit.trace fails inside PyTorch (its weight norm hook); the
    # scripted forward has an optional `lengths` and returns (features,
    # None): the missing trailing argument is taken as its default None and
    # the None result is dropped (docs/frontends.md, "Speech models").
    import loom.torch
    torch.manual_seed(0)
    module, x = torchaudio.models.wav2vec2_base().eval(), torch.randn(1, 8000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = loom.torch.compile(module, [x])
    got = compiled(x)
    with torch.no_grad():
        want = module(x)[0]
    got = got[0] if isinstance(got, (tuple, list)) else got
    assert np.abs(got.numpy() - want.numpy()).max() <= 1e-5 * np.abs(want.numpy()).max()
    assert compiled.report.kept() == {}
