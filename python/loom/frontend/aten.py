"""Converters of PyTorch's aten operators (docs/frontends.md, "aten
converters"), shared by the two importers that see them: `from_fx`'s
aten path (a module traced by `make_fx` with example inputs: every
operator PyTorch runs, post-autograd, functionalized) and
`from_torchscript` (a scripted or traced graph's `aten::` nodes).

One converter per operator name (without the overload: `aten::add` for
`aten.add.Tensor` and `aten.add.Scalar`), registered with `@aten(name,
...)`.  It receives the context, the node and the operator's arguments in
its schema's order: tensors as graph expressions (weights and other
constants as NumPy arrays), everything else as Python values (ints,
floats, lists, None, a dtype as torch.dtype or its ScalarType number).
It returns a value, or a tuple for an operator with several results.  A
converter that cannot take the arguments it got raises `Unsupported` (a
TorchScript node then stays TorchScript; an FX graph is refused naming
the node); `accepts(args)` tells beforehand, from the constant
arguments, for the TorchScript importer's partition.
"""
import math

import numpy as np

from .. import _core, graph, op, tir
from . import Registry, numpy_matmul
from .common import (conv3d, conv_transpose3d, determinant, max_pool2d_indices, non_max_suppression, nonzero, pool3d,
                     roi_align, unique, window_tap)

REGISTRY = Registry("PyTorch (aten)")
_ACCEPTS = {}
_PARTIAL = {}  # kind -> the result indices its converter cannot give (None there)


class Unsupported(Exception):
    """A converter does not take these arguments (the message says what)."""


class Node:
    """An aten operator's call as a converter sees it: `kind`
    ("aten::convolution"), `name` (the node's, for messages)."""

    def __init__(self, kind, name):
        self.kind, self.name, self.module, self.path, self.kwargs = kind, name, None, None, {}

    def unsupported(self, what):
        raise Unsupported(what)


def aten(*names, accepts=None, partial=()):
    """Registers the decorated function as the converter of each aten
    operator name ("conv2d" stands for aten::conv2d; a name with its own
    namespace, "torchvision::nms", stands for itself).  `partial` lists the
    results it cannot give (None in its tuple): a node whose such result
    is read is not converted."""
    def register(fn):
        for name in names:
            key = name if "::" in name else f"aten::{name}"
            REGISTRY.register(key, fn, (0, 0))
            if accepts is not None:
                _ACCEPTS[key] = accepts
            if partial:
                _PARTIAL[key] = set(partial)
        return fn
    return register


class Complex:
    """A complex tensor as the PyTorch importers carry it (Loom has no
    complex dtype): `parts`, a float tensor of its shape followed by an axis
    of 2 (real, imaginary; ONNX's layout).  aten_complex makes and takes
    them."""

    def __init__(self, parts):
        self.parts = parts


_COMPLEX = {}  # kind -> its converter when an argument is complex (aten_complex)


def complex_converter(*names):
    """Registers the decorated function as the converter of each aten
    operator name when one of its arguments is complex (Complex)."""
    def register(fn):
        for name in names:
            _COMPLEX[name if "::" in name else f"aten::{name}"] = fn
        return fn
    return register


def takes_complex(kind):
    """Whether the operator `kind` has a converter for complex arguments."""
    return kind in _COMPLEX


def complex_operators():
    """The operators with a converter for complex arguments, sorted."""
    return sorted(_COMPLEX)


def takes_real(kind):
    """Whether the operator `kind` has a converter for real arguments."""
    return REGISTRY.find(kind, 0) is not None


def _complex_arg(args, kwargs):
    return any(isinstance(a, Complex) for a in list(args) + list(kwargs.values()))


def missing_results(kind):
    """The result indices the converter of `kind` does not give."""
    return _PARTIAL.get(kind, set())


def find(kind):
    """The converter of `kind` ("aten::relu"), or None; given a complex
    argument, its complex one (aten_complex), or Unsupported naming it."""
    found = REGISTRY.find(kind, 0)
    real, complex_ = (found[0] if found else None), _COMPLEX.get(kind)
    if real is None and complex_ is None:
        return None

    def convert(ctx, node, *args, **kwargs):
        if not _complex_arg(args, kwargs):
            if real is None:
                raise Unsupported(f"{kind} of real tensors")
            return real(ctx, node, *args, **kwargs)
        if complex_ is None:
            raise Unsupported("a complex tensor as its argument (Loom carries complex values through " +
                              ", ".join(sorted(k.split("::")[1] for k in _COMPLEX)) +
                              " only; docs/frontends.md, \"Complex values in PyTorch models\")")
        return complex_(ctx, node, *args, **kwargs)
    return convert


def accepts(kind, args):
    """Whether the converter takes these arguments (None for tensors)."""
    check = _ACCEPTS.get(kind)
    return check is None or bool(check(args))


def supported_operators():
    return [name for name, _, _ in REGISTRY.operators()]


# ------------------------------------------------------------- helpers

_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                 7: "float64", 11: "bool", 15: "bfloat16"}


def tensor_dtype(tensor, what):
    """Loom's dtype name of a torch tensor; a TypeError naming `what` for
    one Loom has no type for (complex, quantized)."""
    try:
        return dtype_name(tensor.dtype)
    except Unsupported:
        raise _core.TypeError(f"{what} is a {str(tensor.dtype).replace('torch.', '')} tensor, which Loom has no "
                              "types for (complex: pass torch.view_as_real's parts)") from None


def input_var(name, tensor, what, shape=None):
    """A graph variable typed like the example tensor (dtype checked), with
    `shape` (symbolic dimensions) when given."""
    return graph.Var(name, shape=tuple(tensor.shape if shape is None else shape), dtype=tensor_dtype(tensor, what))


def dtype_name(dtype):
    """A torch.dtype or a ScalarType number as Loom's dtype name."""
    if dtype is None:
        return None
    if isinstance(dtype, int):
        if dtype not in _SCALAR_TYPES:
            raise Unsupported(f"the ScalarType {dtype}")
        return _SCALAR_TYPES[dtype]
    name = str(dtype).replace("torch.", "")
    if name.startswith("complex") or name in ("cfloat", "cdouble", "chalf") or name.startswith(("qint", "quint")):
        raise Unsupported(f"tensors of {name}")
    return {"half": "float16", "float": "float32", "double": "float64", "long": "int64", "int": "int32"}.get(name, name)


def _t(ctx, v, like=None):
    """A tensor argument as an expression; a Python number as a constant of
    `like`'s dtype (or float32 / int64)."""
    if isinstance(v, Complex):  # (in a list: find() did not see it)
        raise Unsupported("a complex tensor among its arguments (docs/frontends.md, \"Complex values in PyTorch "
                          "models\")")
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.ndarray):
        if like is not None:
            return ctx.expr(np.asarray(v, dtype=ctx.dtype(like)))
        return ctx.expr(np.asarray(v, dtype=np.float32 if isinstance(v, float) else np.int64))
    return ctx.expr(v)


def _pair(v, n=2):
    if isinstance(v, (int, np.integer)):
        return [int(v)] * n
    v = [int(x) for x in v]
    return v * n if len(v) == 1 else v


def _axis(d, rank):
    return d + rank if d < 0 else d


def _binary(ctx, a, b, fn):
    """fn on two operands, numbers taking the tensor's dtype (a tensor's
    own dtype wins; PyTorch's promotion of an int tensor with a float
    number is to float32)."""
    ta, tb = not isinstance(a, (bool, int, float)), not isinstance(b, (bool, int, float))
    if ta and tb:
        a, b = _t(ctx, a), _t(ctx, b)
        da, db = ctx.dtype(a), ctx.dtype(b)
        if da != db:
            wide = _result_type(da, ctx.rank(a), db, ctx.rank(b))
            a, b = ctx.expr(a, wide), ctx.expr(b, wide)
        return fn(a, b)
    tensor = _t(ctx, a if ta else b)
    number = b if ta else a
    dtype = ctx.dtype(tensor)
    if isinstance(number, float) and not dtype.startswith("float"):
        tensor = op.cast(tensor, dtype="float32")
    other = _t(ctx, number, tensor)
    return fn(tensor, other) if ta else fn(other, tensor)


def _category(dtype):
    return 2 if dtype.startswith("float") else 0 if dtype == "bool" else 1


def _promote(da, db):
    """torch.promote_types: across categories (bool, integer, float) the
    higher one's type (int64 with float32 is float32, not NumPy's float64);
    within one, the wider."""
    if _category(da) != _category(db):
        return da if _category(da) > _category(db) else db
    return str(np.promote_types(da, db))


def _result_type(da, rank_a, db, rank_b):
    """PyTorch's promotion of two tensors: a 0-d tensor does not widen a
    dimensioned one of its category or a higher one (float32 + a 0-d
    float64 is float32)."""
    if (rank_a == 0) != (rank_b == 0):
        dimensioned, scalar = (da, db) if rank_b == 0 else (db, da)
        if _category(dimensioned) >= _category(scalar):
            return dimensioned
    return _promote(da, db)


def _scaled(ctx, v, alpha):
    return v if alpha in (None, 1) else _binary(ctx, v, alpha, op.multiply)


# ------------------------------------------------------------ elementwise

for _name in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "floor", "ceil", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "sign", "trunc"):
    aten(_name, _name + "_")((lambda f: lambda ctx, node, x, *rest: f(_t(ctx, x)))(getattr(op, _name)))


@aten("log10", "log10_", "log2", "log2_")
def _log_base(ctx, node, x):
    """log(x) / log(base): torchaudio's amplitude_to_DB (MFCC) takes log10."""
    x = _t(ctx, x)
    base = 10.0 if "log10" in node.kind else 2.0
    return op.multiply(op.log(x), ctx.const(1.0 / math.log(base), x))


@aten("round", "round_")
def _round(ctx, node, x, decimals=0):
    x = _t(ctx, x)
    if not decimals:
        return op.round(x)
    scale = ctx.const(10.0 ** decimals, x)
    return op.divide(op.round(op.multiply(x, scale)), scale)


