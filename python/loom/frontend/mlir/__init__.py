"""TOSA in and out (docs/tosa.md): `from_tosa(text_or_path)` imports a
func.func of TOSA operations as a Loom graph function through a
converter registry like the ONNX importer's; `to_mlir(module)` (also
`module.to_mlir()`) prints graph functions as TOSA."""
import os

import numpy as np

from ... import _core, graph, ir, op, tir
from .. import UnsupportedOperatorError
from ._parse import MlirSyntaxError, Opaque, TensorType, parse

__all__ = ["from_tosa", "to_mlir", "converter", "supported_operators", "ConversionError", "MlirSyntaxError", "Opaque",
           "TensorType", "parse"]

_CONVERTERS = {}


def converter(name, replace=False):
    """Registers the decorated function as the converter of the TOSA
    operation `name` ("tosa.conv2d"): fn(op, args) with `op` the parsed
    operation (attrs, operand_types, result_types, where) and `args` its
    operands (Loom expressions, or NumPy arrays for constants); it returns
    the result (an expression or an array)."""
    def register(fn):
        if name in _CONVERTERS and not replace:
            raise _core.LookupError(f"TOSA operation '{name}' has a converter already; pass replace=True")
        _CONVERTERS[name] = fn
        return fn
    return register


def supported_operators():
    return sorted(_CONVERTERS)


class ConversionError(_core.TypeError):
    """An operation a converter cannot take as written, at file:line:col."""


def _refuse(o, what):
    raise ConversionError(f"{o.where}: {o.name}: {what}")


# ---- the converters' helpers ---------------------------------------------------

def _expr(v):
    return graph.Constant(v) if isinstance(v, np.ndarray) else v


def _const(o, v, what):
    if not isinstance(v, np.ndarray):
        _refuse(o, f"{what} must be a constant (a tosa.const), not a value computed at run time")
    return v


def _attr(o, key, default=None, kind=None):
    if key not in o.attrs:
        if default is None:
            _refuse(o, f"has no attribute '{key}'")
        return default
    v = o.attrs[key]
    if isinstance(v, Opaque) or (kind is not None and not isinstance(v, kind)):
        _refuse(o, f"attribute {key} = {getattr(v, 'text', v)} is not one Loom takes")
    return v


def _no(o, *keys):
    """Refuses attributes that change the meaning (quantization)."""
    for k in keys:
        if k in o.attrs:
            _refuse(o, f"attribute '{k}' (quantized TOSA) is not imported")


def _pads(pad):
    """TOSA's [top, bottom, left, right] as Loom's [top, left, bottom, right]."""
    top, bottom, left, right = pad
    return [top, left, bottom, right]


def _with_bias(o, y, bias):
    if isinstance(bias, np.ndarray) and not bias.any():
        return y  # a zero bias (what to_mlir writes for a convolution without one)
    return op.add(y, _expr(bias))


# ---- the operators (docs/tosa.md) ---------------------------------------------------

@converter("tosa.const")
def _const_op(o, args):
    value = _attr(o, "value")
    if not isinstance(value, np.ndarray):
        _refuse(o, "value must be a dense<...> tensor")
    return value


@converter("tosa.conv2d")
def _conv2d(o, args):
    _no(o, "quantization_info")
    x, w, b = args
    y = op.conv2d(_expr(x), _expr(w), strides=_attr(o, "stride", [1, 1], list), padding=_pads(_attr(o, "pad", [0] * 4)),
                  dilation=_attr(o, "dilation", [1, 1], list), data_layout="NHWC", kernel_layout="OHWI")
    return _with_bias(o, y, b)


@converter("tosa.depthwise_conv2d")
def _depthwise(o, args):
    _no(o, "quantization_info")
    x, w, b = args
    kh, kw, c, m = o.operand_types[1].shape
    if isinstance(w, np.ndarray):
        w = np.ascontiguousarray(w.reshape(kh, kw, c * m).transpose(2, 0, 1).reshape(c * m, kh, kw, 1))
    else:
        w = op.reshape(op.transpose(op.reshape(w, shape=[kh, kw, c * m]), axes=[2, 0, 1]), shape=[c * m, kh, kw, 1])
    y = op.conv2d(_expr(x), _expr(w), strides=_attr(o, "stride", [1, 1], list), padding=_pads(_attr(o, "pad", [0] * 4)),
                  dilation=_attr(o, "dilation", [1, 1], list), groups=c, data_layout="NHWC", kernel_layout="OHWI")
    return _with_bias(o, y, b)


