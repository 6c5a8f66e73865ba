"""The ONNX importer's signal-processing converters (opset 17; docs/frontends.md,
"Signal processing"): DFT and STFT against NumPy's FFT on random signals
(real and complex, forward and inverse, onesided, padded and truncated,
along any axis, with and without a window), MelWeightMatrix against a
NumPy transcription of ONNX's formula, and each refusal with its message."""
import re

import numpy as np
import pytest

import loom
from loom.frontend import onnx as lonnx

from conftest import ROOT

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")
rng = np.random.default_rng(0)
ELEMENT = {np.dtype("float16"): TensorProto.FLOAT16, np.dtype("float32"): TensorProto.FLOAT,
           np.dtype("float64"): TensorProto.DOUBLE, np.dtype("int32"): TensorProto.INT32,
           np.dtype("int64"): TensorProto.INT64}


def one_node(op_type, inputs, initializers=(), name="n", **attributes):
    """A model of one node of opset 17: `inputs` [(name, array)] are the
    graph's inputs (a name "" is an omitted optional input), `initializers`
    [(name, array)] its initializers, in that order."""
    node = helper.make_node(op_type, [n for n, _ in list(inputs) + list(initializers)], ["y"], name=name,
                            **attributes)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, ELEMENT[a.dtype], a.shape) for n, a in inputs if n],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(np.asarray(a), name=n) for n, a in initializers if n])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(m, *arrays, **import_options):
    lib = loom.build(lonnx.from_onnx(m, **import_options), HOST)
    return lib["main"](*arrays).numpy()


def signal(shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def as_complex(x):
    """ONNX's layout (last axis: real, or real and imaginary) as complex128."""
    x = x.astype(np.float64)
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0] + 0j


def as_onnx(z):
    return np.stack([z.real, z.imag], axis=-1)


def relative_error(got, want):
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


# ---------------------------------------------------------------- DFT

