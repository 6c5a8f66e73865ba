"""PyTorch's quantized operators through the aten graph (docs/frontends.md,
"Quantized PyTorch models"): what eager-mode quantization
(torchvision.models.quantization) and FX graph mode (convert_fx) leave:
quantize_per_tensor, dequantize and the `quantized::` kernels (conv2d,
linear, add, mul, cat, hardswish, ...) with their packed weights.

A quantized tensor is its real values, a float expression: each converter
here computes in float (a convolution of the dequantized input by the
dequantized int8 weights, plus the float bias), and from_fx puts a
quantize and dequantize with the node's own output parameters (from the
trace's tensor_meta) after every node whose result is quantized, whatever
its operator (a quantized::conv2d's, an aten::max_pool2d's on a quantized
tensor).  The graph is then the QDQ form ONNX's quantized models import
as, and QDQToInteger makes its convolutions and products integer kernels
(docs/low-precision.md)."""
import numpy as np

from .. import op
from .aten import REGISTRY, Unsupported, _conv, _hardswish, _leaky_relu, _t, aten, layer_norm


def quantized(*names):
    """Registers the decorated function as the converter of each
    `quantized::` operator."""
    def register(fn):
        for name in names:
            REGISTRY.register(f"quantized::{name}", fn, (0, 0))
        return fn
    return register


_FORMATS = {"torch.quint8": "uint8", "torch.qint8": "int8"}


def activation_format(dtype):
    """Loom's dtype of a quantized activation's integers, or Unsupported."""
    name = _FORMATS.get(str(dtype))
    if name is None:
        raise Unsupported(f"activations quantized to {dtype} (quint8 and qint8 are)")
    return name


def requantized(ctx, value, meta):
    """`value` (real numbers) as PyTorch's quantized result of `meta`
    (a TensorMetadata whose is_quantized is set): rounded to its grid and
    saturated to its integers, back in float."""
    import torch
    params = meta.qparams
    if params.get("qscheme") not in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        raise Unsupported(f"a quantized result of scheme {params.get('qscheme')} (per tensor is)")
    dtype = activation_format(meta.dtype)
    value = _t(ctx, value)
    scale = ctx.expr(np.asarray(params["scale"], dtype=ctx.dtype(value)))
    zero = ctx.expr(np.asarray(params["zero_point"], dtype=dtype))
    return op.dequantize(op.quantize(value, scale, zero), scale, zero)


def _weight(ctx, w):
    """A quantized weight tensor as dequantize(its integers), per tensor or
    per output channel, so that QDQToInteger finds its integers."""
    import torch
    ints = w.int_repr().numpy()
    scheme = w.qscheme()
    if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        scale = np.asarray(w.q_scale(), np.float32)
        zero = np.asarray(w.q_zero_point(), ints.dtype)
    elif scheme in (torch.per_channel_affine, torch.per_channel_symmetric):
        shape = [1] * ints.ndim
        shape[w.q_per_channel_axis()] = -1
        scale = w.q_per_channel_scales().numpy().astype(np.float32).reshape(shape)
        zero = w.q_per_channel_zero_points().numpy().astype(ints.dtype).reshape(shape)
    else:
        raise Unsupported(f"weights quantized with scheme {scheme}")
    return op.dequantize(ctx.expr(ints), ctx.expr(scale), ctx.expr(zero))


def _unpack(packed, what):
    if not hasattr(packed, "unpack"):
        raise Unsupported(f"{what} whose weights are not packed parameters")
    return packed.unpack()


def _bias(ctx, y, bias, axis):
    if bias is None:
        return y
    b = bias.detach().numpy().astype(np.float32)
    shape = [1] * len(ctx.shape(y))
    shape[axis] = -1
    return op.add(y, ctx.expr(b.reshape(shape)))


# ------------------------------------------------- quantize and dequantize

@aten("quantize_per_tensor")
def _quantize_per_tensor(ctx, node, x, scale, zero_point, dtype):
    activation_format(dtype)  # (the rounding is from_fx's, after every quantized result)
    return _t(ctx, x)


@aten("dequantize")
def _dequantize(ctx, node, x):
    return [_t(ctx, t) for t in x] if isinstance(x, (list, tuple)) else _t(ctx, x)


def _torch_name(kind):
    return kind.split("::")[-1]


# ---------------------------------------------------------------- kernels

@quantized("conv2d", "conv2d_relu", "conv3d", "conv3d_relu", "conv_transpose2d")
def _qconv(ctx, node, x, packed, scale=None, zero_point=None):
    w, bias = _unpack(packed, node.kind)
    if w.dim() - 2 != (3 if "3d" in node.kind else 2):
        raise Unsupported(f"{node.kind} with weights of rank {w.dim()}")
    transposed = bool(packed.transpose())
    y = _conv(ctx, x, _weight(ctx, w), None, packed.stride(), packed.padding(), packed.dilation(), transposed,
              packed.output_padding() if transposed else None, packed.groups())
    y = _bias(ctx, y, bias, 1)
    return op.relu(y) if node.kind.endswith("_relu") else y


@quantized("linear", "linear_relu")
def _qlinear(ctx, node, x, packed, scale=None, zero_point=None):
    w, bias = _unpack(packed, node.kind)
    x = _t(ctx, x)
    y = _bias(ctx, op.dense(x, _weight(ctx, w)), bias, -1)
    return op.relu(y) if node.kind.endswith("_relu") else y


