"""Every operator as a Python function (docs/python.md, "Builders"):
`loom.op.relu(x)`, `loom.op.conv2d(x, w, strides=[2, 2])`.  The names
come from the operator registry and the discovered plugins' manifests, so
an operator a plugin adds appears here with nothing to bind; the first
use of loom.op.NAME loads the plugin that provides it (the builder's
docstring is the operator's documentation).  Inputs are checked against the
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


def _doc(name):
    """The builder's docstring: what help(loom.op.NAME) shows."""
    entry = _info(name)
    arity = entry["num_inputs"]
    inputs = "any number of inputs" if arity < 0 else f"{arity} input{'s' if arity != 1 else ''}"
    lines = [f"loom.op.{name}(*inputs, **attributes): a call of the operator '{name}'.", ""]
    if entry["doc"]:
        lines += [entry["doc"], ""]
    lines.append(f"Takes {inputs}; fusion pattern {entry['pattern']}; from {entry['owner'] or 'core'}.")
    if entry["attrs"]:
        lines += ["", "Attributes:"]
        for a in entry["attrs"]:
            default = ", required" if a["default"] is None else f" = {_value(a['default'])}"
            doc = f": {a['doc']}" if a.get("doc") else ""
            lines.append(f"    {a['name']} ({a['type']}{default}){doc}")
    else:
        lines += ["", "No attributes."]
    return "\n".join(lines)


def _value(v):
    """A default as Python writes it (Loom arrays and maps as lists and dicts)."""
    if is_node(v, "Array"):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return repr(v)


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
        attrs = _coerce_attrs(entry, attrs)
        call("ir.op_check_attrs", name, attrs)  # raises with the attribute and a suggestion
        return call("graph.Call", call("ir.Op", name), args, attrs, [])
    build.__name__ = name.rsplit(".", 1)[-1]
    build.__qualname__ = name
    build.__module__ = __name__
    build.__doc__ = _doc(name)
    return build


def _coerce_attrs(entry, attrs):
    """`attrs` with a dtype attribute given as a str ("float64", a NumPy
    dtype) made a loom.DataType, as the text format reads it."""
    dtypes = {a["name"] for a in entry["attrs"] if a["type"] == "dtype"}
    if not dtypes & set(attrs):
        return attrs
    out = dict(attrs)
    for key in dtypes & set(attrs):
        value = out[key]
        if not isinstance(value, _core.DataType):
            text = str(getattr(value, "name", value))  # numpy.dtype('float64').name
            try:
                out[key] = _core.DataType(text)
            except Exception:
                raise _core.TypeError(f"operator '{entry['name']}': attribute '{key}' must be a dtype, "
                                      f"got {value!r}") from None
    return out


@functools.lru_cache(maxsize=None)
def _info(name):
    return info(name)


class _Namespace:
    """The operators whose names start with PREFIX. (`loom.op.acme.swish`
    for the operator 'acme.swish'); nested prefixes are namespaces too."""

    def __init__(self, prefix):
        self._prefix = prefix

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _lookup(f"{self._prefix}.{name}")

    def __dir__(self):
        return _children(self._prefix + ".")

    def __repr__(self):
        return f"<loom.op namespace '{self._prefix}': {', '.join(_children(self._prefix + '.'))}>"


def _children(prefix):
    """The next name component of every operator under `prefix`."""
    return sorted({n[len(prefix):].split(".")[0] for n in list_ops() if n.startswith(prefix)})


def _lookup(name):
    names = list_ops()
    if name in names:
        return _builder(name)
    if any(n.startswith(name + ".") for n in names):
        return _Namespace(name)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise AttributeError(f"loom.op has no operator '{name}'{hint}")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    found = _lookup(name)
    if not isinstance(found, _Namespace):
        globals()[name] = found  # later lookups skip this function
    return found


def __dir__():
    """The operators (and the first part of dotted operator names): what
    `loom.op.` completes to; list_ops() and info() are documented."""
    return _children("")
