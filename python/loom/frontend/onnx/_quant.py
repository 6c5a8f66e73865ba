"""ONNX converters of quantized models (docs/low-precision.md): the QDQ
form's QuantizeLinear and DequantizeLinear become Loom's quantize and
dequantize; the QOperator form's QLinearConv and QLinearMatMul become the
same QDQ form around the float operator (the pass QDQToInteger makes both
integer kernels); ConvInteger and MatMulInteger are the integer operators
with int32 sums.  DynamicQuantizeLinear is float arithmetic."""
import numpy as np

from ... import op
from .. import numpy_matmul
from . import _axis, converter
from ._nn import conv

_QUANTIZED = ("uint8", "int8", "uint16", "int16")  # what quantize makes
_DEQUANTIZABLE = _QUANTIZED + ("int32",)  # what dequantize takes (int32: biases)


def _per_axis(ctx, v, x, dtype, axis):
    """A scale or zero point: a scalar, or a vector along `axis` of x
    reshaped to broadcast against it."""
    v = ctx.expr(v, dtype)
    shape = ctx.shape(v)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return v
    rank = ctx.rank(x)
    axis = _axis(axis, rank)
    return op.reshape(v, shape=[-1] + [1] * (rank - 1 - axis))


def _format(ctx, node, value, what, formats=_DEQUANTIZABLE):
    dtype = ctx.dtype(value)
    if dtype not in formats:
        node.unsupported(f"{what} of type {dtype}")
    return dtype


def quantize(ctx, node, x, scale, zero_point=None, axis=1):
    """QuantizeLinear: round(x / scale) + zero_point, saturated, in the zero
    point's dtype (uint8 without one)."""
    out_dtype = _format(ctx, node, zero_point, "a zero point", _QUANTIZED) if zero_point is not None else "uint8"
    if zero_point is None:
        zero_point = np.zeros((), out_dtype)
    float_type = ctx.dtype(x)
    return op.quantize(ctx.expr(x), _per_axis(ctx, scale, x, float_type, axis),
                       _per_axis(ctx, zero_point, x, out_dtype, axis))


def dequantize(ctx, node, x, scale, zero_point=None, axis=1):
    """DequantizeLinear: (x - zero_point) * scale in the scale's dtype."""
    dtype = _format(ctx, node, x, "an input")
    if zero_point is None:
        zero_point = np.zeros((), dtype)
    return op.dequantize(ctx.expr(x), _per_axis(ctx, scale, x, ctx.dtype(scale), axis),
                         _per_axis(ctx, zero_point, x, dtype, axis))


@converter("QuantizeLinear", opsets=(10, 17))
def _quantize_linear(ctx, node, x, scale, zero_point=None):
    return quantize(ctx, node, x, scale, zero_point, int(node.attr("axis", 1)))


@converter("DequantizeLinear", opsets=(10, 17))
def _dequantize_linear(ctx, node, x, scale, zero_point=None):
    return dequantize(ctx, node, x, scale, zero_point, int(node.attr("axis", 1)))


@converter("DynamicQuantizeLinear", opsets=(11, 17))
def _dynamic_quantize_linear(ctx, node, x):
    x = ctx.expr(x)
    zero = ctx.const(0, x)
    low = op.minimum(op.min(x), zero)
    high = op.maximum(op.max(x), zero)
    scale = op.divide(op.subtract(high, low), ctx.const(255, x))
    zero_point = op.cast(op.clip(op.round(op.divide(op.neg(low), scale)), a_min=0.0, a_max=255.0), dtype="uint8")
    y = op.round(op.divide(x, scale))
    y = op.add(y, op.cast(zero_point, dtype=ctx.dtype(x)))
    y = op.cast(op.clip(y, a_min=0.0, a_max=255.0), dtype="uint8")
    return y, scale, zero_point


