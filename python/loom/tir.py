"""Builders of prim functions (docs/python.md, "Builders"): scalar
expressions, buffers, loads and stores, loops and the other statements.
They call the C++ constructors, so dtype rules are the core's: both
operands of a binary operator have one dtype (a Python number takes the
other operand's), a load has its buffer's element type.  Python numbers
alone are int64 and float32, as literals are in the text format.
A PrimExpr supports `+ - * / // % < <= > >=` and unary `-`; `/` is
tir.Div, `//` and `%` are floor division and modulo; `buffer[i, j]` is a
load.  Use eq/ne for == and != (those compare objects in Python)."""
from . import _core
from ._ffi import call, is_node, type_name

_INT64 = _core.DataType("int64")
_FLOAT32 = _core.DataType("float32")


def _dtype(d):
    return d if isinstance(d, _core.DataType) else _core.DataType(str(d))


def const(value, dtype=None):
    """An IntImm or FloatImm; a bool is a bool IntImm."""
    if isinstance(value, bool):
        return call("tir.IntImm", _dtype(dtype or "bool"), int(value))
    if isinstance(value, int):
        t = _dtype(dtype) if dtype is not None else _INT64
        if str(t).startswith("float") or str(t).startswith("bfloat"):
            return call("tir.FloatImm", t, float(value))
        return call("tir.IntImm", t, value)
    if isinstance(value, float):
        return call("tir.FloatImm", _dtype(dtype) if dtype is not None else _FLOAT32, value)
    raise _core.TypeError(f"tir.const takes a Python number, got {type_name(value)}")


def _scalar_of(dtype):
    """The element type of a (maybe vector) dtype."""
    text = str(dtype)
    return _core.DataType(text.split("x")[0]) if dtype.lanes > 1 else dtype


def expr(value, like=None, what="value"):
    """`value` as a PrimExpr; a Python number takes `like`'s dtype
    (broadcast to its lanes)."""
    if is_node(value, "tir.PrimExpr"):
        return value
    if isinstance(value, (bool, int, float)):
        if like is None or isinstance(value, bool):
            return const(value)
        element = _scalar_of(like.dtype)
        if isinstance(value, float) and not str(element).startswith(("float", "bfloat")):
            raise _core.TypeError(f"{what}: the float {value} where a {element} is expected")
        out = const(value, element)
        return Broadcast(out, like.dtype.lanes) if like.dtype.lanes > 1 else out
    raise _core.TypeError(f"{what} must be a tir expression or a number, got {type_name(value)}")


def _pair(a, b):
    a_node, b_node = is_node(a, "tir.PrimExpr"), is_node(b, "tir.PrimExpr")
    return expr(a, b if b_node and not a_node else None), expr(b, a if a_node and not b_node else None)


def _binary(key):
    def make(a, b):
        return call(key, *_pair(a, b))
    make.__name__ = key.split(".")[1].lower()
    return make


add, sub, mul, div = _binary("tir.Add"), _binary("tir.Sub"), _binary("tir.Mul"), _binary("tir.Div")
floordiv, floormod = _binary("tir.FloorDiv"), _binary("tir.FloorMod")
min, max = _binary("tir.Min"), _binary("tir.Max")  # noqa: A001 (tir names, as in the text format)
eq, ne, lt, le, gt, ge = (_binary(k) for k in ("tir.EQ", "tir.NE", "tir.LT", "tir.LE", "tir.GT", "tir.GE"))
logical_and, logical_or = _binary("tir.And"), _binary("tir.Or")


def logical_not(a):
    return call("tir.Not", expr(a))


def simplify(e):
    """`e` simplified: constants folded, like terms combined (an IntImm when
    the value is known)."""
    return call("tir.simplify", expr(e))


def Var(name, dtype="int64"):
    """A scalar variable (a loop variable, a scalar parameter)."""
    return call("tir.Var", name, _dtype(dtype))


def Select(condition, true_value, false_value):
    t, f = _pair(true_value, false_value)
    return call("tir.Select", expr(condition), t, f)


def Cast(dtype, value):
    return call("tir.Cast", _dtype(dtype), expr(value))


def Call(dtype, op, args):
    """An intrinsic call, e.g. Call("float32", "exp", [x])."""
    return call("tir.Call", _dtype(dtype), op, [expr(a) for a in args])


def Ramp(base, stride, lanes):
    base = expr(base)
    return call("tir.Ramp", base, expr(stride, base), lanes)


def Broadcast(value, lanes):
    return call("tir.Broadcast", expr(value), lanes)


def Let(var, value, body):
    return call("tir.Let", var, expr(value, var), expr(body))


def Buffer(name, shape, dtype="float32", scope="global"):
    """A buffer of `shape` (ints or expressions) and element `dtype`."""
    return call("tir.Buffer", name, _dtype(dtype), [expr(d) for d in shape], scope)


def _indices(indices):
    if not isinstance(indices, (list, tuple)):
        indices = [indices]
    return [expr(i, what="an index") for i in indices]


def BufferLoad(buffer, indices):
    return call("tir.BufferLoad", buffer, _indices(indices))


def BufferStore(buffer, value, indices):
    """buffer[indices] = value; a number takes the buffer's dtype."""
    if not is_node(buffer, "tir.Buffer"):
        raise _core.TypeError(f"BufferStore: the buffer must be a tir.Buffer, got {type_name(buffer)}")
    idx = _indices(indices)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = const(value, buffer.dtype)
        lanes = idx[-1].dtype.lanes if idx else 1
        if lanes > 1:
            value = Broadcast(value, lanes)
    return call("tir.BufferStore", buffer, expr(value), idx)


def For(loop_var, min, extent, body, kind="serial", thread="", annotations=None):  # noqa: A002
    """for loop_var from min extent extent kind { body }; kind is serial,
    parallel, vectorized, unrolled or thread_binding (with `thread`)."""
    return call("tir.For", loop_var, expr(min, loop_var), expr(extent, loop_var), kind, body, thread,
                annotations or {})


def SeqStmt(seq):
    return call("tir.SeqStmt", list(seq))


def Allocate(buffer, body):
    return call("tir.Allocate", buffer, body)


def LetStmt(var, value, body):
    return call("tir.LetStmt", var, expr(value, var), body)


def IfThenElse(condition, then_case, else_case=None):
    return call("tir.IfThenElse", expr(condition), then_case, else_case)


def Evaluate(value):
    return call("tir.Evaluate", expr(value))


def AttrStmt(key, value, body):
    return call("tir.AttrStmt", key, expr(value), body)


def PrimFunc(params, body, ret=None, attrs=None):
    """prim_func(params) { body }: params are buffers and scalar vars; the
    outputs of a function called with call_dps are its last buffers."""
    return call("tir.PrimFunc", list(params), body, ret, attrs or {})
Schedule = _core.Schedule
