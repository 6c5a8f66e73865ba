"""ONNX converters: QuantizeLinear, DequantizeLinear and
DynamicQuantizeLinear as float arithmetic (round half to even, saturate,
cast).  Integer kernels for quantized models are a separate step
(docs/frontends.md)."""
from ... import op
from . import _axis, converter

_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
           "int32": (-2 ** 31, 2 ** 31 - 1)}


def _per_axis(ctx, node, v, x, dtype):
    """A scale or zero point: a scalar, or a vector along `axis` reshaped to
    broadcast against x."""
    v = ctx.expr(v, dtype)
    shape = ctx.shape(v)
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return v
    rank = ctx.rank(x)
    axis = _axis(int(node.attr("axis", 1)), rank)
    return op.reshape(v, shape=[-1] + [1] * (rank - 1 - axis))


def _quantize(ctx, node, x, scale, zero_point, out_dtype):
    float_type = ctx.dtype(x)
    low, high = _RANGES[out_dtype]
    y = op.round(op.divide(ctx.expr(x), _per_axis(ctx, node, scale, x, float_type)))
    if zero_point is not None:
        y = op.add(y, op.cast(_per_axis(ctx, node, zero_point, x, out_dtype), dtype=float_type))
    return op.cast(op.clip(y, a_min=float(low), a_max=float(high)), dtype=out_dtype)


@converter("QuantizeLinear", opsets=(10, 17))
def _quantize_linear(ctx, node, x, scale, zero_point=None):
    out_dtype = ctx.dtype(zero_point) if zero_point is not None else "uint8"
    if out_dtype not in _RANGES:
        node.unsupported(f"a zero point of type {out_dtype}")
    return _quantize(ctx, node, x, scale, zero_point, out_dtype)


@converter("DequantizeLinear", opsets=(10, 17))
def _dequantize_linear(ctx, node, x, scale, zero_point=None):
    float_type = ctx.dtype(scale)
    y = op.cast(ctx.expr(x), dtype=float_type)
    if zero_point is not None:
        y = op.subtract(y, op.cast(_per_axis(ctx, node, zero_point, x, ctx.dtype(zero_point)), dtype=float_type))
    return op.multiply(y, _per_axis(ctx, node, scale, x, float_type))


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