@aten("silu", "silu_")
def _silu(ctx, node, x):
    return op.silu(_t(ctx, x))


@aten("gelu", "gelu_")
def _gelu(ctx, node, x, approximate="none"):
    x = _t(ctx, x)
    if approximate in (None, "none"):
        return op.gelu(x)
    # tanh approximation: x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    c = math.sqrt(2 / math.pi)
    inner = op.multiply(ctx.const(c, x), op.add(x, op.multiply(ctx.const(0.044715, x), op.multiply(x, op.multiply(x, x)))))
    return op.multiply(op.multiply(ctx.const(0.5, x), x), op.add(ctx.const(1, x), op.tanh(inner)))


@aten("hardtanh", "hardtanh_")
def _hardtanh(ctx, node, x, low=-1.0, high=1.0):
    return _clamp(ctx, node, x, low, high)


@aten("relu6", "relu6_")
def _relu6(ctx, node, x):
    return op.clip(_t(ctx, x), a_min=0.0, a_max=6.0)


@aten("hardsigmoid", "hardsigmoid_")
def _hardsigmoid(ctx, node, x):
    x = _t(ctx, x)
    return op.clip(op.add(op.multiply(x, ctx.const(1 / 6, x)), ctx.const(0.5, x)), a_min=0.0, a_max=1.0)


@aten("hardswish", "hardswish_")
def _hardswish(ctx, node, x):
    x = _t(ctx, x)
    return op.multiply(x, _hardsigmoid(ctx, node, x))


@aten("leaky_relu", "leaky_relu_")
def _leaky_relu(ctx, node, x, slope=0.01):
    x = _t(ctx, x)
    return op.where(op.less(x, ctx.const(0, x)), op.multiply(x, ctx.const(slope, x)), x)


@aten("elu", "elu_")
def _elu(ctx, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    x = _t(ctx, x)
    neg = op.multiply(ctx.const(alpha, x), op.subtract(op.exp(op.multiply(x, ctx.const(input_scale, x))), ctx.const(1, x)))
    return op.multiply(ctx.const(scale, x), op.where(op.less(x, ctx.const(0, x)), neg, x))


@aten("softplus")
def _softplus(ctx, node, x, beta=1, threshold=20):
    x = _t(ctx, x)
    bx = op.multiply(x, ctx.const(beta, x))
    soft = op.divide(op.log(op.add(op.exp(bx), ctx.const(1, x))), ctx.const(beta, x))
    return op.where(op.greater(bx, ctx.const(threshold, x)), x, soft)


@aten("clamp", "clamp_", "clip", "clip_")
def _clamp(ctx, node, x, low=None, high=None):
    x = _t(ctx, x)
    if isinstance(low, (int, float, type(None))) and isinstance(high, (int, float, type(None))):
        big = 3.4e38
        if low is not None and high is not None and low > high:  # PyTorch: everything becomes max
            return op.broadcast_to(ctx.const(high, x), shape=list(ctx.shape(x)))
        return op.clip(x, a_min=-big if low is None else float(low), a_max=big if high is None else float(high))
    if low is not None:
        x = _binary(ctx, x, low, op.maximum)
    if high is not None:
        x = _binary(ctx, x, high, op.minimum)
    return x


@aten("clamp_min", "clamp_min_")
def _clamp_min(ctx, node, x, low):
    return _clamp(ctx, node, x, low, None)


@aten("clamp_max", "clamp_max_")
def _clamp_max(ctx, node, x, high):
    return _clamp(ctx, node, x, None, high)


@aten("add", "add_")
def _add(ctx, node, a, b, alpha=1):
    return _binary(ctx, a, _scaled(ctx, b, alpha) if not isinstance(b, (int, float)) else b * alpha, op.add)


@aten("sub", "sub_", "subtract")
def _sub(ctx, node, a, b, alpha=1):
    return _binary(ctx, a, _scaled(ctx, b, alpha) if not isinstance(b, (int, float)) else b * alpha, op.subtract)


@aten("rsub")
def _rsub(ctx, node, a, b, alpha=1):
    return _sub(ctx, node, b, a, alpha)


@aten("mul", "mul_", "multiply")
def _mul(ctx, node, a, b):
    return _binary(ctx, a, b, op.multiply)


@aten("div", "div_", "divide", "true_divide")
def _div(ctx, node, a, b, rounding_mode=None):
    def divide(x, y):
        if rounding_mode is None and not ctx.dtype(x).startswith("float"):
            x, y = op.cast(x, dtype="float32"), op.cast(y, dtype="float32")  # true division
        if rounding_mode == "floor":
            return op.floor_divide(x, y)
        q = op.divide(x, y)
        return op.trunc(q) if rounding_mode == "trunc" and ctx.dtype(q).startswith("float") else q
    return _binary(ctx, a, b, divide)


@aten("floor_divide")
def _floor_divide(ctx, node, a, b):
    return _binary(ctx, a, b, op.floor_divide)


@aten("remainder")
def _remainder(ctx, node, a, b):
    return _binary(ctx, a, b, op.floor_mod)


@aten("fmod")
def _fmod(ctx, node, a, b):
    return _binary(ctx, a, b, op.trunc_mod)


@aten("pow")
def _pow(ctx, node, a, b):
    if isinstance(b, (int, float)) and b == 2:
        x = _t(ctx, a)
        return op.multiply(x, x)
    return _binary(ctx, a, b, lambda x, y: op.power(x, y) if ctx.dtype(x).startswith("float") else
                   op.cast(op.power(op.cast(x, dtype="float64"), op.cast(y, dtype="float64")), dtype=ctx.dtype(x)))


@aten("reciprocal")
def _reciprocal(ctx, node, x):
    x = _t(ctx, x)
    return op.divide(ctx.const(1, x), x)


@aten("maximum", "max_other")
def _maximum(ctx, node, a, b):
    return _binary(ctx, a, b, op.maximum)


@aten("minimum", "min_other")
def _minimum(ctx, node, a, b):
    return _binary(ctx, a, b, op.minimum)


for _name, _loom in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                     ("ge", "greater_equal")):
    aten(_name)((lambda f: lambda ctx, node, a, b: _binary(ctx, a, b, f))(getattr(op, _loom)))
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    aten(_name, _name + "_")((lambda f: lambda ctx, node, a, b: _binary(ctx, a, b, f))(getattr(op, _name)))


def _truth(ctx, v):
    """A tensor as bool (nonzero), as PyTorch's logical operators take it."""
    v = _t(ctx, v)
    return v if ctx.dtype(v) == "bool" else op.not_equal(v, ctx.const(0, v))


for _name in ("logical_and", "logical_or", "logical_xor"):
    aten(_name, _name + "_")((lambda f: lambda ctx, node, a, b: f(_truth(ctx, a), _truth(ctx, b)))(getattr(op, _name)))


@aten("logical_not", "logical_not_")
def _logical_not(ctx, node, x):
    return op.logical_not(_truth(ctx, x))


@aten("where")
def _where(ctx, node, cond, a, b):
    cond = _t(ctx, cond)
    return _binary(ctx, a, b, lambda x, y: op.where(cond, x, y))


@aten("masked_fill", "masked_fill_")
def _masked_fill(ctx, node, x, mask, value):
    x = _t(ctx, x)
    return op.where(_t(ctx, mask), _t(ctx, value, x) if isinstance(value, (int, float, bool)) else
                    ctx.expr(_t(ctx, value), ctx.dtype(x)), x)


# ------------------------------------------------------ type conversions

@aten("to", "_to_copy", "type_as")
def _to(ctx, node, x, *args, dtype=None, **kwargs):
    x = _t(ctx, x)
    if node.kind == "aten::type_as":
        return ctx.expr(x, ctx.dtype(_t(ctx, args[0])))
    target = dtype
    for a in args:  # to(dtype), to(device, dtype), to(other): the dtype among them
        if target is None and (isinstance(a, int) and not isinstance(a, bool) or "dtype" in type(a).__name__):
            target = a
    name = dtype_name(target)
    return x if name is None or name == ctx.dtype(x) else op.cast(x, dtype=name)


for _name, _dtype in (("float", "float32"), ("double", "float64"), ("long", "int64"), ("int", "int32"),
                      ("bool", "bool"), ("half", "float16")):
    aten(_name)((lambda d: lambda ctx, node, x, *rest: ctx.expr(_t(ctx, x), d))(_dtype))


for _name in ("detach", "detach_", "clone", "contiguous", "alias", "lift_fresh", "lift_fresh_copy", "dropout",
              "dropout_", "feature_dropout", "alpha_dropout", "lift", "_assert_async"):
    aten(_name)(lambda ctx, node, x, *rest, **kwargs: x if not isinstance(x, (int, float)) else _t(ctx, x))


@aten("native_dropout")
def _native_dropout(ctx, node, x, p, train):
    if train:
        raise Unsupported("dropout in training mode")
    return x, op.broadcast_to(ctx.expr(np.ones((), dtype=bool)), shape=list(ctx.shape(_t(ctx, x))))


# ------------------------------------------------ convolution and pooling

