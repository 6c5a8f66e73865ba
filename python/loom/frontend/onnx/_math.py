"""ONNX converters: elementwise operators (math, activations, comparisons,
logic, bit operations), Cast and Clip."""
import math

import numpy as np

from ... import op, tir
from .. import common
from . import FoldDeclined, _dtype, _is_symbolic, converter

# ------------------------------------------------------------------ unary


def _erf(x):
    return np.vectorize(math.erf)(x).astype(x.dtype)


def _unary(op_type, loom_op, numpy_fn, opsets=(1, 17)):
    converter(op_type, opsets=opsets, fold=lambda node, x: np.asarray(numpy_fn(x)).astype(x.dtype))(
        lambda ctx, node, x: getattr(op, loom_op)(ctx.expr(x)))


for _name, _fn in [("Exp", np.exp), ("Log", np.log), ("Sqrt", np.sqrt), ("Tanh", np.tanh), ("Sin", np.sin),
                   ("Cos", np.cos), ("Tan", np.tan), ("Asin", np.arcsin), ("Acos", np.arccos), ("Atan", np.arctan),
                   ("Sinh", np.sinh), ("Cosh", np.cosh), ("Asinh", np.arcsinh), ("Acosh", np.arccosh),
                   ("Atanh", np.arctanh), ("Floor", np.floor), ("Ceil", np.ceil), ("Round", np.round),
                   ("Abs", np.abs), ("Neg", np.negative), ("Sign", np.sign)]:
    _unary(_name, _name.lower(), _fn)
_unary("Relu", "relu", lambda x: np.maximum(x, 0))
_unary("Sigmoid", "sigmoid", lambda x: 1 / (1 + np.exp(-x)))
_unary("Erf", "erf", _erf)
_unary("Not", "logical_not", np.logical_not)
_unary("IsNaN", "isnan", np.isnan)


@converter("Reciprocal", fold=lambda node, x: (1 / x).astype(x.dtype))
def _reciprocal(ctx, node, x):
    return op.divide(ctx.const(1, x), x)


@converter("IsInf")
def _isinf(ctx, node, x):
    negative, positive = node.attr("detect_negative", 1), node.attr("detect_positive", 1)
    inf = op.isinf(x)
    if negative and positive:
        return inf
    if not negative and not positive:
        return op.logical_and(inf, op.logical_not(inf))
    zero = ctx.const(0, x)
    return op.logical_and(inf, op.greater(x, zero) if positive else op.less(x, zero))


# ------------------------------------------------------------ activations

def _f(node, name, default):
    return float(node.attr(name, default))


@converter("Elu")
def _elu(ctx, node, x):
    alpha = _f(node, "alpha", 1.0)
    neg = op.multiply(ctx.const(alpha, x), op.subtract(op.exp(x), ctx.const(1, x)))
    return op.where(op.less(x, ctx.const(0, x)), neg, x)


@converter("Celu")
def _celu(ctx, node, x):
    alpha = _f(node, "alpha", 1.0)
    neg = op.multiply(ctx.const(alpha, x), op.subtract(op.exp(op.divide(x, ctx.const(alpha, x))), ctx.const(1, x)))
    return op.add(op.relu(x), op.minimum(ctx.const(0, x), neg))


@converter("Selu")
def _selu(ctx, node, x):
    alpha, gamma = _f(node, "alpha", 1.67326319217681884765625), _f(node, "gamma", 1.05070102214813232421875)
    neg = op.subtract(op.multiply(ctx.const(alpha, x), op.exp(x)), ctx.const(alpha, x))
    return op.multiply(ctx.const(gamma, x), op.where(op.greater(x, ctx.const(0, x)), x, neg))


@converter("LeakyRelu")
def _leaky_relu(ctx, node, x):
    alpha = _f(node, "alpha", 0.01)
    return op.where(op.less(x, ctx.const(0, x)), op.multiply(x, ctx.const(alpha, x)), x)


@converter("PRelu")
def _prelu(ctx, node, x, slope):
    slope = ctx.expr(slope, ctx.dtype(x))
    return op.where(op.less(x, ctx.const(0, x)), op.multiply(x, slope), x)


@converter("ThresholdedRelu")
def _thresholded_relu(ctx, node, x):
    return op.where(op.greater(x, ctx.const(_f(node, "alpha", 1.0), x)), x, ctx.const(0, x))


@converter("HardSigmoid")
def _hard_sigmoid(ctx, node, x):
    alpha, beta = _f(node, "alpha", 0.2), _f(node, "beta", 0.5)
    return op.clip(op.add(op.multiply(x, ctx.const(alpha, x)), ctx.const(beta, x)), a_min=0.0, a_max=1.0)


@converter("HardSwish")
def _hard_swish(ctx, node, x):
    gate = op.clip(op.add(op.multiply(x, ctx.const(1 / 6, x)), ctx.const(0.5, x)), a_min=0.0, a_max=1.0)
    return op.multiply(x, gate)