@converter("tosa.fully_connected")
def _fully_connected(o, args):
    _no(o, "quantization_info")
    x, w, b = args
    return _with_bias(o, op.dense(_expr(x), _expr(w)), b)


@converter("tosa.matmul")
def _matmul(o, args):
    _no(o, "quantization_info")
    return op.matmul(_expr(args[0]), _expr(args[1]))


def _binary(name, loom_op):
    @converter(name)
    def convert(o, args):
        if name == "tosa.mul" and _attr(o, "shift", 0, int) != 0:
            _refuse(o, f"shift = {o.attrs['shift']}: a fixed-point multiply is not imported")
        return loom_op(_expr(args[0]), _expr(args[1]))
    return convert


_binary("tosa.add", op.add)
_binary("tosa.sub", op.subtract)
_binary("tosa.mul", op.multiply)


@converter("tosa.clamp")
def _clamp(o, args):
    t = o.operand_types[0]
    if t.dtype.startswith(("float", "bfloat")):
        lo, hi = float(_attr(o, "min_fp", kind=(int, float))), float(_attr(o, "max_fp", kind=(int, float)))
    else:
        lo, hi = float(_attr(o, "min_int", kind=int)), float(_attr(o, "max_int", kind=int))
    return op.clip(_expr(args[0]), a_min=lo, a_max=hi)


@converter("tosa.reshape")
def _reshape(o, args):
    return op.reshape(_expr(args[0]), shape=list(_attr(o, "new_shape", kind=list)))


@converter("tosa.transpose")
def _transpose(o, args):
    perms = _const(o, args[1], "perms")
    return op.transpose(_expr(args[0]), axes=[int(p) for p in perms.reshape(-1)])


def _pool(name, loom_op, **extra):
    @converter(name)
    def convert(o, args):
        _no(o, "quantization_info")
        return loom_op(_expr(args[0]), pool_size=_attr(o, "kernel", kind=list), strides=_attr(o, "stride", kind=list),
                       padding=_pads(_attr(o, "pad", kind=list)), layout="NHWC", **extra)
    return convert


_pool("tosa.max_pool2d", op.max_pool2d)
_pool("tosa.avg_pool2d", op.avg_pool2d, count_include_pad=False)


def _reduce(name, loom_op):
    @converter(name)
    def convert(o, args):
        return loom_op(_expr(args[0]), axis=[_attr(o, "axis", kind=int)], keepdims=True)
    return convert


_reduce("tosa.reduce_sum", op.sum)
_reduce("tosa.reduce_max", op.max)


def _unary(name, fn):
    converter(name)(lambda o, args: fn(_expr(args[0])))


_unary("tosa.exp", op.exp)
_unary("tosa.rsqrt", op.rsqrt)
_unary("tosa.tanh", op.tanh)
_unary("tosa.sigmoid", op.sigmoid)


@converter("tosa.reciprocal")
def _reciprocal(o, args):
    return op.divide(graph.Constant(np.ones((), o.result_types[0].dtype)), _expr(args[0]))


@converter("tosa.concat")
def _concat(o, args):
    return op.concat(*[_expr(a) for a in args], axis=_attr(o, "axis", kind=int))


@converter("tosa.pad")
def _pad(o, args):
    padding = _const(o, args[1], "padding").reshape(-1)
    value = 0.0
    if len(args) > 2:
        value = float(_const(o, args[2], "pad_const").reshape(-1)[0])
    return op.pad(_expr(args[0]), pad_width=[int(p) for p in padding], pad_value=value)


