"""Complex tensors in the PyTorch importers (docs/frontends.md, "Complex
values in PyTorch models"): Loom has no complex dtype, so a complex value
is carried as `Complex`, a float tensor of its shape followed by an axis
of 2 (real, imaginary; ONNX's layout), from the transform that makes it
(`_fft_r2c`, `stft`) to what makes it real again (`abs`, `view_as_real`,
`real`, `imag`).  Between them the operators that only move
elements (transpose, permute, reshape, slice, select, the copies) and
products with a real tensor take it; any other operator given one is
refused naming it, and so is a complex result of the whole model."""
import numpy as np

from .. import op
from .aten import Complex, Unsupported, _axis, _static, _t, aten, complex_converter
from .common import dft_matrix, frames_of, transformed


def _rank(ctx, z):
    return ctx.rank(z.parts) - 1


def _part(ctx, z, k):
    """The real (k = 0) or imaginary (1) parts of z."""
    return op.take(z.parts, ctx.expr(np.asarray(k, dtype=np.int64)), axis=-1)


def _transform(ctx, x, axis, bins, matrix):
    """x (float) times `matrix` along `axis` into (bins, 2) there."""
    rank = ctx.rank(x)
    order = [a for a in range(rank) if a != axis] + [axis]
    if order != list(range(rank)):
        x = op.transpose(x, axes=order)
    y = transformed(ctx, x, matrix, [ctx.shape(x)[a] for a in range(rank - 1)], bins)
    if order != list(range(rank)):  # the transformed axis back in its place, the parts last
        back = list(np.argsort(order)) + [rank]
        y = op.transpose(y, axes=[int(a) for a in back])
    return Complex(y)


def _normalized(matrix, n, normalization):
    """PyTorch's fft normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n."""
    if normalization not in (0, 1, 2):
        raise Unsupported(f"the fft normalization {normalization}")
    return matrix / (1.0, np.sqrt(n), float(n))[normalization]


@aten("_fft_r2c")
def _fft_r2c(ctx, node, x, dim, normalization, onesided):
    """torch.fft.rfft / fft of a real tensor (and torch.stft's transform)
    along one axis: a dense with a matrix of cosines and sines."""
    x = _t(ctx, x)
    dtype = ctx.dtype(x)
    if dtype not in ("float32", "float64"):
        raise Unsupported(f"a transform of a {dtype} tensor")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) != 1:
        raise Unsupported(f"a transform over {len(dims)} axes")
    axis = _axis(int(dims[0]), ctx.rank(x))
    n = _static(ctx, x)[axis]
    bins = n // 2 + 1 if onesided else n
    matrix = _normalized(dft_matrix(n, n, bins, 1), n, int(normalization))
    return _transform(ctx, x, axis, bins, matrix.astype(dtype))


@aten("fft_rfft")
def _fft_rfft(ctx, node, x, n=None, dim=-1, norm=None):
    """torch.fft.rfft as TorchScript keeps it: the signal cut or padded
    with zeros to n, transformed (norm: backward, ortho or forward)."""
    x = _t(ctx, x)
    axis = _axis(int(dim), ctx.rank(x))
    length = _static(ctx, x)[axis]
    if n is not None and int(n) != length:
        n = int(n)
        if n < length:
            x = op.slice(x, begin=[0], end=[n], axes=[axis])
        else:
            width = [0] * (2 * ctx.rank(x))
            width[2 * axis + 1] = n - length
            x = op.pad(x, pad_width=width)
    modes = {None: 0, "backward": 0, "ortho": 1, "forward": 2}
    if norm not in modes:
        raise Unsupported(f"norm='{norm}'")
    return _fft_r2c(ctx, node, x, [axis], modes[norm], True)


@aten("stft")
def _stft(ctx, node, x, n_fft, *rest, **kwargs):
    """aten::stft: frames of n_fft every hop_length, times the window
    (centred in n_fft when shorter), transformed.  torch.stft pads for
    `center` before it; the overload with center and pad_mode (PyTorch 2)
    pads here.  return_complex=False gives the parts (the old real form)."""
    centred = (len(rest) >= 5 and isinstance(rest[4], str)) or "center" in kwargs or "pad_mode" in kwargs
    names = ["hop_length", "win_length", "window"] + (["center", "pad_mode"] if centred else []) + \
        ["normalized", "onesided", "return_complex"]
    if len(rest) > len(names):
        raise Unsupported(f"stft with {len(rest) + 2} arguments")
    a = {"hop_length": None, "win_length": None, "window": None, "center": centred, "pad_mode": "reflect",
         "normalized": False, "onesided": None, "return_complex": None}
    a.update(zip(names, rest))
    a.update(kwargs)
    hop_length, win_length, window = a["hop_length"], a["win_length"], a["window"]
    normalized, onesided, return_complex = a["normalized"], a["onesided"], a["return_complex"]
    x = _t(ctx, x)
    if a["center"]:
        pad_mode = a["pad_mode"]
        if pad_mode not in ("reflect", "constant", "replicate"):
            raise Unsupported(f"stft's pad_mode '{pad_mode}'")
        half = int(n_fft) // 2
        width = [0, 0] * (ctx.rank(x) - 1) + [half, half]
        x = op.pad(x, pad_width=width, mode={"replicate": "edge"}.get(pad_mode, pad_mode))
    dtype = ctx.dtype(x)
    if dtype not in ("float32", "float64") or ctx.rank(x) not in (1, 2):
        raise Unsupported(f"an stft of a {dtype} tensor of rank {ctx.rank(x)}")
    n_fft = int(n_fft)
    hop = int(hop_length) if hop_length is not None else n_fft // 4
    length = _static(ctx, x)[-1]
    if not 0 < n_fft <= length or hop < 1:
        raise Unsupported(f"frames of {n_fft} every {hop} of a signal of {length}")
    framed = frames_of(ctx, x, ctx.rank(x) - 1, length, n_fft, hop)  # (batch..., frames, n_fft)
    if window is None and win_length is not None and int(win_length) < n_fft:  # a rectangle of win_length
        window = np.ones(int(win_length), dtype=dtype)
    if window is not None:
        win = _t(ctx, window)
        size = _static(ctx, win)[0]
        if size != n_fft:
            left = (n_fft - size) // 2
            win = op.pad(win, pad_width=[left, n_fft - size - left])
        framed = op.multiply(framed, win)
    bins = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    matrix = _normalized(dft_matrix(n_fft, n_fft, bins, 1), n_fft, 1 if normalized else 0)
    z = _transform(ctx, framed, ctx.rank(framed) - 1, bins, matrix.astype(dtype))
    rank = _rank(ctx, z)  # (batch..., frames, bins) -> (batch..., bins, frames), as PyTorch
    axes = list(range(rank - 2)) + [rank - 1, rank - 2, rank]
    parts = op.transpose(z.parts, axes=axes)
    return parts if return_complex is False else Complex(parts)


