"""ONNX converters: signal processing, opset 17 (DFT, STFT,
MelWeightMatrix).

Loom has no complex dtype and no FFT.  ONNX writes a complex tensor as a
real one whose last axis holds (real, imaginary), or only the real part
(an extent of 1), so the DFT of N samples of c numbers each into K bins
of 2 numbers is linear in real numbers: one `dense` with a (2K, N*c)
matrix of cosines and sines, computed with NumPy in float64 at import and
stored in the input's dtype.  That is N*c*2K multiply-adds per signal
(an FFT's are O(N log N)) and a constant of that many elements: right for
the frame lengths of audio features (hundreds), not for very long
transforms.  It needs the transformed axis's extent, the DFT's length and
the STFT's frame length and step at compile time; the other axes may be
symbolic.  STFT gathers its frames with one `take` of constant indices and
multiplies them by the same matrix (a known window is folded into it, a
run-time one multiplies the frames).  MelWeightMatrix depends on its
inputs only: it is computed at import.
"""
import numpy as np

from ... import _core, op
from ..common import dft_matrix, frames_of, transformed
from . import _axis, _dtype, _known, converter


def _refuse(node, what):
    raise _core.TypeError(f"{node.op_type} '{node.name}': {what} (docs/frontends.md, \"Signal processing\")")


def _scalar(node, value, what, integer=True):
    """A known scalar input (a 0-d or one-element tensor) as a Python number."""
    value = _known(node, value, what)
    if np.asarray(value).size != 1:
        _refuse(node, f"its {what} has shape {list(np.shape(value))}, not a scalar")
    item = np.asarray(value).reshape(-1)[0]
    if integer and not np.issubdtype(np.asarray(value).dtype, np.integer):
        _refuse(node, f"its {what} is {np.asarray(value).dtype}, not an integer")
    return int(item) if integer else float(item)


def _float_dtype(ctx, node, x, what):
    dtype = ctx.dtype(x)
    if dtype not in ("float16", "float32", "float64"):
        _refuse(node, f"its {what} is {dtype} (float16, float32 or float64 are)")
    return dtype


def _components(ctx, node, x, what):
    """The extent of x's last axis: 1 (real numbers) or 2 (complex ones)."""
    last = ctx.shape(x)[-1] if ctx.rank(x) else None
    if last not in (1, 2):
        _refuse(node, f"its {what} of shape {list(ctx.shape(x))} has a last dimension of {last}; ONNX's complex "
                      "layout has 1 (real) or 2 (real, imaginary) there")
    return int(last)


# ---------------------------------------------------------------- DFT

@converter("DFT", opsets=(17, 17))
def _dft(ctx, node, x, dft_length=None):
    dtype = _float_dtype(ctx, node, x, "input")
    components = _components(ctx, node, x, "input")
    shape, rank = list(ctx.shape(x)), ctx.rank(x)
    axis = int(node.attr("axis", 1))
    if not -rank <= axis <= rank - 2:
        _refuse(node, f"axis={axis} is not an axis of the signal (rank {rank}, the last axis holds the "
                      f"complex parts: -{rank} to {rank - 2})")
    axis = _axis(axis, rank)
    samples = shape[axis]
    if not isinstance(samples, int):
        node.unsupported(f"a transform along the symbolic axis {axis} ({samples})")
    length = samples if dft_length is None else _scalar(node, dft_length, "dft_length")
    if length < 1:
        _refuse(node, f"its dft_length is {length}; it must be at least 1")
    inverse, onesided = bool(node.attr("inverse", 0)), bool(node.attr("onesided", 0))
    if onesided and components == 2:
        _refuse(node, "onesided=1 with a complex input (ONNX: a onesided output needs a real one)")
    bins = length // 2 + 1 if onesided else length
    used = min(samples, length)  # dft_length pads with zeros (nothing to add) or truncates
    x = ctx.expr(x)
    if used < samples:
        x = op.slice(x, begin=[0], end=[used], axes=[axis])
        shape[axis] = used
    order = [a for a in range(rank - 1) if a != axis] + [axis, rank - 1]  # the transformed axis beside the parts
    moved = order != list(range(rank))
    if moved:
        x = op.transpose(x, axes=order)
    lead = [shape[a] for a in order[:-2]]
    y = transformed(ctx, x, dft_matrix(used, length, bins, components, inverse).astype(dtype), lead, bins)
    if moved:
        y = op.transpose(y, axes=[int(a) for a in np.argsort(order)])
    return y


# --------------------------------------------------------------- STFT

