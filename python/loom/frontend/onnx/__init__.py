"""The ONNX importer (docs/frontends.md): `from_onnx(model)`.

Each ONNX operator has one small converter in the registry, registered
with `@converter(op_type, opsets=(first, last))` in the modules of this
package by family (`_math`: elementwise; `_nn`: convolution, pooling,
normalisation, linear algebra, losses; `_tensor`: shapes and indexing;
`_reduce`: reductions; `_rnn`: recurrent layers; `_quant`: quantization).
A converter gets the context, the node and the node's inputs as values:
a NumPy array when the importer knows the value (initializers, constants
and anything computed from them only: the shape arithmetic of exported
models), a Loom graph expression otherwise, None for an omitted optional
input.  The shape of a tensor with a symbolic dimension (a dynamic batch)
is known too: a NumPy array of dtype object whose entries are ints or tir
expressions over the dimension's variable ("symbolic shape"); the folds of
the operators in SYMBOLIC_FOLDS compute with it, and Reshape takes it as a
target.  It returns a value or a tuple of values (one per output; None
for an output it does not make).  `fold=` computes the node with NumPy
when all inputs are known.

    python3 -m loom.frontend.onnx --table   # the supported operators, as Markdown
"""
import os

import numpy as np

from ... import _core
from ... import graph, ir, op, tir  # noqa: F401 (op: for converters written against this module)
from .. import Registry, UnsupportedOperatorError, naming  # noqa: F401 (re-exported)
from ..common import Context  # noqa: F401 (re-exported: converters take one)
from ..common import dim_variables as _dim_variables, is_symbolic as _is_symbolic, shape_text as _shape_text

REGISTRY = Registry("ONNX")
OPSETS = (7, 17)  # the default domain's opsets the importer is tested with


def converter(op_type, opsets=(1, 17), fold=None, replace=False, domain=""):
    """Registers the decorated function as the converter of `op_type` for
    its domain's opsets `opsets` (inclusive): the default domain's, or
    another's (domain="com.microsoft": ONNX Runtime's contrib operators,
    registered as "com.microsoft.QLinearAdd")."""
    def register(fn):
        REGISTRY.register(_key(domain, op_type), fn, opsets, fold=fold, replace=replace)
        return fn
    return register


def _domain(node):
    return node.domain if node.domain not in ("", "ai.onnx") else ""


def _key(domain, op_type):
    """The registry's name of an operator: its type, prefixed by a domain
    other than the default."""
    return f"{domain}.{op_type}" if domain else op_type


def supported_operators():
    """[(op type, first opset, last opset)] of every converter."""
    return REGISTRY.operators()


class ValueNeededError(_core.TypeError):
    """A converter needs at compile time a value the model computes from
    its inputs at run time (a Reshape's target shape, a TopK's k, ...).
    `inputs` names the graph inputs it is computed from: giving them to
    `from_onnx(..., constants={name: array})` fixes them."""

    def __init__(self, message, inputs=()):
        super().__init__(message)
        self.inputs = list(inputs)


# Operators that no converter will take: what they need is not a tensor
# program (sequences, optionals, random numbers, training, strings).  They get the one
# unsupported-operator error like any other, with this reason beside them.
NOT_COMPILABLE = {
    **{k: "sequences" for k in ("SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                                "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                                "ConcatFromSequence")},
    **{k: "optional values" for k in ("Optional", "OptionalGetElement", "OptionalHasElement")},
    **{k: "random numbers" for k in ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                                     "Bernoulli", "Multinomial")},
    **{k: "training" for k in ("Adagrad", "Adam", "Momentum", "Gradient")},
    **{k: "strings" for k in ("StringNormalizer", "TfIdfVectorizer", "RegexFullMatch", "StringConcat",
                              "StringSplit")},
}


# ---------------------------------------------------------------- the model

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def _dtype(onnx_type, what):
    try:
        return _DTYPES[onnx_type]
    except KeyError:
        import onnx
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in onnx.TensorProto.DataType.values() else \
            str(onnx_type)
        raise _core.TypeError(f"{what} has ONNX element type {name}, which Loom has no kernels for") from None