def _conv(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    x, w = _t(ctx, x), ctx.expr(_t(ctx, w), ctx.dtype(_t(ctx, x)))
    rank = ctx.rank(x) - 2
    if rank not in (1, 2, 3):
        raise Unsupported(f"a {rank}-D {'transposed ' if transposed else ''}convolution")
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * rank
        else:  # "same" (stride 1): pads split as ONNX's SAME_UPPER
            kernel = ctx.shape(w)[2:]
            total = [(k - 1) * d for k, d in zip(kernel, _pair(dilation, rank))]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
            padding = pads
    stride, dilation = _pair(stride, rank), _pair(dilation, rank)
    padding = [int(p) for p in padding] if not isinstance(padding, int) else [padding] * rank
    if len(padding) == rank:
        padding = padding + padding
    out_pad = _pair(output_padding or 0, rank)
    squeeze = rank == 1
    if rank == 3 and transposed:
        y = conv_transpose3d(ctx, x, w, stride, padding, out_pad, dilation, int(groups))
    elif rank == 3:
        y = conv3d(ctx, x, w, stride, padding, dilation, int(groups))
    else:
        if squeeze:
            n, c, length = ctx.shape(x)
            x = op.reshape(x, shape=[n if isinstance(n, int) else -1, c, 1, length])
            wshape = ctx.shape(w)
            w = op.reshape(w, shape=[wshape[0], wshape[1], 1, wshape[2]])
            stride, dilation, out_pad = [1] + stride, [1] + dilation, [0] + out_pad
            padding = [0, padding[0], 0, padding[1]]
        if transposed:
            y = op.conv2d_transpose(x, w, strides=stride, padding=padding, dilation=dilation, output_padding=out_pad,
                                    groups=int(groups))
        else:
            y = op.conv2d(x, w, strides=stride, padding=padding, dilation=dilation, groups=int(groups))
    if bias is not None:
        ones = [1] * max(rank, 2)  # over the result's spatial axes (a 1-D one's are 2-D here)
        b = bias.reshape(-1, *ones) if isinstance(bias, np.ndarray) else op.reshape(_t(ctx, bias), shape=[-1] + ones)
        y = op.add(y, ctx.expr(b, ctx.dtype(y)))
    if squeeze:
        n, c, _, length = ctx.shape(y)
        y = op.reshape(y, shape=[n if isinstance(n, int) else -1, c, length])
    return y


@aten("convolution", "_convolution", accepts=lambda a: a[1] is not None)
def _convolution(ctx, node, x, w, bias, stride, padding, dilation, transposed, output_padding, groups, *rest):
    return _conv(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding, groups)


@aten("conv1d", "conv2d", "conv3d")
def _conv_nd(ctx, node, x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(ctx, x, w, bias, stride, padding, dilation, False, 0, groups)


@aten("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(ctx, node, x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv(ctx, x, w, bias, stride, padding, dilation, True, output_padding, groups)


def _pool(ctx, node, loom_pool, x, kernel, stride, padding, dilation, ceil_mode, **extra):
    """A 2-D pool, or a 3-D one (`node` is max_pool3d's or avg_pool3d's)
    as common.pool3d composes it; the input batched or not."""
    n = 3 if "3d" in node.kind else 2
    x = _t(ctx, x)
    kernel = _pair(kernel, n)
    stride = _pair(stride, n) if stride not in (None, []) else kernel
    padding, dilation = _pair(padding, n), _pair(dilation, n)
    squeeze = ctx.rank(x) == n + 1
    if squeeze:
        x = op.expand_dims(x, axis=0)
    if n == 3:
        y = pool3d(ctx, loom_pool, x, kernel, stride, padding + padding, dilation, bool(ceil_mode), **extra)
    else:
        y = loom_pool(x, pool_size=kernel, strides=stride, padding=padding, dilation=dilation,
                      ceil_mode=bool(ceil_mode), **extra)
    return op.squeeze(y, axis=[0]) if squeeze else y


@aten("max_pool2d", "max_pool3d", "quantized_max_pool2d")
def _max_pool(ctx, node, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    return _pool(ctx, node, op.max_pool2d, x, kernel, stride, padding, dilation, ceil_mode)


@aten("max_pool2d_with_indices")
def _max_pool_with_indices(ctx, node, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    values = _pool(ctx, node, op.max_pool2d, x, kernel, stride, padding, dilation, ceil_mode)
    x = _t(ctx, x)
    if ctx.rank(x) != 4:
        raise Unsupported("max_pool2d_with_indices of an unbatched input")
    padding = _pair(padding)
    return values, max_pool2d_indices(ctx, x, values, _pair(kernel), _pair(stride) if stride not in (None, []) else
                                      _pair(kernel), padding + padding, _pair(dilation))


@aten("max_pool3d_with_indices", partial=(1,))
def _max_pool3d_with_indices(ctx, node, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    return _pool(ctx, node, op.max_pool2d, x, kernel, stride, padding, dilation, ceil_mode), None


@aten("max_unpool2d")
def _max_unpool2d(ctx, node, x, indices, output_size):
    # Each value written at its position in its plane of the output,
    # zeros elsewhere (indices from max_pool2d_with_indices).
    x, indices = _t(ctx, x), _t(ctx, indices)
    shape = ctx.shape(x)
    if len(shape) != 4 or not all(isinstance(d, int) for d in shape):
        raise Unsupported(f"max_unpool2d of an input of shape {list(shape)} (N C H W, static)")
    n, c, h, w = shape
    oh, ow = (int(v) for v in output_size[-2:])
    zeros = ctx.expr(np.zeros((n, c, oh * ow), dtype=ctx.dtype(x)))
    flat = op.scatter_elements(zeros, op.reshape(indices, shape=[n, c, h * w]), op.reshape(x, shape=[n, c, h * w]),
                               axis=2)
    return op.reshape(flat, shape=[n, c, oh, ow])


@aten("avg_pool2d", "avg_pool3d", accepts=lambda a: len(a) < 7 or a[6] is None)
def _avg_pool(ctx, node, x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    if divisor_override is not None:
        raise Unsupported("divisor_override")
    return _pool(ctx, node, op.avg_pool2d, x, kernel, stride, padding, 1, ceil_mode,
                 count_include_pad=bool(count_include_pad))


@aten("adaptive_avg_pool3d", "_adaptive_avg_pool3d")
def _adaptive_avg_pool3d(ctx, node, x, size):
    """Over (H, W) as a 2-D adaptive pool, then over the depth as one of
    (D, H' W') to (d, H' W'): each output cell averages the product of its
    axes' windows, as PyTorch's does."""
    x = _t(ctx, x)
    shape = list(ctx.shape(x))
    size = [size] * 3 if isinstance(size, int) else list(size)
    d, h, w = [shape[k - 3] if s is None else int(s) for k, s in enumerate(size)]
    if (d, h, w) == (1, 1, 1):
        return op.mean(x, axis=[-3, -2, -1], keepdims=True)
    lead, (d_in, h_in, w_in) = shape[:-3], shape[-3:]
    if not all(isinstance(v, int) for v in [d_in, h_in, w_in] + lead[1:]):
        raise Unsupported("an adaptive 3-D pool over a symbolic size")
    planes = adaptive_avg_pool2d(ctx, op.reshape(x, shape=[-1, d_in, h_in, w_in]), [h, w])
    depth = adaptive_avg_pool2d(ctx, op.reshape(planes, shape=[-1, 1, d_in, h * w]), [d, h * w])
    return op.reshape(depth, shape=[v if isinstance(v, int) else -1 for v in lead] + [d, h, w])


def adaptive_avg_pool2d(ctx, x, size):
    """PyTorch's adaptive average pool: output cell (i, j) averages rows
    floor(i H / h) to ceil((i + 1) H / h) (and columns alike); one pool when
    the windows are even, else a mean per window."""
    x = _t(ctx, x)
    shape = ctx.shape(x)
    h_in, w_in = shape[-2], shape[-1]
    size = [size, size] if isinstance(size, int) else list(size)
    h = h_in if size[0] is None else int(size[0])
    w = w_in if size[-1] is None else int(size[-1])
    if (h, w) == (1, 1):
        return op.global_avg_pool2d(x) if ctx.rank(x) == 4 else op.mean(x, axis=[-2, -1], keepdims=True)
    if (h, w) == (h_in, w_in):
        return x
    if not isinstance(h_in, int) or not isinstance(w_in, int):
        raise Unsupported("an adaptive pool over a symbolic size")
    if h_in % h == 0 and w_in % w == 0:
        kernel = [h_in // h, w_in // w]
        return op.avg_pool2d(x, pool_size=kernel, strides=kernel)
    rows = []
    for i in range(h):
        r0, r1 = (i * h_in) // h, -(-((i + 1) * h_in) // h)
        cells = []
        for j in range(w):
            c0, c1 = (j * w_in) // w, -(-((j + 1) * w_in) // w)
            window = op.slice(x, begin=[r0, c0], end=[r1, c1], axes=[-2, -1])
            cells.append(op.mean(window, axis=[-2, -1], keepdims=True))
        rows.append(op.concat(*cells, axis=-1))
    return op.concat(*rows, axis=-2)


@aten("adaptive_avg_pool2d", "_adaptive_avg_pool2d")
def _adaptive_avg_pool2d(ctx, node, x, size):
    return adaptive_avg_pool2d(ctx, x, size)


# ------------------------------------------------------ normalisation

@aten("native_batch_norm", "batch_norm", "_native_batch_norm_legit_no_training", "_native_batch_norm_legit")
def _batch_norm(ctx, node, x, weight, bias, mean, var, *rest):
    # batch_norm(..., training, momentum, eps, cudnn_enabled);
    # native_batch_norm(..., training, momentum, eps);
    # _native_batch_norm_legit_no_training(..., momentum, eps).
    if node.kind == "aten::_native_batch_norm_legit_no_training":
        training, eps = False, rest[1]
    else:
        training, eps = bool(rest[0]), rest[2]
    x = _t(ctx, x)
    dtype = ctx.dtype(x)
    rank = ctx.rank(x)
    channels = ctx.shape(x)[1]
    weight = ctx.expr(weight if weight is not None else np.ones(channels, dtype), dtype)
    bias = ctx.expr(bias if bias is not None else np.zeros(channels, dtype), dtype)
    if training or mean is None:
        # Training mode normalises with the batch's statistics (biased
        # variance), as PyTorch's forward does; the running averages it
        # would update are not part of the result.
        axes = [0] + list(range(2, rank))
        extra = [1] * (rank - 2)
        batch_mean = op.mean(x, axis=axes, keepdims=True)
        centred = op.subtract(x, batch_mean)
        batch_var = op.mean(op.multiply(centred, centred), axis=axes, keepdims=True)
        y = op.multiply(centred, op.rsqrt(op.add(batch_var, ctx.const(eps, x))))
        y = op.add(op.multiply(y, op.reshape(weight, shape=[-1] + extra)), op.reshape(bias, shape=[-1] + extra))
        saved = (op.reshape(batch_mean, shape=[-1]),
                 op.reshape(op.rsqrt(op.add(batch_var, ctx.const(eps, x))), shape=[-1]))
    else:
        y = op.batch_norm(x, weight, bias, ctx.expr(mean, dtype), ctx.expr(var, dtype), epsilon=float(eps))
        saved = (np.zeros(0, dtype), np.zeros(0, dtype))  # PyTorch's empty save_mean and save_invstd
    if node.kind == "aten::batch_norm":
        return y
    return (y,) + saved


def layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    x = _t(ctx, x)
    dtype = ctx.dtype(x)
    n = len(normalized_shape)
    rank = ctx.rank(x)
    if n == 1:
        feat = int(normalized_shape[0])
        w = ctx.expr(weight if weight is not None else np.ones(feat, dtype), dtype)
        b = ctx.expr(bias if bias is not None else np.zeros(feat, dtype), dtype)
        return op.layer_norm(x, w, b, epsilon=float(eps))
    axes = list(range(rank - n, rank))
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    var = op.mean(op.multiply(centred, centred), axis=axes, keepdims=True)
    y = op.multiply(centred, op.rsqrt(op.add(var, ctx.const(eps, x))))
    if weight is not None:
        y = op.multiply(y, ctx.expr(weight, dtype))
    if bias is not None:
        y = op.add(y, ctx.expr(bias, dtype))
    return y


@aten("layer_norm")
def _layer_norm(ctx, node, x, normalized_shape, weight=None, bias=None, eps=1e-5, *rest):
    return layer_norm(ctx, x, normalized_shape, weight, bias, eps)


@aten("native_layer_norm")
def _native_layer_norm(ctx, node, x, normalized_shape, weight, bias, eps):
    x = _t(ctx, x)
    axes = list(range(ctx.rank(x) - len(normalized_shape), ctx.rank(x)))
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    rstd = op.rsqrt(op.add(op.mean(op.multiply(centred, centred), axis=axes, keepdims=True), ctx.const(eps, x)))
    return layer_norm(ctx, x, normalized_shape, weight, bias, eps), mean, rstd


@aten("group_norm")
def _group_norm(ctx, node, x, groups, weight=None, bias=None, eps=1e-5, *rest):
    return _group_norm_parts(ctx, x, groups, weight, bias, eps)[0]


@aten("native_group_norm")
def _native_group_norm(ctx, node, x, weight, bias, n, c, hw, groups, eps):
    # (out, mean, rstd), the statistics (N, groups)
    return _group_norm_parts(ctx, x, groups, weight, bias, eps)


def _group_norm_parts(ctx, x, groups, weight, bias, eps):
    x = _t(ctx, x)
    shape = list(ctx.shape(x))
    if not all(isinstance(d, int) for d in shape[1:]):
        raise Unsupported("a group norm over a symbolic shape")
    n = shape[0] if isinstance(shape[0], int) else -1
    grouped = op.reshape(x, shape=[n, int(groups), -1])
    mean = op.mean(grouped, axis=[2], keepdims=True)
    centred = op.subtract(grouped, mean)
    var = op.mean(op.multiply(centred, centred), axis=[2], keepdims=True)
    rstd = op.rsqrt(op.add(var, ctx.const(eps, x)))
    y = op.reshape(op.multiply(centred, rstd), shape=[n] + shape[1:])
    statistics = (op.reshape(mean, shape=[n, int(groups)]), op.reshape(rstd, shape=[n, int(groups)]))
    extra = [1] * (len(shape) - 2)
    dtype = ctx.dtype(x)
    if weight is not None:
        y = op.multiply(y, ctx.expr(np.asarray(weight).reshape(-1, *extra) if isinstance(weight, np.ndarray) else
                                    op.reshape(_t(ctx, weight), shape=[-1] + extra), dtype))
    if bias is not None:
        y = op.add(y, ctx.expr(np.asarray(bias).reshape(-1, *extra) if isinstance(bias, np.ndarray) else
                               op.reshape(_t(ctx, bias), shape=[-1] + extra), dtype))
    return (y,) + statistics


@aten("prelu", "_prelu_kernel")
def _prelu(ctx, node, x, weight):
    # x where positive, else weight * x, one weight per channel (axis 1)
    # or one for all.
    x, weight = _t(ctx, x), _t(ctx, weight)
    rank, count = ctx.rank(x), ctx.shape(weight)
    if rank >= 2 and count and count[0] != 1:
        weight = op.reshape(weight, shape=[-1] + [1] * (rank - 2))
    return op.where(op.greater(x, ctx.const(0, x)), x, op.multiply(weight, x))


@aten("_weight_norm_interface", "_weight_norm")
def _weight_norm(ctx, node, v, g, dim=0):
    # (w, norm): v scaled to g's length along every axis but dim.
    v, g = _t(ctx, v), _t(ctx, g)
    rank = ctx.rank(v)
    dim = int(dim) % rank if rank else 0
    axes = [a for a in range(rank) if a != dim]
    norm = op.sqrt(op.sum(op.multiply(v, v), axis=axes, keepdims=True)) if axes else op.abs(v)
    w = op.multiply(v, op.divide(g, norm))
    return (w, norm) if "interface" in node.kind else w


@aten("softmax", "_softmax", accepts=lambda a: len(a) < 3 or a[2] in (None, False))
def _softmax(ctx, node, x, dim, half_to_float=None):
    if half_to_float not in (None, False):
        x = ctx.expr(_t(ctx, x), dtype_name(half_to_float))
    return op.softmax(_t(ctx, x), axis=int(dim))


@aten("log_softmax", "_log_softmax", accepts=lambda a: len(a) < 3 or a[2] in (None, False))
def _log_softmax(ctx, node, x, dim, half_to_float=None):
    if half_to_float not in (None, False):
        x = ctx.expr(_t(ctx, x), dtype_name(half_to_float))
    return op.log_softmax(_t(ctx, x), axis=int(dim))


# ------------------------------------------------------ linear algebra

@aten("linear")
def _linear(ctx, node, x, w, bias=None):
    x = _t(ctx, x)
    vector = ctx.rank(x) == 1
    if vector:
        x = op.expand_dims(x, axis=0)
    w = w if isinstance(w, np.ndarray) else _t(ctx, w)
    if isinstance(w, np.ndarray):
        y = op.dense(x, ctx.expr(w if w.ndim == 2 else w.reshape(1, -1), ctx.dtype(x)))
    else:
        y = op.matmul(x, w if ctx.rank(w) == 2 else op.expand_dims(w, axis=0), transpose_b=True)
    if bias is not None:
        y = op.add(y, ctx.expr(_t(ctx, bias), ctx.dtype(y)))
    if vector:
        y = op.squeeze(y, axis=[0])
    if not isinstance(w, np.ndarray) and ctx.rank(_t(ctx, w)) == 1 or isinstance(w, np.ndarray) and w.ndim == 1:
        y = op.squeeze(y, axis=[-1])
    return y


@aten("addmm")
def _addmm(ctx, node, bias, a, b, beta=1, alpha=1):
    a = _t(ctx, a)
    if isinstance(b, np.ndarray):  # x @ W.T as a linear layer's weight
        y = op.dense(a, ctx.expr(np.ascontiguousarray(b.T), ctx.dtype(a)))
    else:
        y = op.matmul(a, _t(ctx, b))
    y = _scaled(ctx, y, alpha)
    return op.add(y, _scaled(ctx, ctx.expr(_t(ctx, bias), ctx.dtype(y)), beta))


@aten("mm", "bmm", "matmul")
def _matmul(ctx, node, a, b):
    a = _t(ctx, a)
    return numpy_matmul(ctx, a, b if isinstance(b, np.ndarray) else _t(ctx, b), ctx.dtype(a))


@aten("einsum")
def _einsum(ctx, node, equation, tensors, *rest):
    xs = [_t(ctx, t) for t in tensors]
    return op.einsum(*[ctx.expr(x, ctx.dtype(xs[0])) for x in xs], equation=equation)


@aten("embedding")
def _embedding(ctx, node, weight, indices, *rest):
    return op.take(_t(ctx, weight), _t(ctx, indices), axis=0)


# --------------------------------------------------------------- shapes

def _static(ctx, x, what="the input"):
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported(f"{what} of symbolic shape {list(shape)}")
    return list(shape)


@aten("view", "reshape", "_unsafe_view", "_reshape_alias", "view_copy")
def _view(ctx, node, x, shape, *rest):
    x = _t(ctx, x)
    return op.reshape(x, shape=[int(s) if isinstance(s, (int, np.integer)) else s for s in shape])


@aten("as_strided", "as_strided_", "as_strided_copy")
def _as_strided(ctx, node, x, size, stride, offset=None):
    """A view of x's elements (row-major, from its first) at offset +
    sum(i_k stride_k): a reshape when that is x's own order, else a take
    at those positions."""
    x = _t(ctx, x)
    size, stride, offset = [int(v) for v in size], [int(v) for v in stride], int(offset or 0)
    contiguous = [int(np.prod(size[k + 1:])) for k in range(len(size))]
    total = int(np.prod(_static(ctx, x)))
    if offset == 0 and all(st == c for st, c, n in zip(stride, contiguous, size) if n > 1) and \
            int(np.prod(size)) == total:
        return op.reshape(x, shape=size)
    positions = np.full(size, offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        positions = positions + (np.arange(n, dtype=np.int64) * st).reshape([-1] + [1] * (len(size) - 1 - k))
    if positions.size and (positions.min() < 0 or positions.max() >= total):
        raise Unsupported(f"as_strided reaching outside its input ({total} elements)")
    return op.take(op.reshape(x, shape=[-1]), ctx.expr(positions), axis=0)


@aten("flatten")
def _flatten(ctx, node, x, start=0, end=-1):
    x = _t(ctx, x)
    shape = ctx.shape(x)
    rank = len(shape)
    if rank == 0:
        return op.reshape(x, shape=[1])
    start, end = _axis(start, rank), _axis(end, rank)
    if start == 1 and end == rank - 1 and rank >= 2:
        return op.flatten(x)
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported("flattening a symbolic shape")
    merged = int(np.prod(shape[start:end + 1]))
    return op.reshape(x, shape=list(shape[:start]) + [merged] + list(shape[end + 1:]))


@aten("permute")
def _permute(ctx, node, x, dims):
    x = _t(ctx, x)
    return op.transpose(x, axes=[_axis(int(d), ctx.rank(x)) for d in dims])


@aten("transpose", "transpose_", "swapaxes")
def _transpose(ctx, node, x, a, b):
    x = _t(ctx, x)
    rank = ctx.rank(x)
    axes = list(range(rank))
    a, b = _axis(a, rank), _axis(b, rank)
    axes[a], axes[b] = axes[b], axes[a]
    return op.transpose(x, axes=axes)


@aten("t", "numpy_T")
def _t_op(ctx, node, x):
    x = _t(ctx, x)
    return x if ctx.rank(x) < 2 else op.transpose(x, axes=list(range(ctx.rank(x)))[::-1])


@aten("unsqueeze", "unsqueeze_")
def _unsqueeze(ctx, node, x, dim):
    x = _t(ctx, x)
    return op.expand_dims(x, axis=_axis(int(dim), ctx.rank(x) + 1))


@aten("squeeze", "squeeze_")
def _squeeze(ctx, node, x, dim=None):
    x = _t(ctx, x)
    shape = ctx.shape(x)
    if dim is None:
        return op.squeeze(x, axis=[k for k, d in enumerate(shape) if d == 1])
    dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_axis(d, len(shape)) for d in dims if shape[_axis(d, len(shape))] == 1]
    return op.squeeze(x, axis=dims) if dims else x


@aten("expand", "expand_as", "broadcast_to")
def _expand(ctx, node, x, size, *rest):
    x = _t(ctx, x)
    if node.kind == "aten::expand_as":
        size = ctx.shape(_t(ctx, size))
    current = list(ctx.shape(x))
    size = list(size)
    padded = [1] * (len(size) - len(current)) + current
    target = [c if isinstance(s, (int, np.integer)) and s == -1 else s for s, c in zip(size, padded)]
    if len(size) == len(current) and all(_same_dim(t, c) for t, c in zip(target, current)):
        return x  # x's own shape (a symbolic trace's matmul expands its operands so)
    if not all(isinstance(d, (int, np.integer)) for d in target):
        raise Unsupported("expanding to a symbolic shape")
    return op.broadcast_to(x, shape=[int(d) for d in target])


def _same_dim(a, b):
    """Whether two dimensions (ints or tir expressions) are the same."""
    if isinstance(a, (int, np.integer)) or isinstance(b, (int, np.integer)):
        return isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and int(a) == int(b)
    return str(a) == str(b)  # by name: ir.structural_equal maps free variables (%n equals %b)


@aten("repeat")
def _repeat(ctx, node, x, repeats):
    x = _t(ctx, x)
    shape = _static(ctx, x)
    repeats = [int(r) for r in repeats]
    shape = [1] * (len(repeats) - len(shape)) + shape
    x = op.reshape(x, shape=shape)
    spread = [v for d in shape for v in (1, d)]
    wide = [v for r, d in zip(repeats, shape) for v in (r, d)]
    y = op.broadcast_to(op.reshape(x, shape=spread), shape=wide)
    return op.reshape(y, shape=[r * d for r, d in zip(repeats, shape)])


@aten("repeat_interleave", accepts=lambda a: len(a) >= 2)
def _repeat_interleave(ctx, node, x, repeats, dim=None, output_size=None):
    """Each element repeated along `dim` (the flattened input when None):
    `repeats` times when a number (or a one-element tensor known at compile
    time), element i repeats[i] times when a tensor known at compile
    time (a gather by those positions).  The one-argument form (indices
    from a tensor of counts) is refused by `accepts`."""
    x = _t(ctx, x)
    if dim is None:
        x, dim = op.reshape(x, shape=[-1]), 0
    dim = _axis(int(dim), ctx.rank(x))
    if isinstance(repeats, np.ndarray) and repeats.size == 1:
        repeats = int(repeats.reshape(-1)[0])
    if isinstance(repeats, (int, np.integer)):
        shape = list(ctx.shape(x))
        if not isinstance(shape[dim], int):
            raise Unsupported(f"repeating a symbolic dimension ({shape[dim]})")
        y = op.broadcast_to(op.expand_dims(x, axis=dim + 1),
                            shape=shape[:dim + 1] + [int(repeats)] + shape[dim + 1:])
        return op.reshape(y, shape=shape[:dim] + [shape[dim] * int(repeats)] + shape[dim + 1:])
    if not isinstance(repeats, np.ndarray):
        raise Unsupported("repeats computed at run time (the result's shape would depend on the data)")
    positions = np.repeat(np.arange(repeats.size, dtype=np.int64), repeats.reshape(-1).astype(np.int64))
    return op.take(x, ctx.expr(positions), axis=dim)


@aten("cat", "concat", "concatenate")
def _cat(ctx, node, tensors, dim=0):
    xs = [_t(ctx, t) for t in tensors]
    xs = [x for x in xs if not (ctx.rank(x) == 1 and ctx.shape(x)[0] == 0)]  # PyTorch skips empty 1-D tensors
    dtype = ctx.dtype(xs[0])
    return op.concat(*[ctx.expr(x, dtype) for x in xs], axis=int(dim))


@aten("stack")
def _stack(ctx, node, tensors, dim=0):
    xs = [_t(ctx, t) for t in tensors]
    rank = ctx.rank(xs[0]) + 1
    return op.concat(*[op.expand_dims(x, axis=_axis(int(dim), rank)) for x in xs], axis=_axis(int(dim), rank))


def split_sizes(ctx, x, sizes, dim):
    x = _t(ctx, x)
    dim = _axis(int(dim), ctx.rank(x))
    points = list(np.cumsum(sizes)[:-1])
    if not points:
        return (x,)
    call = op.split(x, indices_or_sections=[int(p) for p in points], axis=dim)
    return tuple(graph.TupleGetItem(call, k) for k in range(len(sizes)))


@aten("split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes")
def _split(ctx, node, x, size, dim=0):
    extent = ctx.shape(_t(ctx, x))[_axis(int(dim), ctx.rank(_t(ctx, x)))]
    if isinstance(size, int):
        sizes = [min(size, extent - k) for k in range(0, extent, size)]
    else:
        sizes = [int(s) for s in size]
    return split_sizes(ctx, x, sizes, dim)


@aten("chunk", "unsafe_chunk")
def _chunk(ctx, node, x, chunks, dim=0):
    extent = ctx.shape(_t(ctx, x))[_axis(int(dim), ctx.rank(_t(ctx, x)))]
    size = -(-extent // int(chunks))
    return split_sizes(ctx, x, [min(size, extent - k) for k in range(0, extent, size)], dim)


@aten("unbind")
def _unbind(ctx, node, x, dim=0):
    x = _t(ctx, x)
    dim = _axis(int(dim), ctx.rank(x))
    parts = split_sizes(ctx, x, [1] * ctx.shape(x)[dim], dim)
    return tuple(op.squeeze(p, axis=[dim]) for p in parts)


@aten("slice")
def _slice(ctx, node, x, dim=0, start=None, end=None, step=1):
    x = _t(ctx, x)
    big = 2 ** 62
    start = 0 if start is None else max(min(int(start), big), -big)
    end = big if end is None else max(min(int(end), big), -big)
    if start == 0 and end >= big and step == 1:
        return x
    return op.slice(x, begin=[start], end=[end], axes=[_axis(int(dim), ctx.rank(x))], strides=[int(step)])


@aten("select")
def _select(ctx, node, x, dim, index):
    x = _t(ctx, x)
    dim = _axis(int(dim), ctx.rank(x))
    index = int(index)
    extent = ctx.shape(x)[dim]
    if index < 0 and isinstance(extent, int):
        index += extent
    return op.squeeze(op.slice(x, begin=[index], end=[index + 1], axes=[dim]), axis=[dim])


@aten("slice_scatter")
def _slice_scatter(ctx, node, base, src, dim=0, start=None, end=None, step=1):
    """base with base[..., start:end:step, ...] (along dim) replaced by src
    (what an assignment to a slice is once functionalized)."""
    base = _t(ctx, base)
    src = ctx.expr(_t(ctx, src), ctx.dtype(base))
    shape = _static(ctx, base)
    dim = _axis(int(dim), len(shape))
    positions = list(range(shape[dim]))[slice(start, end, step)]
    if not positions:
        return base
    if step == 1:
        parts = []
        if positions[0] > 0:
            parts.append(op.slice(base, begin=[0], end=[positions[0]], axes=[dim]))
        parts.append(src)
        if positions[-1] + 1 < shape[dim]:
            parts.append(op.slice(base, begin=[positions[-1] + 1], end=[shape[dim]], axes=[dim]))
        return parts[0] if len(parts) == 1 else op.concat(*parts, axis=dim)
    index_shape = list(ctx.shape(src))
    index = np.asarray(positions, np.int64).reshape([-1 if k == dim else 1 for k in range(len(shape))])
    return op.scatter_elements(base, ctx.expr(np.broadcast_to(index, index_shape).copy()), src, axis=dim)


@aten("select_scatter")
def _select_scatter(ctx, node, base, src, dim, index):
    base = _t(ctx, base)
    dim = _axis(int(dim), ctx.rank(base))
    index = int(index) % ctx.shape(base)[dim]
    return _slice_scatter(ctx, node, base, op.expand_dims(_t(ctx, src), axis=dim), dim, index, index + 1, 1)


@aten("narrow")
def _narrow(ctx, node, x, dim, start, length):
    return _slice(ctx, node, x, dim, start, int(start) + int(length))


@aten("index")
def _index(ctx, node, x, indices):
    """x[i0, i1, ...] with index tensors: one tensor (the others None:
    whole axes) becomes take; several tensors on leading axes broadcast
    together and become gather_nd."""
    x = _t(ctx, x)
    used = [(k, i) for k, i in enumerate(indices) if i is not None]
    if len(used) == 1:
        k, i = used[0]
        i = _t(ctx, i)
        if ctx.dtype(i) == "bool":
            return _masked(ctx, node, x, i, k)
        if ctx.dtype(i) not in ("int32", "int64"):
            i = op.cast(i, dtype="int64")
        return op.take(x, i, axis=k)
    if [k for k, _ in used] != list(range(len(used))):
        raise Unsupported("index tensors on axes that are not the leading ones")
    tensors = [ctx.expr(_t(ctx, i), "int64") for _, i in used]
    shape = np.broadcast_shapes(*[tuple(ctx.shape(t)) for t in tensors])
    stacked = op.concat(*[op.expand_dims(op.broadcast_to(t, shape=list(shape)), axis=-1) for t in tensors], axis=-1)
    return op.gather_nd(x, stacked)


# ---------------------------------------------- shapes the data decides
# (docs/runtime.md, "Shapes the data decides")

# The operators whose result has a shape the data decides (indexing with a
# boolean mask too): an importer must not take their sizes from a trace.
DATA_SHAPED = {"aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::masked_select", "aten::_unique2",
               "aten::unique_dim", "aten::unique_consecutive", "torchvision::nms"}


def _masked(ctx, node, x, mask, axis):
    """x[..., mask] with a boolean mask over x's axes axis, axis + 1, ...:
    those axes flattened, then the elements where the mask is set taken."""
    shape, mask_rank = ctx.shape(x), ctx.rank(mask)
    flat = op.reshape(x, shape=list(shape[:axis]) + [-1] + list(shape[axis + mask_rank:]))
    where = op.reshape(nonzero(op.reshape(mask, shape=[-1]), 1, node.name, ctx, key=mask), shape=[-1])
    return op.take(flat, where, axis=axis)


@aten("nonzero", "argwhere")
def _nonzero(ctx, node, x):
    x = _t(ctx, x)
    rows = nonzero(x, ctx.rank(x), node.name, ctx)
    if ctx.rank(x) == 0:  # PyTorch: (count, 0); ONNX's and NumPy's take a 0-d tensor as 1-D
        rows = op.slice(rows, begin=[0], end=[0], axes=[0])
    return op.transpose(rows, axes=[1, 0])


@aten("nonzero_numpy")
def _nonzero_numpy(ctx, node, x):
    """torch.nonzero(x, as_tuple=True): one index tensor per axis."""
    x = _t(ctx, x)
    rows = nonzero(x, ctx.rank(x), node.name, ctx)
    return [op.reshape(op.slice(rows, begin=[k], end=[k + 1], axes=[0]), shape=[-1])
            for k in range(max(ctx.rank(x), 1))]


@aten("masked_select")
def _masked_select(ctx, node, x, mask):
    x, mask = _t(ctx, x), _t(ctx, mask)
    shape = list(np.broadcast_shapes(tuple(ctx.shape(x)), tuple(ctx.shape(mask))))
    x = x if list(ctx.shape(x)) == shape else op.broadcast_to(x, shape=shape)
    mask = mask if list(ctx.shape(mask)) == shape else op.broadcast_to(mask, shape=shape)
    return _masked(ctx, node, x, mask, 0)


@aten("_unique2", "unique_dim")
def _unique(ctx, node, x, *args):
    """torch.unique: (values, inverse indices in x's shape, counts), sorted
    (unsorted order is PyTorch's to choose: Loom sorts too)."""
    x = _t(ctx, x)
    shape = ctx.shape(x)
    axis = _axis(int(args[0]), len(shape)) if node.kind == "aten::unique_dim" else None
    call = unique(x, shape, ctx.dtype(x), axis, True, node.name)
    inverse = graph.TupleGetItem(call, 2)
    if axis is None:
        inverse = op.reshape(inverse, shape=list(shape))
    return graph.TupleGetItem(call, 0), inverse, graph.TupleGetItem(call, 3)


@aten("unique_consecutive")
def _unique_consecutive(ctx, node, x, return_inverse=False, return_counts=False, dim=None):
    """torch.unique_consecutive: (values, inverse indices, counts) of the
    runs of equal neighbours (of x flattened, or of its slices along
    dim)."""
    x = _t(ctx, x)
    shape = ctx.shape(x)
    axis = None if dim is None else _axis(int(dim), len(shape))
    call = unique(x, shape, ctx.dtype(x), axis, True, node.name, consecutive=True)
    inverse = graph.TupleGetItem(call, 2)
    if axis is None:
        inverse = op.reshape(inverse, shape=list(shape))
    return graph.TupleGetItem(call, 0), inverse, graph.TupleGetItem(call, 3)


@aten("linalg_det", "det")
def _det(ctx, node, x):
    x = _t(ctx, x)
    return determinant(x, list(ctx.shape(x)), ctx.dtype(x))


@aten("_linalg_det", partial=(1, 2))
def _linalg_det(ctx, node, x):
    """(det, LU, pivots) as the aten graph has it: the determinant only."""
    return _det(ctx, node, x), None, None


@aten("torchvision::nms")
def _nms(ctx, node, boxes, scores, iou_threshold):
    """torchvision.ops.nms: the kept indices by descending score.  Its boxes
    are (x1, y1, x2, y2); ONNX's corners are (y1, x1, y2, x2), the same IoU."""
    boxes, scores = _t(ctx, boxes), _t(ctx, scores)
    rows = non_max_suppression(op.expand_dims(boxes, axis=0), op.reshape(scores, shape=[1, 1, -1]),
                               2 ** 62, float(iou_threshold), None, 0, node.name)
    return op.reshape(op.slice(rows, begin=[2], end=[3], axes=[1]), shape=[-1])


@aten("torchvision::roi_align")
def _roi_align(ctx, node, x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """torchvision.ops.roi_align over (K, 5) regions (batch index, x1, y1,
    x2, y2): ONNX's RoiAlign (aligned: half_pixel)."""
    x, rois = _t(ctx, x), _t(ctx, rois)
    boxes = op.slice(rois, begin=[1], end=[5], axes=[1])
    batch = op.cast(op.reshape(op.slice(rois, begin=[0], end=[1], axes=[1]), shape=[-1]), dtype="int64")
    return roi_align(x, boxes, batch, ctx.shape(x), ctx.shape(boxes), int(pooled_height), int(pooled_width),
                     max(int(sampling_ratio), 0), float(spatial_scale), bool(aligned), False)


@aten("index_select")
def _index_select(ctx, node, x, dim, index):
    x, index = _t(ctx, x), _t(ctx, index)
    if ctx.rank(x) == 0:  # a 0-d tensor selects from itself as from one element
        return op.reshape(op.take(op.reshape(x, shape=[1]), op.reshape(index, shape=[-1]), axis=0), shape=[])
    return op.take(x, index if ctx.rank(index) == 1 else op.reshape(index, shape=[-1]), axis=int(dim))


@aten("gather")
def _gather(ctx, node, x, dim, index, *rest):
    return op.gather_elements(_t(ctx, x), _t(ctx, index), axis=int(dim))


@aten("constant_pad_nd", "pad", accepts=lambda a: len(a) < 3 or a[2] in (None, "constant", "reflect", "replicate") or
      isinstance(a[2], (int, float)))
def _constant_pad(ctx, node, x, pad, value=0, *rest):
    x = _t(ctx, x)
    mode = "constant"
    if isinstance(value, str):  # aten::pad(input, pad, mode, value)
        mode, value = value, (rest[0] if rest else 0)
        mode = {"replicate": "edge", "reflect": "reflect", "constant": "constant"}.get(mode)
        if mode is None:
            raise Unsupported("a padding mode other than constant, reflect or replicate")
    rank = ctx.rank(x)
    pad = [int(p) for p in pad]
    before, after = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):  # pairs from the last axis backwards
        before[rank - 1 - k], after[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    if any(p < 0 for p in before + after):
        shape = _static(ctx, x)
        x = op.slice(x, begin=[max(0, -b) for b in before], end=[d - max(0, -a) for d, a in zip(shape, after)],
                     axes=list(range(rank)))
        before, after = [max(0, b) for b in before], [max(0, a) for a in after]
    width = [v for b, a in zip(before, after) for v in (b, a)]
    return op.pad(x, pad_width=width, pad_value=float(value or 0), mode=mode)


@aten("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
      "replication_pad3d")
def _mode_pad(ctx, node, x, pad):
    """F.pad's reflect and replicate modes: (left, right[, top, bottom[,
    front, back]]) from the last axis backwards."""
    x = _t(ctx, x)
    rank = ctx.rank(x)
    pad = [int(p) for p in pad]
    if any(p < 0 for p in pad):
        raise Unsupported("a negative padding")
    width = [0] * (2 * rank)
    for k in range(len(pad) // 2):
        width[2 * (rank - 1 - k)], width[2 * (rank - 1 - k) + 1] = pad[2 * k], pad[2 * k + 1]
    return op.pad(x, pad_width=width, mode="reflect" if "reflection" in node.kind else "edge")


@aten("roll")
def _roll(ctx, node, x, shifts, dims=()):
    x = _t(ctx, x)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        shape = _static(ctx, x)
        return op.reshape(_roll(ctx, node, op.reshape(x, shape=[-1]), shifts, [0]), shape=shape)
    for s, d in zip(shifts, dims):
        d = _axis(d, ctx.rank(x))
        n = ctx.shape(x)[d]
        s = s % n if n else 0
        if s:
            tail = op.slice(x, begin=[n - s], end=[n], axes=[d])
            head = op.slice(x, begin=[0], end=[n - s], axes=[d])
            x = op.concat(tail, head, axis=d)
    return x


@aten("flip")
def _flip(ctx, node, x, dims):
    x = _t(ctx, x)
    for d in dims:
        x = op.slice(x, begin=[-1], end=[-(2 ** 62)], axes=[_axis(d, ctx.rank(x))], strides=[-1])
    return x


@aten("tril", "triu")
def _tril(ctx, node, x, k=0):
    x = _t(ctx, x)
    shape = _static(ctx, x)
    ones = np.ones(shape[-2:], dtype=bool)
    mask = np.tril(ones, k) if node.kind == "aten::tril" else np.triu(ones, k)
    return op.where(ctx.expr(mask), x, ctx.const(0, x))


@aten("cumsum")
def _cumsum(ctx, node, x, dim, dtype=None):
    x = _t(ctx, x)
    if dtype is not None:
        x = ctx.expr(x, dtype_name(dtype))
    return op.cumsum(x, axis=int(dim))


@aten("topk")
def _topk(ctx, node, x, k, dim=-1, largest=True, sorted=True):
    call = op.topk(_t(ctx, x), k=int(k), axis=int(dim), largest=bool(largest))
    return graph.TupleGetItem(call, 0), graph.TupleGetItem(call, 1)


@aten("argmax", "argmin")
def _argmax(ctx, node, x, dim=None, keepdim=False):
    x = _t(ctx, x)
    fn = op.argmax if node.kind == "aten::argmax" else op.argmin
    if dim is None:
        return fn(op.reshape(x, shape=[-1]), axis=0, keepdims=False)
    return fn(x, axis=int(dim), keepdims=bool(keepdim))


# ------------------------------------------------------------ reductions

def _dims(ctx, x, dim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return []
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [_axis(int(d), ctx.rank(x)) for d in dims]


def _reduction(fn):
    def convert(ctx, node, x, dim=None, keepdim=False, dtype=None, **kwargs):
        x = _t(ctx, x)
        if isinstance(dim, (str, type(None))) and keepdim is not False and not isinstance(keepdim, bool):
            dtype, keepdim = keepdim, False  # mean(x, dtype)
        if dtype is not None:
            x = ctx.expr(x, dtype_name(dtype))
        return fn(x, axis=_dims(ctx, x, dim), keepdims=bool(keepdim))
    return convert


aten("mean")(_reduction(op.mean))
aten("sum")(_reduction(op.sum))
aten("prod")(_reduction(op.prod))
aten("amax")(_reduction(op.max))
aten("amin")(_reduction(op.min))


@aten("max", "min")
def _max(ctx, node, x, dim=None, keepdim=False):
    x = _t(ctx, x)
    reduce = op.max if node.kind == "aten::max" else op.min
    if dim is None:
        return reduce(x)
    if not isinstance(dim, int):  # max(a, b): elementwise
        return _binary(ctx, x, dim, op.maximum if node.kind == "aten::max" else op.minimum)
    arg = op.argmax if node.kind == "aten::max" else op.argmin
    return reduce(x, axis=[int(dim)], keepdims=bool(keepdim)), arg(x, axis=int(dim), keepdims=bool(keepdim))


@aten("var", "std")
def _var(ctx, node, x, *args, correction=None, unbiased=None, dim=None, keepdim=False):
    """var(x, unbiased), var.dim(x, dim, unbiased, keepdim) and
    var.correction(x, dim, correction, keepdim) (std alike)."""
    x = _t(ctx, x)
    args = list(args)
    if args and isinstance(args[0], bool):
        unbiased = args.pop(0)
    elif args:
        dim = args.pop(0)
        if args:
            second = args.pop(0)
            if isinstance(second, bool):
                unbiased = second
            else:
                correction = second
        if args:
            keepdim = args.pop(0)
    ddof = int(correction) if correction is not None else (0 if unbiased is False else 1)
    axes = _dims(ctx, x, dim) or list(range(ctx.rank(x)))
    shape = _static(ctx, x)
    count = int(np.prod([shape[a] for a in axes]))
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    total = op.sum(op.multiply(centred, centred), axis=axes, keepdims=bool(keepdim))
    var = op.divide(total, ctx.const(max(count - ddof, 0), x))
    return op.sqrt(var) if node.kind == "aten::std" else var


@aten("norm", "linalg_vector_norm", accepts=lambda a: len(a) < 2 or a[1] in (None, 2, 2.0))
def _norm(ctx, node, x, p=2, dim=None, keepdim=False, *rest):
    x = _t(ctx, x)
    axes = _dims(ctx, x, dim)
    return op.sqrt(op.sum(op.multiply(x, x), axis=axes, keepdims=bool(keepdim)))


# -------------------------------------------------------- constructors

def _full(ctx, size, value, dtype):
    name = dtype_name(dtype) or ("float32" if isinstance(value, float) else "int64")
    if any(not isinstance(s, (int, np.integer)) for s in size):  # a size the data decides (zeros_like(x[mask]))
        return op.broadcast_to(graph.Constant(np.asarray(value, dtype=name)), shape=list(size))
    return np.full([int(s) for s in size], value, dtype=name)


@aten("zeros", "ones", "full", "empty")
def _zeros(ctx, node, size, *args, dtype=None, **kwargs):
    value = {"aten::zeros": 0, "aten::ones": 1, "aten::empty": 0}.get(node.kind)
    if value is None:
        value, args = args[0], args[1:]
    if dtype is None and args and (isinstance(args[0], int) or "dtype" in type(args[0]).__name__):
        dtype = args[0]
    return _full(ctx, size, value, dtype if dtype is not None else (None if node.kind == "aten::full" else 6))


@aten("zeros_like", "ones_like", "full_like", "empty_like", "new_zeros", "new_ones", "new_full", "new_empty",
      "fill")
def _like(ctx, node, x, *args, dtype=None, **kwargs):
    x = _t(ctx, x)
    kind = node.kind.replace("aten::", "")
    shape, args = (args[0], args[1:]) if kind.startswith("new_") else (ctx.shape(x), args)
    if kind in ("full_like", "new_full", "fill"):
        value, args = args[0], args[1:]
    else:
        value = 1 if "ones" in kind else 0
    if not isinstance(value, (int, float, bool)):
        return op.broadcast_to(ctx.expr(_t(ctx, value), ctx.dtype(x)), shape=list(shape))
    if dtype is None and args and isinstance(args[0], int) and not isinstance(args[0], bool):
        dtype = args[0]
    return _full(ctx, shape, value, dtype if dtype is not None else ctx.dtype(x))


@aten("zero", "zero_")
def _zero(ctx, node, x):
    x = _t(ctx, x)
    return op.broadcast_to(ctx.const(0, x), shape=_static(ctx, x))


def _is_dimension(v):
    """Whether v is a symbolic dimension (a tir expression from a symbolic
    trace's shape arithmetic)."""
    return tir.is_node(v, "tir.PrimExpr")


@aten("arange")
def _arange(ctx, node, *args, dtype=None, **kwargs):
    symbolic = [a for a in args if _is_dimension(a)]
    if symbolic:
        # arange(n), arange(start, n[, step]) up to a symbolic length n (a
        # symbolic trace's positions): Loom's arange by its length.
        bounds = [a for a in args if _is_dimension(a) or (isinstance(a, int) and not isinstance(a, bool))]
        start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (tuple(bounds) + (1,))[:3]
        if _is_dimension(start) or _is_dimension(step) or not isinstance(step, int) or step <= 0:
            raise Unsupported("arange with a symbolic start or step (a symbolic end, integer start and step > 0, "
                              "is)")
        extent = end - start if step == 1 else tir.max(tir.floordiv(end - start + (step - 1), step), 0)
        return op.arange(extent=extent, start=float(start), step=float(step), dtype=dtype_name(dtype) or "int64")
    numbers = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
    if len(args) > 3 and dtype is None and isinstance(args[-4], int):  # TorchScript: (start, end, step, dtype, ...)
        dtype = args[-4]
    if len(numbers) == 1:
        start, end, step = 0, numbers[0], 1
    elif len(numbers) == 2:
        (start, end), step = numbers, 1
    else:
        start, end, step = numbers[:3]
    name = dtype_name(dtype) or ("float32" if any(isinstance(v, float) for v in (start, end, step)) else "int64")
    return np.arange(start, end, step, dtype=name)


@aten("im2col")
def _im2col(ctx, node, x, kernel_size, dilation, padding, stride):
    # F.unfold: every window's values as a column, (N, C * KH * KW, L) with
    # the kernel's taps inside each channel: one strided slice of the
    # padded input per tap, stacked after the channel axis.
    x = _t(ctx, x)
    if ctx.rank(x) != 4:
        raise Unsupported("im2col of an input that is not (N, C, H, W)")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    n, c, h, w = ctx.shape(x)
    if not all(isinstance(d, int) for d in (c, h, w)):
        raise Unsupported("im2col of an input whose channels, height or width are symbolic")
    if ph or pw:
        x = op.pad(x, pad_width=[0, 0, 0, 0, ph, ph, pw, pw])
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise Unsupported(f"im2col with a {kh}x{kw} window larger than the padded {h + 2 * ph}x{w + 2 * pw} input")
    taps = [op.expand_dims(window_tap(x, i, j, (sh, sw), (dh, dw), (oh, ow)), axis=2)
            for i in range(kh) for j in range(kw)]
    stacked = taps[0] if len(taps) == 1 else op.concat(*taps, axis=2)  # N C KH*KW OH OW
    return op.reshape(stacked, shape=[n if isinstance(n, int) else -1, c * kh * kw, oh * ow])


def _torch_linspace(start, end, steps, name):
    """torch.linspace's values, computed by PyTorch itself: its CPU kernel
    counts up from start and down from end in vectors, so its bits depend
    on its build."""
    import torch
    if name in ("bfloat16", "float16", "bool"):
        raise Unsupported(f"linspace of {name}")
    return torch.linspace(start, end, steps, dtype=getattr(torch, name)).numpy()


@aten("linspace")
def _linspace(ctx, node, start, end, steps, dtype=None, *rest, **kwargs):
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end, steps)):
        raise Unsupported("linspace with a run-time start, end or number of steps")
    return _torch_linspace(start, end, int(steps), dtype_name(dtype) or "float32")


@aten("affine_grid_generator")
def _affine_grid(ctx, node, theta, size, align_corners):
    # F.affine_grid: the output's pixel centres in [-1, 1] (a constant
    # grid, its last coordinate 1) times theta transposed, per batch entry.
    theta = _t(ctx, theta)
    size = [int(d) if isinstance(d, (int, np.integer)) else d for d in size]
    spatial = size[2:][::-1]  # x (width) first
    if len(spatial) not in (2, 3) or not all(isinstance(d, int) for d in spatial):
        raise Unsupported(f"affine_grid of size {size} (2-D or 3-D, static spatial extents)")
    axes = []
    for n in spatial:
        values = _torch_linspace(-1, 1, n, "float32") if n > 1 else np.zeros(n, np.float32)
        if not align_corners and n > 1:
            values = values * np.float32(n - 1) / np.float32(n)  # as PyTorch scales them, in float32
        axes.append(values)
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # each of shape (D,) H, W; x first
    base = np.stack(mesh + [np.ones_like(mesh[0])], axis=-1).reshape(-1, len(spatial) + 1)
    grid = op.matmul(ctx.expr(base.astype(ctx.dtype(theta))), theta, transpose_b=True)  # N, points, k
    batch = ctx.shape(theta)[0]
    return op.reshape(grid, shape=[batch if isinstance(batch, int) else -1] + spatial[::-1] + [len(spatial)])


@aten("scalar_tensor", "tensor")
def _scalar_tensor(ctx, node, value, *args, dtype=None, **kwargs):
    return np.asarray(value, dtype=dtype_name(dtype) or ("float32" if isinstance(value, float) else "int64"))


@aten("size")
def _size(ctx, node, x, dim=None):
    shape = ctx.shape(_t(ctx, x))
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported("the size of a symbolic shape")
    return list(shape) if dim is None else shape[_axis(int(dim), len(shape))]


# ----------------------------------------------------------- resampling

def _interpolate(ctx, x, size, scales, mode, align_corners):
    x = _t(ctx, x)
    shape = _static(ctx, x)
    spatial = len(shape) - 2
    if size is not None:
        out = [int(s) for s in size]
        given = []
    else:
        scales = [float(s) for s in scales]
        out = [int(math.floor(d * s)) for d, s in zip(shape[2:], scales)]
        given = [1.0, 1.0] + scales
    if mode == "nearest":
        transform, nearest = "asymmetric", "floor"
    else:
        transform = "align_corners" if align_corners else ("pytorch_half_pixel" if mode != "cubic" else "half_pixel")
        nearest = "round_prefer_floor"
    loom_mode = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                 "bicubic": "cubic"}.get(mode)
    if loom_mode is None:
        raise Unsupported(f"interpolation mode {mode!r}")
    if len(out) != spatial:
        raise Unsupported(f"{len(out)} sizes for {spatial} spatial axes")
    return op.resize(x, sizes=shape[:2] + out, scales=given, mode=loom_mode, coordinate_transformation_mode=transform,
                     nearest_mode=nearest, cubic_coeff_a=-0.75)


@aten("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d")
def _upsample_nearest(ctx, node, x, size=None, *scales):
    if isinstance(size, (list, tuple)) and len(scales) == 1 and isinstance(scales[0], (list, tuple)):
        return _interpolate(ctx, x, size, scales[0], "nearest", False)  # .vec(input, size, scale_factors)
    if size is None and scales and isinstance(scales[0], (list, tuple)):
        return _interpolate(ctx, x, None, scales[0], "nearest", False)
    return _interpolate(ctx, x, size, [s for s in scales if s is not None], "nearest", False)


@aten("upsample_bilinear2d", "upsample_linear1d", "upsample_bicubic2d", "upsample_trilinear3d")
def _upsample_linear(ctx, node, x, size, align_corners, *scales):
    mode = "bicubic" if "bicubic" in node.kind else "bilinear"
    if len(scales) == 1 and isinstance(scales[0], (list, tuple)):  # .vec
        return _interpolate(ctx, x, size, scales[0], mode, bool(align_corners))
    return _interpolate(ctx, x, size, [s for s in scales if s is not None], mode, bool(align_corners))


@aten("grid_sampler_2d", "grid_sampler")
def _grid_sampler(ctx, node, x, grid, interpolation, padding, align_corners, *rest):
    modes, paddings = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")
    if not 0 <= int(interpolation) < 3 or not 0 <= int(padding) < 3:
        raise Unsupported(f"grid_sampler's interpolation {interpolation} or padding {padding}")
    x = _t(ctx, x)
    if ctx.rank(x) != 4:
        raise Unsupported("grid_sampler of a 5-D input (3-D sampling)")
    return op.grid_sample(x, _t(ctx, grid), mode=modes[int(interpolation)], padding_mode=paddings[int(padding)],
                          align_corners=bool(align_corners))


# ------------------------------------------------------------ attention

@aten("scaled_dot_product_attention")
def _sdpa(ctx, node, q, k, v, mask=None, dropout=0.0, causal=False, *rest):
    if mask is not None or causal:
        raise Unsupported("a mask or is_causal")
    q, k, v = _t(ctx, q), _t(ctx, k), _t(ctx, v)
    scale = 1 / math.sqrt(ctx.shape(q)[-1])
    scores = op.softmax(op.multiply(op.matmul(q, k, transpose_b=True), ctx.const(scale, q)), axis=-1)
    return op.matmul(scores, v)



# ------------------------------------------------------------ recurrent

def _recurrent(ctx, kind, x, hidden, params, has_biases, num_layers, train, bidirectional, batch_first):
    """aten::rnn_tanh / rnn_relu / gru / lstm unrolled over the (static)
    sequence: per layer and direction, the input projection of every step
    is one dense; each step adds the recurrent projection and applies
    PyTorch's gates (GRU: r, z, n with the reset inside the new gate's
    recurrent term; LSTM: i, f, g, o).  Returns (output, h_n[, c_n])."""
    if train:
        raise Unsupported("an RNN in training mode (dropout between layers)")
    x = _t(ctx, x)
    if batch_first:
        x = op.transpose(x, axes=[1, 0, 2])
    seq = _static(ctx, x)[0]
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    h0, c0 = (hidden[0], hidden[1]) if kind == "lstm" else (hidden, None)
    h0 = _t(ctx, h0)
    c0 = None if c0 is None else _t(ctx, c0)
    dtype = ctx.dtype(x)
    weights = [p if isinstance(p, np.ndarray) else _t(ctx, p) for p in params]
    size = ctx.shape(h0)[-1]
    layer_in = x
    last_h, last_c = [], []

    def dense(v, w):
        return op.dense(v, ctx.expr(w, dtype)) if isinstance(w, np.ndarray) else op.matmul(v, w, transpose_b=True)

    def piece(v, k):
        return op.slice(v, begin=[k * size], end=[(k + 1) * size], axes=[-1])

    for layer in range(int(num_layers)):
        outs = []
        for d in range(dirs):
            base = (layer * dirs + d) * per
            w_ih, w_hh = weights[base], weights[base + 1]
            b_ih = ctx.expr(weights[base + 2], dtype) if has_biases else None
            b_hh = ctx.expr(weights[base + 3], dtype) if has_biases else None
            projected = dense(layer_in, w_ih)  # (seq, batch, gates * size)
            if b_ih is not None:
                projected = op.add(projected, b_ih)
            index = layer * dirs + d
            h = op.squeeze(op.slice(h0, begin=[index], end=[index + 1], axes=[0]), axis=[0])
            c = None if c0 is None else op.squeeze(op.slice(c0, begin=[index], end=[index + 1], axes=[0]), axis=[0])
            steps = {}
            for t in (range(seq) if d == 0 else range(seq - 1, -1, -1)):
                xt = op.squeeze(op.slice(projected, begin=[t], end=[t + 1], axes=[0]), axis=[0])
                rec = dense(h, w_hh)
                if b_hh is not None:
                    rec = op.add(rec, b_hh)
                if kind == "gru":
                    r = op.sigmoid(op.add(piece(xt, 0), piece(rec, 0)))
                    z = op.sigmoid(op.add(piece(xt, 1), piece(rec, 1)))
                    n = op.tanh(op.add(piece(xt, 2), op.multiply(r, piece(rec, 2))))
                    h = op.add(op.multiply(op.subtract(ctx.const(1, n), z), n), op.multiply(z, h))
                elif kind == "lstm":
                    pre = op.add(xt, rec)
                    i, f = op.sigmoid(piece(pre, 0)), op.sigmoid(piece(pre, 1))
                    g, o = op.tanh(piece(pre, 2)), op.sigmoid(piece(pre, 3))
                    c = op.add(op.multiply(f, c), op.multiply(i, g))
                    h = op.multiply(o, op.tanh(c))
                else:
                    pre = op.add(xt, rec)
                    h = op.tanh(pre) if kind == "rnn_tanh" else op.relu(pre)
                steps[t] = h
            outs.append(op.concat(*[op.expand_dims(steps[t], axis=0) for t in range(seq)], axis=0))
            last_h.append(h)
            last_c.append(c)
        layer_in = outs[0] if dirs == 1 else op.concat(*outs, axis=2)
    output = op.transpose(layer_in, axes=[1, 0, 2]) if batch_first else layer_in
    h_n = op.concat(*[op.expand_dims(h, axis=0) for h in last_h], axis=0)
    if kind == "lstm":
        return output, h_n, op.concat(*[op.expand_dims(c, axis=0) for c in last_c], axis=0)
    return output, h_n


@aten("gru", "rnn_tanh", "rnn_relu", accepts=lambda a: len(a) == 9 and not a[6])
def _gru(ctx, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _recurrent(ctx, node.kind.replace("aten::", ""), x, hx, params, has_biases, num_layers, train,
                      bidirectional, batch_first)


@aten("lstm", accepts=lambda a: len(a) == 9 and not a[6])
def _lstm(ctx, node, x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _recurrent(ctx, "lstm", x, hx, params, has_biases, num_layers, train, bidirectional, batch_first)


from . import aten_complex  # noqa: E402,F401 (registers the complex converters)