@converter("STFT", opsets=(17, 17))
def _stft(ctx, node, signal, frame_step, window=None, frame_length=None):
    dtype = _float_dtype(ctx, node, signal, "signal")
    if ctx.rank(signal) != 3:
        _refuse(node, f"its signal has shape {list(ctx.shape(signal))}; ONNX's STFT takes (batch, length, 1 or 2)")
    components = _components(ctx, node, signal, "signal")
    length = ctx.shape(signal)[1]
    if not isinstance(length, int):
        node.unsupported(f"a signal of symbolic length ({length})")
    step = _scalar(node, frame_step, "frame_step")
    if step < 1:
        _refuse(node, f"its frame_step is {step}; it must be at least 1")
    size = None if frame_length is None else _scalar(node, frame_length, "frame_length")
    if window is not None:
        if ctx.rank(window) != 1 or not isinstance(ctx.shape(window)[0], int):
            _refuse(node, f"its window has shape {list(ctx.shape(window))}, not one static axis")
        extent = ctx.shape(window)[0]
        if size is not None and size != extent:
            _refuse(node, f"its frame_length ({size}) and its window's length ({extent}) differ")
        size = extent
    if size is None:
        _refuse(node, "it has neither a window nor a frame_length, so its frames have no length")
    if not 1 <= size <= length:
        _refuse(node, f"its frames of {size} samples do not fit its signal of {length}")
    onesided = bool(node.attr("onesided", 1))
    if onesided and components == 2:
        _refuse(node, "onesided=1 (the default) with a complex signal (ONNX: a onesided output needs a real "
                      "one; set onesided=0)")
    bins = size // 2 + 1 if onesided else size
    x = frames_of(ctx, ctx.expr(signal), 1, length, size, step)  # (batch, frames, size, components)
    known_window = window if isinstance(window, np.ndarray) else None
    if window is not None and known_window is None:
        x = op.multiply(x, op.reshape(ctx.expr(window, dtype), shape=[size, 1]))
    matrix = dft_matrix(size, size, bins, components, window=known_window).astype(dtype)
    return transformed(ctx, x, matrix, list(ctx.shape(x)[:2]), bins)


# ----------------------------------------------------- MelWeightMatrix

def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    """ONNX's MelWeightMatrix (its reference implementation's formula), in
    float64: (dft_length // 2 + 1, num_mel_bins) triangles of peak 1.  The
    num_mel_bins + 2 band edges are equally spaced in mel from
    lower_edge_hertz, one step of (mel(upper) - mel(lower)) /
    (num_mel_bins + 2) apart (so the last edge falls short of
    upper_edge_hertz), each the spectrum bin floor((dft_length + 1) * hz /
    sample_rate).  Band i rises from its edge i to edge i + 1 (its centre:
    1) and falls to zero at edge i + 2.  ValueError when an edge is not
    a frequency (-700 Hz or less) or a band reaches outside the spectrum
    (the reference would index out of it)."""
    spectrum = dft_length // 2 + 1
    for name, hz in (("lower_edge_hertz", lower_edge_hertz), ("upper_edge_hertz", upper_edge_hertz)):
        if not np.isfinite(hz) or hz <= -700:
            raise ValueError(f"its {name} is {hz}, outside the mel scale's domain (above -700 Hz)")
    low = 2595 * np.log10(1 + float(lower_edge_hertz) / 700)
    high = 2595 * np.log10(1 + float(upper_edge_hertz) / 700)
    mels = np.arange(num_mel_bins + 2, dtype=np.float64) * ((high - low) / (num_mel_bins + 2)) + low
    hertz = 700 * (np.power(10, mels / 2595) - 1)
    edges = ((dft_length + 1) * hertz // sample_rate).astype(np.int64)
    left, centre, right = edges[:-2], edges[1:-1], edges[2:]
    rising, falling = centre > left, right > centre
    # the bins each band writes: [left, centre] rising (its centre alone when
    # left == centre), [centre, right) falling
    first = np.where(rising, left, centre)
    last = np.maximum(np.where(falling, right - 1, centre), centre)
    written = (centre >= left) | falling
    outside = written & ((first < 0) | (last >= spectrum))
    if outside.any():
        band = int(np.argmax(outside))
        reached = int(first[band] if first[band] < 0 else last[band])
        raise ValueError(f"its band {band} reaches the spectrum's bin {reached}, outside the {spectrum} bins of a "
                         f"{dft_length}-point DFT (lower_edge_hertz {lower_edge_hertz}, upper_edge_hertz "
                         f"{upper_edge_hertz}, sample_rate {sample_rate})")
    j = np.arange(spectrum, dtype=np.float64)[:, None]
    up = (j - left) / np.where(rising, centre - left, 1)
    down = (right - j) / np.where(falling, right - centre, 1)
    out = np.zeros((spectrum, num_mel_bins))
    out = np.where(rising & (j >= left) & (j <= centre), up, out)
    out = np.where((centre == left) & (j == centre), 1.0, out)
    return np.where(falling & (j >= centre) & (j < right), down, out)


def _mel_fold(node, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    dtype = _dtype(node.attr("output_datatype", 1), f"{node.op_type} '{node.name}'")
    if dtype == "bool":
        _refuse(node, "output_datatype=BOOL (ONNX allows numbers only)")
    bins = _scalar(node, num_mel_bins, "num_mel_bins")
    length = _scalar(node, dft_length, "dft_length")
    rate = _scalar(node, sample_rate, "sample_rate")
    lower = _scalar(node, lower_edge_hertz, "lower_edge_hertz", integer=False)
    upper = _scalar(node, upper_edge_hertz, "upper_edge_hertz", integer=False)
    if bins < 0 or length < 0 or rate < 1:
        _refuse(node, f"num_mel_bins={bins}, dft_length={length}, sample_rate={rate} (none may be negative, "
                      "sample_rate must be at least 1)")
    try:
        return mel_weight_matrix(bins, length, rate, lower, upper).astype(dtype)
    except ValueError as e:
        _refuse(node, str(e))


@converter("MelWeightMatrix", opsets=(17, 17), fold=_mel_fold)
def _mel_weight_matrix(ctx, node, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    return _mel_fold(node, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