class Node:
    """One ONNX node as a converter sees it."""

    def __init__(self, proto, opset):
        import onnx
        self.proto = proto
        self.op_type = proto.op_type
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.opset = opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
        self.args = []      # the input values, as the converter gets them
        self.origins = []   # per input: the graph inputs its value is computed from

    def attr(self, name, default=None):
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            value = value.decode()
        return value

    def wants(self, k):
        """Whether the model reads output k (an optional output such as
        LayerNormalization's Mean)."""
        return len(self.proto.output) > k and bool(self.proto.output[k])

    def unsupported(self, what):
        raise _core.TypeError(f"{self.op_type} '{self.name}': {what} is not supported (docs/frontends.md)")


def _load(model):
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(model))
        except Exception as e:  # protobuf's DecodeError and its kin
            raise _core.ParseError(f"the {len(model)} bytes given are not an ONNX model "
                                   f"({type(e).__name__}: {e})") from None
    if hasattr(model, "read"):  # a file object
        return _load(model.read())
    if not isinstance(model, (str, os.PathLike)):
        raise _core.TypeError(f"from_onnx takes a path, an onnx.ModelProto or the model's bytes, got "
                              f"{type(model).__name__}")
    path = os.fspath(model)
    try:
        return onnx.load(path)
    except OSError as e:
        raise _core.LoomError(f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # protobuf's DecodeError and its kin
        raise _core.ParseError(f"{path}: not an ONNX model ({type(e).__name__}: {e})") from None


def _opsets(model):
    """{domain: opset}, the default domain as "" (1 when not imported)."""
    out = {"": 1}
    for entry in model.opset_import:
        out[entry.domain if entry.domain not in ("", "ai.onnx") else ""] = entry.version
    return out


def _nodes(g):
    """The nodes of graph g and of its subgraphs (If branches, Loop and
    Scan bodies), depth first."""
    for n in g.node:
        yield n
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from _nodes(sub)


def _check_supported(model, opsets):
    nodes = []
    for n in _nodes(model.graph):
        domain = _domain(n)
        label = (domain, n.op_type) if domain else n.op_type
        if domain and REGISTRY.find(_key(domain, n.op_type), opsets.get(domain, 1)) is not None:
            continue
        if not domain and n.op_type in NOT_COMPILABLE and REGISTRY.find(n.op_type, opsets[""]) is None:
            label = (None, f"{n.op_type} ({NOT_COMPILABLE[n.op_type]})")
        nodes.append((label, n.name or (n.output[0] if n.output else "")))
    REGISTRY.check(nodes, opsets[""])


def _input_var(value_info, shapes, symbols, reader=""):
    name = value_info.name
    what = f"input '{name}'{reader}"
    if value_info.type.WhichOneof("value") not in (None, "tensor_type"):
        raise _core.TypeError(f"{what} is a {value_info.type.WhichOneof('value').replace('_type', '')}, "
                              "not a tensor; Loom imports tensor inputs only")
    tensor = value_info.type.tensor_type
    dtype = _dtype(tensor.elem_type, what)
    given = (shapes or {}).get(name)
    if given is not None:
        dims = list(given)
    elif tensor.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
    else:
        raise _core.TypeError(f"input '{name}' has no shape in the model; give it with shapes={{'{name}': (...)}}")
    out = []
    for k, d in enumerate(dims):
        if isinstance(d, str):
            out.append(symbols.setdefault(d, tir.Var(d)))
        elif d is None or (isinstance(d, int) and d <= 0 and given is None):
            raise _core.TypeError(f"input '{name}': dimension {k} is unknown; give it with "
                                  f"shapes={{'{name}': (...)}}")
        else:
            out.append(int(d))
    return graph.Var(name, shape=tuple(out), dtype=dtype)


def from_onnx(model, shapes=None, *, params="constants", constants=None):
    """Imports an ONNX model (a path, an onnx.ModelProto, or the model's
    serialized bytes) as an IRModule whose @main takes the model's inputs.
    `shapes` fixes input shapes ({name: shape}; a str dimension is
    symbolic).  `constants` ({name: array}) fixes inputs to values known at
    compile time (a shape or axes the model takes as an input); they are
    not parameters of @main.  params="constants" (default) makes
    initializers constants; params="inputs" makes them parameters after
    the inputs and returns (module, {name: array})."""
    import onnx
    import onnx.numpy_helper
    if params not in ("constants", "inputs"):
        raise _core.TypeError(f"from_onnx: params must be 'constants' or 'inputs', got {params!r}")
    model = _load(model)
    opsets = _opsets(model)
    _check_supported(model, opsets)  # one error for everything unsupported, before any work
    g = model.graph
    constants = dict(constants or {})
    values, weights, params_out, symbols, origins = {}, {}, [], {}, {}
    for init in g.initializer:
        _dtype(init.data_type, f"initializer '{init.name}'")
        weights[init.name] = onnx.numpy_helper.to_array(init)
    graph_inputs = [vi for vi in g.input if vi.name not in weights]
    unknown = sorted(set(constants) - {vi.name for vi in g.input})
    if unknown:
        raise _core.LookupError(f"from_onnx: constants names {', '.join(repr(u) for u in unknown)}, which "
                                f"{'is' if len(unknown) == 1 else 'are'} not an input of the model")
    readers = {}  # input name -> " (read by Cast 'y')": an input's errors name its first reader
    for n in g.node:
        for name in n.input:
            readers.setdefault(name, f" (read by {n.op_type} '{n.name or (n.output[0] if n.output else '')}')")
    inputs = []
    for vi in graph_inputs:
        if vi.name in constants:
            want = _dtype(vi.type.tensor_type.elem_type, f"input '{vi.name}'{readers.get(vi.name, '')}")
            values[vi.name] = np.asarray(constants[vi.name]).astype(want)
        else:
            inputs.append(_input_var(vi, shapes, symbols, readers.get(vi.name, "")))
            origins[vi.name] = {vi.name}
    for name, array in weights.items():
        if name in constants:
            values[name] = np.asarray(constants[name]).astype(array.dtype)
        elif params == "inputs":
            var = graph.Var(name, shape=array.shape, dtype=str(array.dtype))
            params_out.append(var)
            values[name] = var
        else:
            values[name] = array
    for var in inputs:
        values[var.name] = var
    ctx = Context()
    for var in inputs:
        ctx.symbol_sources(var)  # a shape computed from them can become a tensor
    _Scope(ctx, opsets, values, origins).run(g.node)
    results = []
    for o in g.output:
        if o.name not in values:
            raise _core.LookupError(f"the model's output '{o.name}' is made by no node")
        results.append(ctx.expr(values[o.name]))
    body = results[0] if len(results) == 1 else graph.Tuple(results)
    module = ir.IRModule({"main": graph.Function(inputs + params_out, body), **ctx.functions})
    if params == "inputs":
        return module, {name: weights[name] for name in weights}
    return module


class _Scope:
    """Imports the nodes of a graph: the model's, or a subgraph's (an If
    branch, a Loop body), whose scope sees every value of the scopes
    around it (ONNX's outer scope).  `values` and `origins` map names to
    values and to the graph inputs each is computed from."""

    def __init__(self, ctx, opsets, values, origins):
        self.ctx, self.opsets, self.values, self.origins = ctx, opsets, values, origins

    def subgraph(self, g, inputs=(), outer=None):
        """Imports subgraph g (a GraphProto) with its inputs bound to
        `inputs`; returns the values of its outputs.  `outer` (a mapping)
        stands for the outer scope's values (a loop's body, a function of
        its own, reads them as parameters)."""
        import collections
        import onnx.numpy_helper
        scope = _Scope(self.ctx, self.opsets, collections.ChainMap({}, self.values if outer is None else outer),
                       collections.ChainMap({}, self.origins))
        if len(inputs) != len(g.input):
            raise _core.TypeError(f"subgraph '{g.name}' has {len(g.input)} inputs, given {len(inputs)}")
        for vi, value in zip(g.input, inputs):
            scope.values[vi.name] = value
        for init in g.initializer:
            _dtype(init.data_type, f"initializer '{init.name}'")
            scope.values[init.name] = onnx.numpy_helper.to_array(init)
        scope.run(g.node)
        for o in g.output:
            if o.name not in scope.values:
                raise _core.LookupError(f"subgraph '{g.name}': its output '{o.name}' is made by no node")
        return [scope.values[o.name] for o in g.output]

    def run(self, nodes):
        for proto in nodes:
            self.node(proto)

    def node(self, proto):
        ctx, values, origins, opsets = self.ctx, self.values, self.origins, self.opsets
        node = Node(proto, opsets[""])
        node.scope = self
        args = [values.get(name) if name else None for name in proto.input]
        for name, a in zip(proto.input, args):
            if name and a is None:
                raise _core.LookupError(f"{node.op_type} '{node.name}': input '{name}' is not defined before it")
        node.args = args
        node.origins = [origins.get(name, set()) for name in proto.input]
        domain = _domain(proto)
        convert, fold = REGISTRY.find(_key(domain, node.op_type), opsets.get(domain, 1))
        label = f"{node.op_type} '{node.name}'"
        with naming(label):
            known = fold is not None and all(a is None or isinstance(a, np.ndarray) for a in args)
            if known and any(_is_symbolic(a) for a in args) and node.op_type not in SYMBOLIC_FOLDS:
                known = False  # the converter decides (Reshape takes a symbolic target)
            if known and node.op_type == "Slice" and not _is_symbolic(args[0]) and any(
                    _is_symbolic(a) for a in args[1:]):
                known = False  # a constant cut at symbolic bounds (a causal mask buffer) has a symbolic shape
            try:
                try:
                    out = fold(node, *args) if known else convert(ctx, node, *args)
                except FoldDeclined:  # computed at run time instead
                    known = False
                    out = convert(ctx, node, *args)
            except _core.LoomError:
                raise
            except Exception as e:  # a converter's bug must still name the node
                raise _core.LoomError(f"{label}: the converter failed ({type(e).__name__}: {e}); please "
                                      "report it") from e
            outs = out if isinstance(out, tuple) else (out,)
            # A fold's 0-d results come as scalars (np.int64, or an entry of
            # a symbolic shape): known values too.
            outs = tuple(_known_array(o) if known or isinstance(o, (np.generic, np.ndarray)) else o for o in outs)
            for o in outs:
                if not isinstance(o, np.ndarray) and o is not None:
                    ctx.type(o)  # types each new node now: errors name the node
                    ctx.symbol_sources(o)  # a dimension the data decides (NonZero's count) is read from it
            if not known and fold is not None and node.op_type in SYMBOLIC_FOLDS and len(outs) == 1 and \
                    outs[0] is not None and not isinstance(outs[0], np.ndarray) and \
                    not any(outs[0] is a for a in args):  # (Identity gives its argument: no loop)
                ctx.made_by[outs[0]] = (node, fold, args)  # shape arithmetic at run time: _sizes follows it back
        derived = set().union(*node.origins) if node.origins else set()
        for k, name in enumerate(proto.output):
            if not name:
                continue
            if k >= len(outs) or outs[k] is None:
                node.unsupported(f"its output {k} ('{name}')")
            values[name] = outs[k]
            if derived:
                origins[name] = derived


# ------------------------------------------------------------ helpers

def _ints(value):
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _known(node, value, what, symbolic=False):
    """`value`, which must be known (and, unless `symbolic`, free of
    symbolic dimensions).  When it is computed at run time from the
    model's inputs, ValueNeededError names them."""
    if value is not None and not isinstance(value, np.ndarray):
        sources = set()
        for a, origin in zip(node.args, node.origins):
            if a is value:
                sources |= origin
        if sources:
            names = ", ".join(f"'{s}'" for s in sorted(sources))
            raise ValueNeededError(
                f"{node.op_type} '{node.name}': its {what} is computed at run time from the input{'s' if len(sources) > 1 else ''} "
                f"{names}; Loom needs it at compile time: give {'them' if len(sources) > 1 else 'it'} with "
                f"from_onnx(..., constants={{{', '.join(repr(s) + ': ...' for s in sorted(sources))}}}) "
                "(docs/frontends.md, \"Inputs known at compile time\")", sorted(sources))
        node.unsupported(f"a {what} computed at run time")
    if value is not None and not symbolic and _is_symbolic(value):
        node.unsupported(f"a {what} with a symbolic dimension ({_shape_text(value)})")
    return value


def _sizes(ctx, node, value, what):
    """`value` as the shape entries of a tensor a converter makes
    (ConstantOfShape's shape, Resize's sizes): known or symbolic as _known
    takes them, or computed when the model runs from values the data
    decides (a mask pasted at its box's size).  Then the shape arithmetic
    that made it (Concat, Unsqueeze, Gather, ... of dimensions and such
    values) is followed back: an entry computed from dimensions only
    stays that expression (a dimension it copies stays that dimension);
    an entry the data decides is a variable the VM binds to that entry of
    the value itself (Context.data_dims: the sizes, which cannot be
    negative, not the values they are computed from, which may be).  Wrap
    the tensor made with ctx.bind(tensor, entries)."""
    if value is None or isinstance(value, np.ndarray):
        return _known(node, value, what, symbolic=True)
    data = set()  # the stand-ins for values the data decides
    followed = _followed(ctx, value, data, {}, 0)
    bound = ctx.data_dims(value, f"{node.proto.output[0]}_{what}")
    if bound is None:
        return _known(node, value, what, symbolic=True)  # not sizes: the error naming where it comes from
    if followed is None or np.shape(followed) != np.shape(bound):
        return bound
    def decided_by_data(entry):
        return not isinstance(entry, (int, np.integer)) and any(v in data for v in _dim_variables(entry))
    entries = [b if decided_by_data(f) else f
               for f, b in zip(np.asarray(followed, dtype=object).reshape(-1), bound.reshape(-1))]
    return _normalised(_object_array(entries).reshape(np.shape(bound)))


def _followed(ctx, value, data, memo, depth):
    """`value` (an int tensor computed at run time) as the symbolic array
    its shape arithmetic (ctx.made_by: the symbolic folds, re-run) makes of
    known values and dimensions, with a stand-in variable (added to
    `data`) for each entry of a value it cannot follow; None when the
    value is not a small int tensor."""
    if value is None or isinstance(value, np.ndarray):
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    made = ctx.made_by.get(value)
    result = None
    if made is not None and depth < 64:
        node, fold, args = made
        if all(a is None or isinstance(a, np.ndarray) or ctx.dtype(a).startswith(("int", "uint")) for a in args):
            entries = [_followed(ctx, a, data, memo, depth + 1) for a in args]
            if all(e is not None or a is None for e, a in zip(entries, args)):
                try:
                    result = _known_array(fold(node, *entries))
                except (FoldDeclined, _core.LoomError, ValueError, TypeError, IndexError):
                    result = None
    if result is None:
        shape, dtype = ctx.type(value)
        if dtype.startswith(("int", "uint")) and len(shape) <= 1 and all(isinstance(d, int) for d in shape) and \
                int(np.prod(shape)) <= 64:
            stand_ins = [tir.Var("data") for _ in range(int(np.prod(shape)))]
            data.update(stand_ins)
            result = _object_array(stand_ins).reshape(shape)
    memo[key] = result
    return result


# ------------------------------------------------------- symbolic shapes

class FoldDeclined(Exception):
    """Raised by a fold that cannot compute its node at import (a symbolic
    shape cast to a float): the converter computes it at run time."""


# The operators whose fold computes with a symbolic shape as it does with
# integers: indexing, joining and integer arithmetic.  Any other operator
# given a symbolic shape goes to its converter, which refuses it unless it
# takes one (Reshape).
SYMBOLIC_FOLDS = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Identity", "Add", "Sub", "Mul", "Div",
                  "Neg", "Cast", "Where", "Min", "Max"}


