"""Complex values in PyTorch models (docs/frontends.md, "Complex values in
PyTorch models"): torch.stft, torch.fft.rfft and torchaudio's
spectrograms through from_fx (whose aten graph has _fft_r2c) and
loom.torch.compile (whose TorchScript graph has aten::stft), against
PyTorch on random signals; a complex result and an operator Loom does not
carry complex values through are refused naming them."""
import warnings

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import

torch = pytest.importorskip("torch")
torchaudio = optional_import("torchaudio")
HOST = str(ROOT / "configs" / "host.yaml")


class Stft(torch.nn.Module):
    def __init__(self, n_fft, hop, win_length=None, window=True, center=True, normalized=False, onesided=True):
        super().__init__()
        self.args = dict(n_fft=n_fft, hop_length=hop, win_length=win_length, center=center, normalized=normalized,
                         onesided=onesided)
        self.window = torch.hann_window(win_length or n_fft) if window else None

    def forward(self, x):
        z = torch.stft(x, window=self.window, return_complex=True, **self.args)
        return z.abs() ** 2, torch.view_as_real(z.transpose(1, 2))


class Rfft(torch.nn.Module):
    def __init__(self, dim, norm):
        super().__init__()
        self.dim, self.norm = dim, norm

    def forward(self, x, y):
        a, b = torch.fft.rfft(x, dim=self.dim, norm=self.norm), torch.fft.rfft(y, dim=self.dim, norm=self.norm)
        return torch.view_as_real(a * b), (a * 2.0).real, a.imag[:, 1:], torch.view_as_real(a + b - a / 3.0)


def _check(module, make, importer, trials=3, rtol=1e-4):
    rng = np.random.default_rng(0)
    example = [torch.from_numpy(a) for a in make(rng)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if importer == "fx":
            from loom.frontend.fx import from_fx
            lib = loom.build(from_fx(module, example), HOST)
            run = lambda *a: lib["main"](*a)  # noqa: E731
        else:
            from loom.torch import compile as loom_compile
            compiled = loom_compile(module, example, config=HOST)
            run = lambda *a: compiled(*[torch.from_numpy(x) for x in a])  # noqa: E731
    for _ in range(trials):
        args = make(rng)
        with torch.no_grad():
            want = module(*[torch.from_numpy(a) for a in args])
        got = run(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, (tuple, list)) or type(got).__name__ == "Array" else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g, w = (g.numpy() if hasattr(g, "numpy") else g), w.numpy()
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())


def _signal(rng, length=1000):
    return [rng.standard_normal((2, length)).astype(np.float32)]


@pytest.mark.parametrize("importer", ["fx", "compile"])
@pytest.mark.parametrize("args", [dict(n_fft=64, hop=16), dict(n_fft=64, hop=20, center=False),
                                  dict(n_fft=50, hop=10, win_length=40), dict(n_fft=64, hop=16, window=False,
                                                                              win_length=48),
                                  dict(n_fft=32, hop=8, normalized=True, onesided=False)])
def test_stft_against_pytorch(importer, args):
    _check(Stft(**args), _signal, importer)


@pytest.mark.parametrize("importer", ["fx", "compile"])
@pytest.mark.parametrize("dim, norm", [(-1, None), (0, "ortho"), (1, "forward")])
def test_rfft_products_and_parts_against_pytorch(importer, dim, norm):
    _check(Rfft(dim, norm), lambda rng: [rng.standard_normal((6, 10)).astype(np.float32) for _ in range(2)], importer)


@pytest.mark.skipif(torchaudio is None, reason="python3-torchaudio is not installed")
@pytest.mark.parametrize("importer", ["fx", "compile"])
@pytest.mark.parametrize("name, kwargs", [
    ("Spectrogram", dict(n_fft=400, hop_length=160)),
    ("Spectrogram", dict(n_fft=256, hop_length=64, power=1, normalized=True)),  # complex / the window's norm
    ("MelSpectrogram", dict(sample_rate=16000, n_fft=400, hop_length=160, n_mels=40)),
    ("MFCC", dict(sample_rate=16000, n_mfcc=13, melkwargs=dict(n_fft=400, hop_length=160, n_mels=40)))])  # log10
def test_torchaudio_spectrograms_against_pytorch(importer, name, kwargs):
    transform = getattr(torchaudio.transforms, name)
    _check(transform(**kwargs), lambda rng: [rng.standard_normal((1, 4000)).astype(np.float32)], importer)


class ComplexOut(torch.nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x)


class ComplexExp(torch.nn.Module):
    def forward(self, x):
        return torch.view_as_real(torch.exp(torch.fft.rfft(x)))


def test_a_complex_result_and_an_operator_without_complex_values_are_refused():
    from loom.frontend.fx import from_fx
    x = torch.zeros(2, 8)
    with pytest.raises(loom.LoomError, match=r"returns a complex tensor.*torch\.view_as_real"):
        from_fx(ComplexOut(), [x])
    with pytest.raises(loom.LoomError, match=r"aten::exp.*a complex tensor as its argument \(Loom carries complex "
                                             r"values through .*abs"):
        from_fx(ComplexExp(), [x])


class AngleOfStft(torch.nn.Module):
    """angle has no converter: stft, and abs that reads it, stay TorchScript with it."""
    def forward(self, x):
        z = torch.stft(x, 64, 16, window=torch.hann_window(64), return_complex=True)
        return torch.angle(z), z.abs()


class RoundTrip(torch.nn.Module):
    """irfft has no converter: the complex values stay TorchScript (a traced `* 2.0` among them)."""
    def forward(self, x):
        return torch.fft.irfft(torch.fft.rfft(x) * 2.0)


@pytest.mark.parametrize("script", [False, True])
@pytest.mark.parametrize("module", [AngleOfStft, RoundTrip])
def test_complex_values_torchscript_reads_stay_torchscript(module, script):
    from loom.torch import compile as loom_compile
    m = module().eval()
    x = torch.randn(2, 500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = loom_compile(m, [x], config=HOST, script=script)
    for _ in range(2):
        x = torch.randn(2, 500)
        want, got = m(x), compiled(x)
        want, got = (want if isinstance(want, tuple) else (want,)), (got if isinstance(got, (tuple, list)) else (got,))
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-5, atol=1e-5)