@pytest.mark.parametrize("shape, axis, length, inverse, onesided, dtype", [
    ((2, 8, 1), 1, None, 0, 0, np.float32),        # real, forward
    ((2, 8, 2), 1, None, 0, 0, np.float32),        # complex
    ((3, 6, 5, 2), 1, None, 1, 0, np.float32),     # inverse along a non-last axis
    ((3, 6, 5, 1), 2, 9, 0, 1, np.float32),        # onesided, dft_length longer than the axis (zeros)
    ((3, 6, 5, 2), 1, 4, 1, 0, np.float64),        # dft_length shorter than the axis (truncated), float64
    ((2, 7, 3, 1), -2, None, 0, 1, np.float32),    # a negative axis, odd length onesided
    ((4, 5, 3, 2), 0, 7, 0, 0, np.float32),        # the first axis
    ((2, 300, 1), 1, None, 1, 1, np.float32),      # a long real inverse, onesided
])
def test_dft_matches_numpy(shape, axis, length, inverse, onesided, dtype):
    x = signal(shape, dtype)
    initializers = [("dft_length", np.array(length, np.int64))] if length else []
    got = run(one_node("DFT", [("x", x)], initializers, axis=axis, inverse=inverse, onesided=onesided), x)
    along = axis % len(shape)
    n = length or shape[along]
    z = (np.fft.ifft if inverse else np.fft.fft)(as_complex(x), n=n, axis=along)
    if onesided:
        z = np.take(z, np.arange(n // 2 + 1), axis=along)
    want = as_onnx(z)
    assert got.dtype == dtype and got.shape == want.shape
    assert relative_error(got, want) < (1e-12 if dtype == np.float64 else 1e-5)


def test_dft_takes_a_symbolic_batch():
    m = one_node("DFT", [("x", signal((1, 6, 5, 2)))], axis=1)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    mod = lonnx.from_onnx(m)
    lib = loom.build(mod, HOST)
    for batch in (1, 3):
        x = signal((batch, 6, 5, 2))
        got = lib["main"](x).numpy()
        assert relative_error(got, as_onnx(np.fft.fft(as_complex(x), axis=1))) < 1e-5


# --------------------------------------------------------------- STFT

def stft_reference(x, step, size, window, onesided):
    z = as_complex(x)
    frames = (z.shape[1] - size) // step + 1
    framed = np.stack([z[:, f * step:f * step + size] for f in range(frames)], axis=1)
    spectrum = np.fft.fft(framed * (1 if window is None else window), axis=-1)
    return as_onnx(spectrum[..., :size // 2 + 1] if onesided else spectrum)


@pytest.mark.parametrize("length, step, size, window, onesided, components", [
    (100, 8, 16, None, 1, 1),         # frame_length only
    (100, 5, 16, "known", 1, 1),      # a window given as an initializer: folded into the matrix
    (100, 3, 20, "run time", 1, 1),   # a window given as an input: multiplies the frames
    (64, 16, 16, "known", 0, 2),      # complex, frames that do not overlap, both sides
    (50, 1, 7, None, 0, 1),           # a step of 1, odd frames, both sides
    (40, 11, 12, "both", 1, 1),       # a window and an equal frame_length
])
def test_stft_matches_numpy(length, step, size, window, onesided, components):
    x = signal((2, length, components))
    w = rng.random(size).astype(np.float32)
    inputs, initializers = [("signal", x)], [("frame_step", np.array(step, np.int64))]
    if window == "run time":
        inputs.append(("window", w))
        initializers = []
        options = {"constants": {"frame_step": np.array(step, np.int64)}}
        inputs.insert(1, ("frame_step", np.array(step, np.int64)))
    else:
        options = {}
        initializers.append(("window", w) if window in ("known", "both") else ("", None))
    if window in (None, "both"):
        initializers.append(("frame_length", np.array(size, np.int64)))
    m = one_node("STFT", inputs, initializers, onesided=onesided)
    arrays = [x] + ([w] if window == "run time" else [])
    got = run(m, *arrays, **options)
    want = stft_reference(x, step, size, None if window is None else w, onesided)
    assert got.shape == want.shape
    assert relative_error(got, want) < 1e-5


# ----------------------------------------------------- MelWeightMatrix

def mel_reference(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    """ONNX's MelWeightMatrix as its specification's reference computes it,
    one band and one bin at a time: num_mel_bins + 2 edges a step of
    (mel(upper) - mel(lower)) / (num_mel_bins + 2) apart on the mel scale
    mel(f) = 2595 log10(1 + f / 700), each at the spectrum bin
    floor((dft_length + 1) hz / sample_rate); band i rises from edge i to
    1 at edge i + 1 and falls to 0 at edge i + 2."""
    def mel(hz):
        return 2595 * np.log10(1 + hz / 700)
    step = (mel(upper_edge_hertz) - mel(lower_edge_hertz)) / (num_mel_bins + 2)
    edges = []
    for e in range(num_mel_bins + 2):
        hz = 700 * (10 ** ((e * step + mel(lower_edge_hertz)) / 2595) - 1)
        edges.append(int(((dft_length + 1) * hz) // sample_rate))
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for band in range(num_mel_bins):
        left, centre, right = edges[band:band + 3]
        if centre == left:
            out[centre, band] = 1
        elif centre > left:
            for b in range(left, centre + 1):
                out[b, band] = (b - left) / (centre - left)
        for b in range(centre, right):
            out[b, band] = (right - b) / (right - centre)
    return out


MEL_CASES = [(8, 16, 8192, 0.0, 4096.0),        # ONNX's node test
             (40, 512, 16000, 20.0, 7600.0),     # a speech front end's
             (13, 400, 22050, 300.0, 8000.0),
             (64, 1024, 44100, 0.0, 22050.0),
             (10, 255, 8000, 125.0, 3800.0)]


NAMES = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]


@pytest.mark.parametrize("case", MEL_CASES)
@pytest.mark.parametrize("output_datatype, dtype", [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64)])
def test_mel_weight_matrix_is_the_specifications(case, output_datatype, dtype):
    bins, length, rate, lower, upper = case
    values = [np.int64(bins), np.int64(length), np.int64(rate), np.float32(lower), np.float32(upper)]
    initializers = [(n, np.asarray(v)) for n, v in zip(NAMES, values)]
    want = mel_reference(bins, length, rate, float(np.float32(lower)), float(np.float32(upper)))
    # As initializers, the matrix is computed at import: the model's output is a constant.
    got = run(one_node("MelWeightMatrix", [], initializers, output_datatype=output_datatype))
    assert got.dtype == dtype and np.array_equal(got, want.astype(dtype)) and want.max() == 1
    # A spectrogram times it is a mel spectrogram.
    spectrogram = rng.random((3, length // 2 + 1)).astype(dtype)
    mel = helper.make_node("MelWeightMatrix", NAMES, ["weights"], name="mel", output_datatype=output_datatype)
    matmul = helper.make_node("MatMul", ["spectrogram", "weights"], ["y"], name="apply")
    element = ELEMENT[np.dtype(dtype)]
    graph = helper.make_graph([mel, matmul], "g", [helper.make_tensor_value_info("spectrogram", element, (3, None))],
                              [helper.make_tensor_value_info("y", element, None)],
                              initializer=[numpy_helper.from_array(v, name=n) for n, v in initializers])
    got = run(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), spectrogram,
              shapes={"spectrogram": spectrogram.shape})
    np.testing.assert_allclose(got, spectrogram.astype(np.float64) @ want, rtol=1e-5, atol=1e-6)


def test_mel_weight_matrix_in_an_integer_type_and_from_inputs_known_at_compile_time():
    values = {"num_mel_bins": np.int32(6), "dft_length": np.int32(32), "sample_rate": np.int32(16000),
              "lower_edge_hertz": np.float32(100.0), "upper_edge_hertz": np.float32(7000.0)}
    m = one_node("MelWeightMatrix", [(n, np.asarray(v)) for n, v in values.items()], name="mel",
                 output_datatype=TensorProto.INT64)
    with pytest.raises(lonnx.ValueNeededError, match=r"MelWeightMatrix 'mel': its num_mel_bins is computed at run "
                                                     r"time from the input 'num_mel_bins'"):
        lonnx.from_onnx(m)
    mod = lonnx.from_onnx(m, constants=values)
    got = loom.build(mod, HOST)["main"]().numpy()
    want = mel_reference(6, 32, 16000, 100.0, 7000.0).astype(np.int64)
    assert got.dtype == np.int64 and np.array_equal(got, want) and want.sum() > 0


# ------------------------------------------------------------ refusals

def _refused(m, message, error=loom.TypeError):
    with pytest.raises(error, match=re.escape(message)):
        lonnx.from_onnx(m)


def test_a_dft_input_that_is_not_onnx_complex_layout_is_refused_naming_the_node():
    _refused(one_node("DFT", [("x", signal((2, 6, 3)))], name="spectrum"),
             "DFT 'spectrum': its input of shape [2, 6, 3] has a last dimension of 3; ONNX's complex layout has 1 "
             "(real) or 2 (real, imaginary) there")
    _refused(one_node("DFT", [("x", signal((2, 6, 2)))], name="spectrum", axis=2),
             "DFT 'spectrum': axis=2 is not an axis of the signal")
    _refused(one_node("DFT", [("x", signal((2, 6, 2)))], name="spectrum", onesided=1),
             "DFT 'spectrum': onesided=1 with a complex input")
    _refused(one_node("DFT", [("x", signal((2, 6, 1)))], [("n", np.array(0, np.int64))], name="spectrum"),
             "DFT 'spectrum': its dft_length is 0; it must be at least 1")
    _refused(one_node("DFT", [("x", signal((2, 6, 1)).astype(np.int32))], name="spectrum"),
             "DFT 'spectrum': its input is int32 (float16, float32 or float64 are)")


def test_a_dft_length_computed_at_run_time_names_the_node_and_the_input():
    m = one_node("DFT", [("x", signal((2, 6, 1))), ("n", np.array(8, np.int64))], name="spectrum")
    with pytest.raises(lonnx.ValueNeededError, match=r"DFT 'spectrum': its dft_length is computed at run time from "
                                                     r"the input 'n'") as info:
        lonnx.from_onnx(m)
    assert info.value.inputs == ["n"]
    x = signal((2, 6, 1))
    got = run(m, x, constants={"n": np.array(8, np.int64)})
    assert relative_error(got, as_onnx(np.fft.fft(as_complex(x), n=8, axis=1))) < 1e-5


def test_stft_refusals_name_the_node():
    x, step = signal((2, 60, 1)), ("frame_step", np.array(4, np.int64))
    _refused(one_node("STFT", [("signal", x)], [step], name="frames"),
             "STFT 'frames': it has neither a window nor a frame_length")
    _refused(one_node("STFT", [("signal", x)], [step, ("", None), ("frame_length", np.array(61, np.int64))],
                      name="frames"),
             "STFT 'frames': its frames of 61 samples do not fit its signal of 60")
    _refused(one_node("STFT", [("signal", x)], [step, ("window", np.ones(8, np.float32)),
                                                ("frame_length", np.array(7, np.int64))], name="frames"),
             "STFT 'frames': its frame_length (7) and its window's length (8) differ")
    _refused(one_node("STFT", [("signal", signal((2, 60, 2)))], [step, ("window", np.ones(8, np.float32))],
                      name="frames"),
             "STFT 'frames': onesided=1 (the default) with a complex signal")
    _refused(one_node("STFT", [("signal", x)], [("frame_step", np.array(0, np.int64)),
                                                ("window", np.ones(8, np.float32))], name="frames"),
             "STFT 'frames': its frame_step is 0; it must be at least 1")
    _refused(one_node("STFT", [("signal", x), ("frame_step", np.array(4, np.int64))],
                      [("window", np.ones(8, np.float32))], name="frames"),
             "STFT 'frames': its frame_step is computed at run time from the input 'frame_step'",
             lonnx.ValueNeededError)


def test_a_mel_band_outside_the_spectrum_is_refused_naming_the_node():
    values = [np.int64(8), np.int64(16), np.int64(8000), np.float32(0.0), np.float32(16000.0)]  # above Nyquist
    _refused(one_node("MelWeightMatrix", [], list(zip(NAMES, map(np.asarray, values))), name="mel"),
             "MelWeightMatrix 'mel': its band 5 reaches the spectrum's bin 11, outside the 9 bins of a 16-point DFT")
    values[3] = np.float32(-800.0)
    _refused(one_node("MelWeightMatrix", [], list(zip(NAMES, map(np.asarray, values))), name="mel"),
             "MelWeightMatrix 'mel': its lower_edge_hertz is -800.0, outside the mel scale's domain")