def _dim(v):
    """One entry of a shape: an int, or a simplified tir expression."""
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = tir.simplify(v)
    return int(v.value) if v.type_key == "tir.IntImm" else v


def _normalised(value):
    """A symbolic shape with every entry simplified, or an int64 array when
    no entry is symbolic any more."""
    if not _is_symbolic(value):
        return value
    dims = [_dim(v) for v in value.reshape(-1)]
    if all(isinstance(d, int) for d in dims):
        return np.asarray(dims, dtype=np.int64).reshape(value.shape)
    return _object_array(dims).reshape(value.shape)


def _object_array(items):
    """A 1-D array of dtype object holding `items` as they are (NumPy would
    try to broadcast tir expressions)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _known_array(value):
    """A known value (a fold's result) as an array: a symbolic shape's entry
    becomes a 0-d symbolic shape."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return _normalised(value)
    if isinstance(value, (int, float, bool, np.generic)):
        return np.asarray(value)
    return _normalised(_object_array([value]).reshape(()))


def _axis(axis, rank):
    return axis + rank if axis < 0 else axis


def _table():
    rows = ["| ONNX operator | opsets |", "|---|---|"]
    for op_type, first, last in supported_operators():
        rows.append(f"| {op_type} | {first}-{last} |")
    return "\n".join(rows)


# (they register the converters)
from . import _math, _nn, _reduce, _tensor, _rnn, _quant, _control, _signal  # noqa: E402,F401