# ------------------------------------------------ operators taking one

def _moved(ctx, z, axes):
    """A permutation of the complex axes, the parts kept last."""
    return Complex(op.transpose(z.parts, axes=list(axes) + [len(axes)]))


@complex_converter("transpose", "transpose_", "swapaxes")
def _transpose(ctx, node, z, a, b):
    rank = _rank(ctx, z)
    axes = list(range(rank))
    a, b = _axis(int(a), rank), _axis(int(b), rank)
    axes[a], axes[b] = axes[b], axes[a]
    return _moved(ctx, z, axes)


@complex_converter("permute")
def _permute(ctx, node, z, dims):
    return _moved(ctx, z, [_axis(int(d), _rank(ctx, z)) for d in dims])


@complex_converter("view", "reshape", "_unsafe_view", "_reshape_alias", "view_copy")
def _view(ctx, node, z, shape, *rest):
    return Complex(op.reshape(z.parts, shape=[int(s) for s in shape] + [2]))


@complex_converter("slice")
def _slice(ctx, node, z, dim=0, start=None, end=None, step=1):
    big = 2 ** 62
    start = 0 if start is None else max(min(int(start), big), -big)
    end = big if end is None else max(min(int(end), big), -big)
    axis = _axis(int(dim), _rank(ctx, z))
    return Complex(op.slice(z.parts, begin=[start], end=[end], axes=[axis], strides=[int(step)]))


@complex_converter("select")
def _select(ctx, node, z, dim, index):
    axis = _axis(int(dim), _rank(ctx, z))
    index = int(index)
    index = index + _static(ctx, z.parts)[axis] if index < 0 else index
    return Complex(op.squeeze(op.slice(z.parts, begin=[index], end=[index + 1], axes=[axis]), axis=[axis]))


@complex_converter("detach", "clone", "contiguous", "alias", "lift_fresh", "lift_fresh_copy", "resolve_conj",
              "resolve_neg")
def _same(ctx, node, z, *rest, **kwargs):
    return z


@complex_converter("mul", "multiply")
def _mul(ctx, node, a, b):
    if isinstance(a, Complex) and isinstance(b, Complex):
        ar, ai = _part(ctx, a, 0), _part(ctx, a, 1)
        br, bi = _part(ctx, b, 0), _part(ctx, b, 1)
        re = op.subtract(op.multiply(ar, br), op.multiply(ai, bi))
        im = op.add(op.multiply(ar, bi), op.multiply(ai, br))
        return Complex(op.concat(op.expand_dims(re, axis=-1), op.expand_dims(im, axis=-1), axis=-1))
    z, r = (a, b) if isinstance(a, Complex) else (b, a)
    r = _t(ctx, r, z.parts)
    return Complex(op.multiply(z.parts, op.expand_dims(r, axis=-1) if ctx.rank(r) else r))


@complex_converter("div", "div_", "divide", "true_divide")
def _div(ctx, node, a, b, *rest):
    """A complex tensor divided by a real one (torchaudio's normalized
    spectrogram divides by the window's norm)."""
    if not isinstance(a, Complex) or isinstance(b, Complex) or rest and rest[0] is not None:
        raise Unsupported("a division other than of a complex tensor by a real one")
    b = _t(ctx, b, a.parts)
    return Complex(op.divide(a.parts, op.expand_dims(b, axis=-1) if ctx.rank(b) else b))


@complex_converter("add", "add_", "sub", "sub_", "subtract")
def _add(ctx, node, a, b, alpha=1):
    """The sum (difference) of two complex tensors."""
    if not (isinstance(a, Complex) and isinstance(b, Complex)):
        raise Unsupported("a sum of a complex tensor and a real one")
    if alpha != 1:
        b = Complex(op.multiply(b.parts, ctx.const(float(alpha), b.parts)))
    f = op.subtract if node.kind.split("::")[1].startswith("sub") else op.add
    return Complex(f(a.parts, b.parts))


# --------------------------------------------- operators making it real

@complex_converter("abs")
def _abs(ctx, node, z):
    return op.sqrt(op.sum(op.multiply(z.parts, z.parts), axis=[-1]))


@complex_converter("view_as_real")
def _view_as_real(ctx, node, z):
    return z.parts


@complex_converter("real")
def _real(ctx, node, z):
    return _part(ctx, z, 0)


@complex_converter("imag")
def _imag(ctx, node, z):
    return _part(ctx, z, 1)