@converter("Softplus")
def _softplus(ctx, node, x):
    return op.log(op.add(op.exp(x), ctx.const(1, x)))


@converter("Softsign")
def _softsign(ctx, node, x):
    return op.divide(x, op.add(op.abs(x), ctx.const(1, x)))


@converter("Shrink")
def _shrink(ctx, node, x):
    bias, lambd = _f(node, "bias", 0.0), _f(node, "lambd", 0.5)
    low = op.less(x, ctx.const(-lambd, x))
    high = op.greater(x, ctx.const(lambd, x))
    return op.where(low, op.add(x, ctx.const(bias, x)),
                    op.where(high, op.subtract(x, ctx.const(bias, x)), ctx.const(0, x)))


# ----------------------------------------------------------------- binary

def _like(ctx, a, b):
    """The dtype of the operands: the first run-time value's, else the
    first's."""
    for v in (a, b):
        if v is not None and not isinstance(v, np.ndarray):
            return ctx.dtype(v)
    return str(np.asarray(a).dtype)


def _binary(op_type, loom_op, numpy_fn):
    def convert(ctx, node, a, b):
        dtype = _like(ctx, a, b)
        return getattr(op, loom_op)(*common.broadcastable(ctx, [ctx.expr(a, dtype), ctx.expr(b, dtype)]))
    converter(op_type, fold=lambda node, a, b: np.asarray(numpy_fn(a, b)).astype(np.result_type(a, b)))(convert)


def _divide(a, b):
    if _is_symbolic(a) or _is_symbolic(b):
        return np.floor_divide(a, b)  # shape arithmetic: non-negative
    if np.issubdtype(np.result_type(a, b), np.integer):  # ONNX truncates
        with np.errstate(divide="ignore"):
            q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
        return np.where(b == 0, 0, q * np.sign(a) * np.sign(b))
    return np.divide(a, b)


_binary("Add", "add", np.add)
_binary("Sub", "subtract", np.subtract)
_binary("Mul", "multiply", np.multiply)
_binary("Div", "divide", _divide)


def _variadic(op_type, loom_op, numpy_fn, mean=False):
    """Max, Min, Sum, Mean: any number of operands, broadcasting."""
    def fold(node, *xs):
        symbolic = any(_is_symbolic(x) for x in xs)  # Min and Max of shapes (k = min(K, %count))
        fn = np.frompyfunc(getattr(tir, loom_op[:3]), 2, 1) if symbolic else numpy_fn
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        if symbolic:
            return np.asarray(out, dtype=object)
        return (out / len(xs)).astype(xs[0].dtype) if mean else np.asarray(out).astype(xs[0].dtype)

    def convert(ctx, node, *xs):
        dtype = _like(ctx, xs[0], xs[1] if len(xs) > 1 else None)
        operands = common.broadcastable(ctx, [ctx.expr(x, dtype) for x in xs])
        out = operands[0]
        for x in operands[1:]:
            out = getattr(op, loom_op)(out, x)
        if mean:
            out = op.divide(out, ctx.expr(np.asarray(len(xs), dtype=dtype)))
        return out
    converter(op_type, fold=fold)(convert)


_variadic("Max", "maximum", np.maximum)
_variadic("Min", "minimum", np.minimum)
_variadic("Sum", "add", np.add)
_variadic("Mean", "add", np.add, mean=True)


def _pow_fold(node, a, b):
    return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


@converter("Pow", fold=_pow_fold)
def _pow(ctx, node, a, b):
    dtype = ctx.dtype(a)
    if isinstance(b, np.ndarray) and b.size == 1 and float(b.reshape(-1)[0]) == 2.0:
        return op.multiply(ctx.expr(a), ctx.expr(a))  # x ** 2: exact and cheaper
    if dtype.startswith("float"):
        return op.power(ctx.expr(a), ctx.expr(b, dtype))
    # Integer bases: computed in float64 (exact for the values integers
    # raised to integer powers take before they overflow), cast back.
    return op.cast(op.power(ctx.expr(a, "float64"), ctx.expr(b, "float64")), dtype=dtype)


def _mod_fold(node, a, b):
    if node.attr("fmod", 0):
        return np.fmod(a, b).astype(a.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b))).astype(a.dtype)


@converter("Mod", fold=_mod_fold)
def _mod(ctx, node, a, b):
    dtype = _like(ctx, a, b)
    if node.attr("fmod", 0):
        return op.trunc_mod(ctx.expr(a, dtype), ctx.expr(b, dtype))
    if dtype.startswith("float"):
        node.unsupported("fmod=0 on floats (the ONNX specification requires fmod=1 there)")
    return op.floor_mod(ctx.expr(a, dtype), ctx.expr(b, dtype))


@converter("BitShift")
def _bit_shift(ctx, node, a, b):
    dtype = _like(ctx, a, b)
    direction = node.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        node.unsupported(f"direction={direction!r}")
    shift = op.left_shift if direction == "LEFT" else op.right_shift
    return shift(ctx.expr(a, dtype), ctx.expr(b, dtype))