@quantized("add", "add_relu", "mul", "mul_relu")
def _qbinary(ctx, node, a, b, scale=None, zero_point=None):
    fn = op.add if _torch_name(node.kind).startswith("add") else op.multiply
    y = fn(_t(ctx, a), _t(ctx, b, like=_t(ctx, a)))
    return op.relu(y) if node.kind.endswith("_relu") else y


@quantized("add_scalar", "add_scalar_relu", "mul_scalar", "mul_scalar_relu")
def _qbinary_scalar(ctx, node, a, b):
    return _qbinary(ctx, node, a, b)


@quantized("cat", "cat_relu")
def _qcat(ctx, node, tensors, dim=0, scale=None, zero_point=None):
    y = op.concat(*[_t(ctx, t) for t in tensors], axis=int(dim))
    return op.relu(y) if node.kind.endswith("_relu") else y


@quantized("hardswish")
def _qhardswish(ctx, node, x, scale=None, zero_point=None):
    return _hardswish(ctx, node, x)


@quantized("leaky_relu")
def _qleaky_relu(ctx, node, x, slope=0.01, inplace=False, scale=None, zero_point=None):
    return _leaky_relu(ctx, node, x, slope)


@quantized("layer_norm")
def _qlayer_norm(ctx, node, x, normalized_shape, weight, bias, eps, scale=None, zero_point=None):
    return layer_norm(ctx, x, normalized_shape, weight, bias, eps)


@quantized("batch_norm2d", "batch_norm2d_relu", "batch_norm3d", "batch_norm3d_relu")
def _qbatch_norm(ctx, node, x, weight, bias, mean, var, eps, scale=None, zero_point=None):
    x = _t(ctx, x)
    dtype = ctx.dtype(x)
    y = op.batch_norm(x, *(ctx.expr(np.asarray(a), dtype) for a in (weight, bias, mean, var)), epsilon=float(eps))
    return op.relu(y) if node.kind.endswith("_relu") else y


# ------------------------------------------------------- dynamic quantization

def dynamic_qparams(ctx, x, reduce_range):
    """The scale and zero point PyTorch's dynamic quantization picks for x
    on each call (its ChooseQuantizationParams for uint8; the range in
    float32, the scale and zero point in float64): the range of x widened
    to hold 0 over 255 steps (127 with reduce_range, fbgemm's default);
    0.1 where that scale is 0 or its inverse overflows; a scale under
    6.1e-5 raised to it, the range stretched alike; the zero point from
    whichever end loses less, rounded to even and clipped."""
    qmax = 127.0 if reduce_range else 255.0
    f = lambda v: ctx.expr(np.asarray(v, np.float32))  # noqa: E731
    d = lambda v: ctx.expr(np.asarray(v, np.float64))  # noqa: E731
    wide = lambda v: op.cast(v, dtype="float64")  # noqa: E731
    x = op.cast(x, dtype="float32") if ctx.dtype(x) != "float32" else x
    low, high = op.minimum(op.min(x), f(0)), op.maximum(op.max(x), f(0))
    scale = op.divide(op.subtract(wide(high), wide(low)), d(qmax))
    narrow = op.cast(scale, dtype="float32")
    degenerate = op.logical_or(op.equal(narrow, f(0)), op.isinf(op.divide(f(1), narrow)))
    scale = op.where(degenerate, d(0.1), scale)
    threshold = np.float32(6.1e-5)
    small = op.less(scale, d(float(threshold)))
    amplifier = op.divide(f(threshold), op.cast(scale, dtype="float32"))
    at_zero_low, at_zero_high = op.equal(low, f(0)), op.equal(high, f(0))
    low = op.where(small, op.where(at_zero_low, low, op.where(at_zero_high, f(-threshold * np.float32(qmax)),
                                                               op.multiply(low, amplifier))), low)
    high = op.where(small, op.where(at_zero_low, f(threshold * np.float32(qmax)),
                                    op.where(at_zero_high, high, op.multiply(high, amplifier))), high)
    scale = op.where(small, d(float(threshold)), scale)
    from_low, from_high = op.divide(wide(low), scale), op.divide(wide(high), scale)
    low_error = op.neg(op.abs(from_low))                  # |qmin| - |low / scale|, qmin 0
    high_error = op.subtract(d(qmax), op.abs(from_high))  # |qmax| - |high / scale|
    initial = op.where(op.less(low_error, high_error), op.neg(from_low), op.subtract(d(qmax), from_high))
    point = op.clip(op.round(initial), a_min=0.0, a_max=qmax)
    return op.cast(scale, dtype="float32"), op.cast(point, dtype="uint8")


@quantized("linear_dynamic", "linear_relu_dynamic")
def _qlinear_dynamic(ctx, node, x, packed, reduce_range=False):
    # Float in, float out: x quantized to uint8 by its own range on each
    # call, its product with the int8 weights scaled back, the float bias.
    w, bias = _unpack(packed, node.kind)
    x = _t(ctx, x)
    scale, point = dynamic_qparams(ctx, x, bool(reduce_range))
    x = op.dequantize(op.quantize(x, scale, point), scale, point)
    y = _bias(ctx, op.dense(x, _weight(ctx, w)), bias, -1)
    return op.relu(y) if "relu" in node.kind else y
