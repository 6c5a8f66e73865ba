"""Every operator as a Python function (docs/python.md, "Builders"):
`loom.op.relu(x)`, `loom.op.conv2d(x, w, strides=[2, 2])`.  The names
come from the operator registry and the discovered plugins' manifests, so
an operator a plugin adds appears here with nothing to bind; the first
call loads the plugin that provides it.  Inputs are checked against the
operator's arity and attributes against its schema when the call is made
(loom.TypeError naming the operator and the attribute, with a suggestion).
"""
import difflib
import functools

from . import _core
from ._ffi import call, is_node
from . import graph as _graph


def list_ops():
    """Every operator registered or provided by a discovered plugin."""
    return list(call("ir.op_list"))


def info(name):
    """{name, num_inputs, attrs, pattern, doc, owner} of an operator."""
    d = call("ir.op_info", name)
    out = dict(d.items())
    out["attrs"] = [dict(a.items()) for a in d["attrs"]]
    return out


@functools.lru_cache(maxsize=None)
def _builder(name):
    def build(*inputs, **attrs):
        entry = _info(name)
        arity = entry["num_inputs"]
        if arity >= 0 and len(inputs) != arity:
            raise _core.TypeError(f"operator '{name}' takes {arity} input{'s' if arity != 1 else ''}, "
                                  f"got {len(inputs)}")
        like = next((x for x in inputs if is_node(x, "ir.Expr")), None)
        args = [_graph._expr(x, f"{name}: input {i}", like) for i, x in enumerate(inputs)]
        call("ir.op_check_attrs", name, attrs)  # raises with the attribute and a suggestion
        return call("graph.Call", call("ir.Op", name), args, attrs, [])
    build.__name__ = name
    build.__qualname__ = name
    build.__doc__ = f"loom.op.{name}: builds a call of the operator '{name}' (see loom.op.info('{name}'))"
    return build


@functools.lru_cache(maxsize=None)
def _info(name):
    return info(name)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    names = list_ops()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise AttributeError(f"loom.op has no operator '{name}'{hint}")
    builder = globals()[name] = _builder(name)  # later lookups skip this function
    return builder


def __dir__():
    return sorted(set(globals()) | set(list_ops()))
