"""Builders of graph functions (docs/python.md, "Builders"): variables,
constants, calls, tuples, let, if and functions.  Operators are called
through `loom.op`; a graph expression also supports `+ - * / @` and
unary `-` (add, subtract, multiply, divide, matmul, neg) and `t[i]` on a
tuple."""
from . import _core
from ._ffi import call, is_node, type_name
from .ir import TensorType, GlobalVar, Op


def Var(name, type=None, *, shape=None, dtype="float32"):
    """%name, annotated with `type` (a loom type) or with `shape`/`dtype`
    (a TensorType); unannotated when neither is given."""
    if type is not None and shape is not None:
        raise _core.TypeError("graph.Var takes a type or a shape, not both")
    if shape is not None:
        type = TensorType(shape, dtype)
    return call("graph.Var", name, type)


def Constant(value, dtype=None):
    """A constant tensor holding a copy of `value` (a NumPy array, a
    DLPack tensor, a Python scalar or nested list; a bfloat16 NDArray
    keeps its dtype)."""
    import numpy as np
    if isinstance(value, _core.NDArray):
        if dtype is None and str(value.dtype) == "bfloat16":  # NumPy has none: the bits, copied, as bfloat16
            bits = np.array(value.view("int16").numpy(), copy=True, order="C")
            return call("graph.Constant", _core.ndarray_from_dlpack(bits).view("bfloat16"))
        value = value.numpy()
    try:
        array = np.array(value, dtype=None if dtype is None else np.dtype(str(dtype)), copy=True, order="C")
    except (TypeError, ValueError) as e:
        raise _core.TypeError(f"graph.Constant: cannot make a tensor of {type_name(value)}: {e}") from None
    if array.dtype.kind not in "biuf":
        raise _core.TypeError(f"graph.Constant: a constant holds numbers, got a NumPy array of {array.dtype}")
    if dtype is None and array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)  # a Python float is float32, as in the text format
    return call("graph.Constant", _core.ndarray_from_dlpack(array))


def _expr(value, what, like=None):
    """`value` as a graph expression: nodes pass, lists and tuples become
    a Tuple, numbers and arrays a Constant (of `like`'s dtype when known)."""
    if is_node(value, "ir.Expr"):
        return value
    if isinstance(value, (list, tuple)):
        return Tuple(value)
    if isinstance(value, (bool, int, float)) or hasattr(value, "__array__") or hasattr(value, "__dlpack__"):
        return Constant(value, dtype=None if isinstance(value, bool) else _dtype_of(like))
    raise _core.TypeError(f"{what} must be a graph expression, got {type_name(value)}")


_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _dtype_of(expr):
    """The element dtype of `expr` as far as it reads without type
    inference (a Var's annotation, a Constant, an operator call that keeps
    its first input's dtype), or None."""
    for _ in range(64):  # a chain of calls; deeper is left to inference
        if expr is None:
            return None
        t = getattr(expr, "checked_type", None)
        if is_node(t, "ir.TensorType"):
            return str(t.dtype)
        if is_node(expr, "graph.Var"):
            t = expr.annotation
            return str(t.dtype) if is_node(t, "ir.TensorType") else None
        if is_node(expr, "graph.Constant"):
            return str(expr.data.dtype)
        if not (is_node(expr, "graph.Call") and is_node(expr.callee, "ir.Op")) or len(expr.args) == 0:
            return None
        name = expr.callee.name
        if name == "cast":
            return str(expr.attrs["dtype"])
        if name in _COMPARISONS:
            return "bool"
        if name == "where":
            expr = expr.args[1]
            continue
        expr = expr.args[0]
    return None


def Call(callee, args, attrs=None, type_args=None):
    """callee(args...) with attributes; callee an operator (use loom.op),
    a GlobalVar, a function or a variable."""
    args = [_expr(a, f"argument {i}") for i, a in enumerate(args)]
    return call("graph.Call", callee, args, attrs or {}, list(type_args or []))


def Tuple(fields):
    return call("graph.Tuple", [_expr(f, f"field {i}") for i, f in enumerate(fields)])


def TupleGetItem(tuple_value, index):
    return call("graph.TupleGetItem", _expr(tuple_value, "the tuple"), index)


def Let(var, value, body):
    return call("graph.Let", var, _expr(value, "the value"), _expr(body, "the body"))


def If(cond, then_branch, else_branch):
    return call("graph.If", _expr(cond, "the condition"), _expr(then_branch, "then"), _expr(else_branch, "else"))


def Function(params, body, ret_type=None, attrs=None):
    """fn(params) -> ret_type { body }; ret_type may be left to type inference."""
    return call("graph.Function", list(params), _expr(body, "the body"), ret_type, attrs or {})


def call_dps(function, args, out_type):
    """call_dps<out_type>(@function, (args...)): calls a prim or extern
    function of the module in destination-passing style."""
    callee = GlobalVar(function) if isinstance(function, str) else function
    return call("graph.Call", Op("call_dps"), [callee, Tuple(args)], {}, [out_type])


def call_packed(name, args, out_type):
    """call_packed<out_type>((args...), name=...): calls a global registry function."""
    return call("graph.Call", Op("call_packed"), [Tuple(args)], {"name": name}, [out_type])
