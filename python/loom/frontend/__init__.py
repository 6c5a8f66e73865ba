"""Frontends: models from other frameworks as IRModules (docs/frontends.md).

`loom.frontend.onnx.from_onnx` imports an ONNX model,
`loom.frontend.fx.from_fx` a torch.nn.Module through torch.fx, and
`loom.frontend.torchscript.from_torchscript` a TorchScript module (what
Loom cannot compile stays TorchScript), `loom.frontend.mlir.from_tosa` a
function of MLIR's TOSA dialect (and `IRModule.to_mlir` the way back).  The other way, a Loom build
called from PyTorch, is `loom.torch.compile`.  What the importers share
lives here (the converter registry, the one error for unsupported
operators, `bind_params`) and in `loom.frontend.common` (the converters'
context).
"""
import contextlib
import importlib

from .. import _core
from .. import graph as _graph
from .. import ir as _ir


# The importers load on first attribute access (PEP 562): each imports its
# own framework (ONNX, PyTorch) only when used.
_IMPORTERS = ("aten", "common", "fx", "mlir", "onnx", "torchscript")


def __getattr__(name):
    if name in _IMPORTERS:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "torch":  # the importer's name until it was split by the way PyTorch hands a model over
        raise AttributeError("loom.frontend.torch is now loom.frontend.fx (from_fx) and loom.frontend.torchscript "
                             "(from_torchscript); loom.torch.compile builds for PyTorch users")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class UnsupportedOperatorError(_core.LoomError):
    """A model uses operators no converter supports; the message lists
    each operator type with its count and its first node."""


class Registry:
    """Converters by source operator type: each covers a range of opsets
    (inclusive) and may fold the operator with NumPy when all its inputs
    are known."""

    def __init__(self, source):
        self.source = source
        self._entries = {}  # op type -> [(first, last, convert, fold)]

    def register(self, op_type, convert, opsets, fold=None, replace=False):
        first, last = opsets
        entries = self._entries.setdefault(op_type, [])
        overlapping = [e for e in entries if not (last < e[0] or e[1] < first)]
        if overlapping and not replace:
            raise _core.LookupError(f"{self.source} operator '{op_type}' has a converter for opsets "
                                    f"{overlapping[0][0]}-{overlapping[0][1]} already; pass replace=True")
        entries[:] = [e for e in entries if e not in overlapping] + [(first, last, convert, fold)]
        entries.sort(key=lambda e: e[0])

    def find(self, op_type, opset):
        """(convert, fold) for the operator at this opset, or None."""
        for first, last, convert, fold in self._entries.get(op_type, []):
            if first <= opset <= last:
                return convert, fold
        return None

    def ranges(self, op_type):
        return [(first, last) for first, last, _, _ in self._entries.get(op_type, [])]

    def operators(self):
        """[(op type, first opset, last opset)], sorted."""
        return sorted((op, first, last) for op, entries in self._entries.items() for first, last, _, _ in entries)

    def check(self, nodes, opset, doc="docs/frontends.md, \"Adding a converter\""):
        """Raises UnsupportedOperatorError listing every (op type, node
        name) in `nodes` that no converter covers at `opset`, with counts
        and the first node of each type; does nothing when all are covered.
        An op type may be given as (domain, type) for a foreign domain, or
        as (None, label) for one refused with the reason in its label."""
        missing = {}  # label -> [count, first node]
        for op_type, name in nodes:
            if isinstance(op_type, tuple) and op_type[0] is None:
                label = op_type[1]
            elif isinstance(op_type, tuple):
                label = f"{op_type[0]}.{op_type[1]} (domain '{op_type[0]}')"
            elif self.find(op_type, opset) is None:
                ranges = self.ranges(op_type)
                label = op_type
                if ranges:
                    spans = ", ".join(f"{a}-{b}" for a, b in ranges)
                    label = f"{op_type} (opset {opset}; the converter takes opsets {spans})"
            else:
                continue
            entry = missing.setdefault(label, [0, name])
            entry[0] += 1
        if not missing:
            return
        lines = [f"  {label}: {count} node{'s' if count != 1 else ''}, first '{first}'"
                 for label, (count, first) in sorted(missing.items())]
        kinds = len(missing)
        raise UnsupportedOperatorError(
            f"the {self.source} model uses {kinds} operator type{'s' if kinds != 1 else ''} Loom cannot import "
            f"({doc}):\n" + "\n".join(lines))


@contextlib.contextmanager
def naming(label):
    """Loom errors raised inside start with `label` (a node: "Conv 'conv1'"),
    unless a converter already named it."""
    try:
        yield
    except _core.LoomError as e:
        if str(e).startswith(label):
            raise
        raise type(e)(f"{label}: {e}") from None


def numpy_matmul(ctx, a, b, dtype, out_dtype=""):
    """a @ b as NumPy computes it (ONNX's MatMul, aten::matmul): a 1-D
    operand is a row (left) or a column (right), removed from the result;
    a constant 2-D right operand is a linear layer's weight (dense, whose
    weights are packed at compile time).  dtype None keeps each operand's
    own (integer operands with an out_dtype)."""
    import numpy as np
    from .. import op
    if isinstance(b, np.ndarray) and b.ndim == 2 and ctx.rank(a) >= 2:
        return op.dense(ctx.expr(a, dtype), ctx.expr(np.ascontiguousarray(b.T), dtype), out_dtype=out_dtype)
    a, b = ctx.expr(a, dtype), ctx.expr(b, dtype)
    squeeze = []
    if ctx.rank(a) == 1:
        a = op.expand_dims(a, axis=0)
        squeeze.append(-2)
    if ctx.rank(b) == 1:
        b = op.expand_dims(b, axis=1)
        squeeze.append(-1)
    y = op.matmul(a, b, out_dtype=out_dtype)
    if squeeze:
        rank = ctx.rank(y)
        y = op.squeeze(y, axis=[rank + s for s in squeeze])
    return y


def bind_params(module, params, function="main"):
    """`module` with the parameters of @function named in `params` (a dict
    of name: array) replaced by constants; the others stay parameters."""
    import numpy as np
    f = module.functions[function]
    keep, bound = [], {}
    for p in f.params:
        if p.name in params:
            bound[p.name] = _graph.Constant(np.asarray(params[p.name]))
        else:
            keep.append(p)
    unknown = sorted(set(params) - {p.name for p in f.params})
    if unknown:
        raise _core.LookupError(f"bind_params: @{function} has no parameter {', '.join(repr(u) for u in unknown)}")
    targets = {p.name: p for p in f.params if p.name in bound}
    body = _ir.rewrite(f.body, lambda v: bound[v.name] if v.name in targets and v == targets[v.name] else None,
                       "graph.Var")
    return _ir.with_function(module, function, _graph.Function(keep, body))