def _product(ctx, a, b):
    """a * b for scales: NumPy's when both are known."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (a * b).astype(a.dtype)
    return op.multiply(ctx.expr(a), ctx.expr(b, ctx.dtype(a)))


@converter("QLinearConv", opsets=(10, 17))
def _qlinear_conv(ctx, node, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
                  bias=None):
    dx = dequantize(ctx, node, x, x_scale, x_zero_point)
    dw = dequantize(ctx, node, w, w_scale, w_zero_point, axis=0)
    if bias is not None:  # int32, in the scale x_scale * w_scale, zero point 0
        bias = dequantize(ctx, node, bias, _product(ctx, x_scale, w_scale), axis=0)
    return quantize(ctx, node, conv(ctx, node, dx, dw, bias), y_scale, y_zero_point)


def _per_row(ctx, v):
    """MatMulInteger's a_zero_point: a scalar, or one per row of a (its
    axis -2)."""
    return v if ctx.rank(v) == 0 or ctx.shape(v) == (1,) else _reshape(ctx, v, [-1, 1])


def _reshape(ctx, v, shape):
    return v.reshape(shape) if isinstance(v, np.ndarray) else op.reshape(v, shape=shape)


@converter("QLinearMatMul", opsets=(10, 17))
def _qlinear_matmul(ctx, node, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    # Per-row scales of a (its axis -2) and per-column scales of b (its
    # axis -1): ONNX's 1-D forms.
    da = dequantize(ctx, node, a, a_scale, a_zero_point, axis=-2)
    db = dequantize(ctx, node, b, b_scale, b_zero_point, axis=-1)
    y = numpy_matmul(ctx, da, db, ctx.dtype(da))
    return quantize(ctx, node, y, y_scale, y_zero_point, axis=-1)


def _centred(ctx, node, x, zero_point, what):
    """x - zero_point, exact: in int16 for 8-bit formats (x itself without
    a zero point)."""
    dtype = _format(ctx, node, x, what)
    if zero_point is None:
        return ctx.expr(x)
    wide = "int16" if dtype in ("uint8", "int8") else "int32"
    return op.subtract(ctx.expr(x, wide), ctx.expr(zero_point, wide))


@converter("MatMulInteger", opsets=(10, 17))
def _matmul_integer(ctx, node, a, b, a_zero_point=None, b_zero_point=None):
    if a_zero_point is not None:
        a_zero_point = _per_row(ctx, a_zero_point)
    a = _centred(ctx, node, a, a_zero_point, "A")
    b = _centred(ctx, node, b, b_zero_point, "B")
    return numpy_matmul(ctx, a, b, None, out_dtype="int32")


@converter("ConvInteger", opsets=(10, 17))
def _conv_integer(ctx, node, x, w, x_zero_point=None, w_zero_point=None):
    x = _centred(ctx, node, x, x_zero_point, "x")
    if w_zero_point is not None and ctx.rank(w_zero_point) == 1 and ctx.shape(w_zero_point)[0] > 1:
        w_zero_point = _reshape(ctx, w_zero_point, [-1] + [1] * (ctx.rank(w) - 1))  # per output channel
    w = _centred(ctx, node, w, w_zero_point, "w")
    return conv(ctx, node, x, w, out_dtype="int32")


# ---------------------------------------- ONNX Runtime's contrib operators
# (domain com.microsoft, opset 1): what its QOperator-format quantizer
# writes besides QLinearConv and QLinearMatMul.  Each is the QDQ form:
# dequantize the inputs, the float operator, quantize the result.

def _contrib(op_type):
    return converter(op_type, opsets=(1, 1), domain="com.microsoft")


def _binary(ctx, node, fn, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point):
    y = fn(dequantize(ctx, node, a, a_scale, a_zero_point), dequantize(ctx, node, b, b_scale, b_zero_point))
    return quantize(ctx, node, y, c_scale, c_zero_point)


@_contrib("QLinearAdd")
def _qlinear_add(ctx, node, *args):
    return _binary(ctx, node, op.add, *args)


@_contrib("QLinearMul")
def _qlinear_mul(ctx, node, *args):
    return _binary(ctx, node, op.multiply, *args)


def _unary(fn):
    def convert(ctx, node, x, x_scale, x_zero_point, y_scale, y_zero_point=None):
        return quantize(ctx, node, fn(ctx, node, dequantize(ctx, node, x, x_scale, x_zero_point)), y_scale,
                        y_zero_point)
    return convert


def _global_average(ctx, node, x):
    axes = [1, 2] if node.attr("channels_last", 0) else list(range(2, ctx.rank(x)))
    return op.mean(x, axis=axes, keepdims=True)


_contrib("QLinearGlobalAveragePool")(_unary(_global_average))
_contrib("QLinearSigmoid")(_unary(lambda ctx, node, x: op.sigmoid(x)))
_contrib("QLinearLeakyRelu")(_unary(lambda ctx, node, x: op.where(
    op.less(x, ctx.const(0, x)), op.multiply(x, ctx.const(float(node.attr("alpha", 0.01)), x)), x)))


@_contrib("QLinearConcat")
def _qlinear_concat(ctx, node, y_scale, y_zero_point, *triples):
    if len(triples) % 3:
        node.unsupported(f"{len(triples)} inputs after the result's scale and zero point (not triples)")
    xs = [dequantize(ctx, node, *triples[k:k + 3]) for k in range(0, len(triples), 3)]
    return quantize(ctx, node, op.concat(*xs, axis=_axis(int(node.attr("axis")), ctx.rank(xs[0]))), y_scale,
                    y_zero_point)