def _logic(op_type, loom_op, numpy_fn):
    converter(op_type, fold=lambda node, a, b: numpy_fn(a, b))(
        lambda ctx, node, a, b: getattr(op, loom_op)(*common.broadcastable(ctx, [ctx.expr(a, "bool"),
                                                                               ctx.expr(b, "bool")])))


_logic("And", "logical_and", np.logical_and)
_logic("Or", "logical_or", np.logical_or)
_logic("Xor", "logical_xor", np.logical_xor)


def _compare(op_type, loom_op, numpy_fn):
    def convert(ctx, node, a, b):
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and op_type == "Equal":
            return _symbolic_equal(node, a, b)
        dtype = _like(ctx, a, b)
        return getattr(op, loom_op)(*common.broadcastable(ctx, [ctx.expr(a, dtype), ctx.expr(b, dtype)]))
    converter(op_type, fold=lambda node, a, b: numpy_fn(a, b))(convert)


def _symbolic_equal(node, a, b):
    """Equal over a symbolic shape (what exporters write for expand(n, -1)):
    a dimension is never negative, and equals the same expression."""
    def same(x, y):
        ints = isinstance(x, (int, np.integer)), isinstance(y, (int, np.integer))
        if all(ints):
            return x == y
        if ints[0] or ints[1]:
            number = x if ints[0] else y
            if number < 0:
                return False
            node.unsupported(f"comparing a symbolic dimension with {number}")
        if str(tir.simplify(x)) != str(tir.simplify(y)):
            node.unsupported(f"comparing the symbolic dimensions {x} and {y}")
        return True
    a, b = np.broadcast_arrays(a, b)
    return np.array([same(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1))], dtype=bool).reshape(a.shape)


for _name, _loom, _fn in [("Equal", "equal", np.equal), ("Less", "less", np.less),
                          ("Greater", "greater", np.greater), ("LessOrEqual", "less_equal", np.less_equal),
                          ("GreaterOrEqual", "greater_equal", np.greater_equal)]:
    _compare(_name, _loom, _fn)


@converter("Where", fold=lambda node, c, x, y: np.where(c, x, y))
def _where(ctx, node, c, x, y):
    dtype = _like(ctx, x, y)
    return op.where(*common.broadcastable(ctx, [ctx.expr(c, "bool"), ctx.expr(x, dtype), ctx.expr(y, dtype)]))


@converter("Clip")
def _clip(ctx, node, x, low=None, high=None):
    dtype = ctx.dtype(x)
    if node.opset < 11:
        low, high = node.attr("min"), node.attr("max")
    if (low is None or isinstance(low, (float, np.ndarray))) and (high is None or isinstance(high, (float, np.ndarray))):
        lo = None if low is None else float(np.asarray(low).reshape(-1)[0])
        hi = None if high is None else float(np.asarray(high).reshape(-1)[0])
        if lo is not None and hi is not None and lo > hi:  # ONNX: everything becomes max
            return op.broadcast_to(ctx.const(hi, x), shape=ctx.static_shape(node, x))
        if dtype.startswith("float"):
            big = float(np.finfo(dtype).max)
        else:
            info = np.iinfo(dtype) if dtype != "bool" else None
            big = float(info.max) if info else 1.0
        small = -big if dtype.startswith(("float", "int")) else 0.0
        return op.clip(x, a_min=small if lo is None else lo, a_max=big if hi is None else hi)
    # Bounds computed at run time: the same as max(min(x, high), low).
    y = x
    if low is not None:
        y = op.maximum(y, ctx.expr(low, dtype))
    if high is not None:
        y = op.minimum(y, ctx.expr(high, dtype))
    return y


# ------------------------------------------------------------------- cast

def _cast_fold(node, x):
    dtype = _dtype(node.attr("to"), f"Cast '{node.name}'")
    if _is_symbolic(x):
        if not dtype.startswith(("int", "uint")):
            raise FoldDeclined  # a float of a shape: computed at run time (shape_of)
        return x
    return x.astype(dtype)


@converter("Cast", fold=_cast_fold)
def _cast(ctx, node, x):
    return op.cast(ctx.expr(x), dtype=_dtype(node.attr("to"), f"Cast '{node.name}'"))


@converter("CastLike", fold=lambda node, x, like: x.astype(like.dtype))
def _cast_like(ctx, node, x, like):
    dtype = ctx.dtype(like)
    return ctx.expr(x, dtype) if isinstance(x, np.ndarray) else op.cast(x, dtype=dtype)


@converter("Identity", fold=lambda node, x: x)
def _identity(ctx, node, x):
    return x



@converter("Det", opsets=(11, 17), fold=lambda node, x: np.asarray(np.linalg.det(x)).astype(x.dtype))
def _det(ctx, node, x):
    return common.determinant(ctx.expr(x), list(ctx.shape(x)), ctx.dtype(x))