@converter("tosa.slice")
def _slice(o, args):
    start, size = _attr(o, "start", kind=list), _attr(o, "size", kind=list)
    return op.slice(_expr(args[0]), begin=start, end=[s + n for s, n in zip(start, size)])


@converter("tosa.cast")
def _cast(o, args):
    src, dst = o.operand_types[0].dtype, o.result_types[0].dtype
    x = _expr(args[0])
    if src.startswith(("float", "bfloat")) and not dst.startswith(("float", "bfloat")) and dst != "bool":
        x = op.round(x)  # TOSA rounds to nearest even; Loom's cast truncates
    return op.cast(x, dtype=dst)


# ---- the importer ----------------------------------------------------------------------

def from_tosa(source, entry=None, filename=None):
    """The IRModule of a TOSA function (`source`: MLIR text, or a path to
    a .mlir file) as @main.  Every operation without a converter is listed
    in one UnsupportedOperatorError; text that does not parse is an
    MlirSyntaxError at file:line:col."""
    if not isinstance(source, str):
        raise _core.TypeError(f"from_tosa takes MLIR text or a path, got {type(source).__name__}")
    if "\n" not in source and source.endswith(".mlir"):
        if not os.path.isfile(source):
            raise _core.TypeError(f"{source}: cannot read: no such file")
        filename = filename or source
        with open(source) as f:
            source = f.read()
    functions = parse(source, filename or "<mlir>")
    public = [f for f in functions if not f.private and f.body is not None]
    if entry is None:
        named = [f for f in public if f.name == "main"]
        if named:
            fn = named[0]
        elif len(public) == 1:
            fn = public[0]
        else:
            raise _core.TypeError(f"{filename or '<mlir>'}: {len(public)} public functions "
                                  f"({', '.join('@' + f.name for f in public)}) and none is @main: "
                                  "from_tosa(..., entry=NAME) picks one")
    else:
        found = [f for f in functions if f.name == entry]
        if not found:
            raise _core.TypeError(f"{filename or '<mlir>'}: no function @{entry}")
        fn = found[0]
    return ir.IRModule({"main": _function(fn)})


def _function(fn):
    missing = {}
    for o in fn.body:
        if o.name not in _CONVERTERS:
            missing.setdefault(o.name, []).append(o.where)
    if missing:
        lines = [f"  {name}: {len(at)} operation{'s' if len(at) != 1 else ''}, first at {at[0]}"
                 for name, at in sorted(missing.items())]
        raise UnsupportedOperatorError(
            f"the TOSA function @{fn.name} uses {len(missing)} operation{'s' if len(missing) != 1 else ''} Loom "
            "cannot import (docs/tosa.md):\n" + "\n".join(lines))
    symbols, params, values = {}, [], {}
    for name, t in fn.params:
        shape = [symbols.setdefault(k, tir.Var(f"d{len(symbols)}")) if d is None else d for k, d in enumerate(t.shape)]
        var = graph.Var(name.lstrip("%").replace(".", "_"), shape=tuple(shape), dtype=t.dtype)
        params.append(var)
        values[name] = var
    for o in fn.body:
        args = []
        for v in o.operands:
            if v not in values:
                raise ConversionError(f"{o.where}: {o.name} uses {v}, which nothing before it defines")
            args.append(values[v])
        try:
            out = _CONVERTERS[o.name](o, args)
        except ConversionError:
            raise
        except _core.LoomError as e:
            raise ConversionError(f"{o.where}: {o.name}: {e}") from None
        if len(o.results) != 1:
            raise ConversionError(f"{o.where}: {o.name} has {len(o.results)} results; the importer takes one")
        values[o.results[0]] = out
    outs = []
    for v in fn.returns:
        if v not in values:
            raise ConversionError(f"{fn.where}: @{fn.name} returns {v}, which nothing defines")
        outs.append(_expr(values[v]))
    body = outs[0] if len(outs) == 1 else graph.Tuple(outs)
    return graph.Function(params, body)


def to_mlir(module):
    """The graph functions of `module` as MLIR text of TOSA operations
    (docs/tosa.md, "What it prints")."""
    from ._print import print_module
    return print_module(module)
