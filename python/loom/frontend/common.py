"""What the importers share beyond the registry (loom.frontend): the
context a converter gets (values as expressions, their shapes and
dtypes), symbolic shapes as text, and importing a PyTorch module in eval
mode.  The ONNX (loom.frontend.onnx), torch.fx (loom.frontend.fx) and
TorchScript (loom.frontend.torchscript) importers use it; none of them
imports another."""
import contextlib
import warnings

import numpy as np

from .. import _core
from .. import graph, ir, op


def is_symbolic(value):
    """Whether `value` is a shape with symbolic entries (an object array
    of ints and tir expressions)."""
    return isinstance(value, np.ndarray) and value.dtype == object


def shape_text(value):
    return "[" + ", ".join(str(d) for d in np.asarray(value).reshape(-1)) + "]"


class Context:
    """What converters use besides the node: values as expressions, and the
    shape and dtype of any value."""

    def __init__(self):
        self._constants = {}  # id(array) -> (array, Constant): a weight used twice is one constant
        self._symbols = {}  # symbolic dimension's name -> (a value whose shape has it, its axis)

    def symbol_sources(self, value):
        """Records where `value`'s symbolic dimensions can be read at run
        time (an input's shape), so that a shape computed from them can
        become a tensor (expr)."""
        for axis, d in enumerate(self.shape(value)):
            if not isinstance(d, int) and d.type_key == "tir.Var":
                self._symbols.setdefault(d.name, (value, axis))

    def _dim_tensor(self, d):
        """One shape entry (an int or a tir expression) as a 0-d int64
        tensor: a dimension read from the shape of the value that has it."""
        if isinstance(d, (int, np.integer)) or d.type_key == "tir.IntImm":
            return graph.Constant(np.int64(int(d) if isinstance(d, (int, np.integer)) else d.value))
        if d.type_key == "tir.Var":
            if d.name not in self._symbols:
                raise _core.TypeError(f"the dimension {d} is read from no input's shape")
            source, axis = self._symbols[d.name]
            return op.reshape(op.slice(op.shape_of(source), begin=[axis], end=[axis + 1]), shape=[])
        binary = {"tir.Add": op.add, "tir.Sub": op.subtract, "tir.Mul": op.multiply, "tir.FloorDiv": op.floor_divide,
                  "tir.FloorMod": op.floor_mod, "tir.Min": op.minimum, "tir.Max": op.maximum}
        if d.type_key in binary:
            return binary[d.type_key](self._dim_tensor(d.a), self._dim_tensor(d.b))
        raise _core.TypeError(f"the shape entry {d} ({d.type_key}) cannot be computed as a tensor")

    def shape_tensor(self, value):
        """A symbolic shape (an object array) as an int64 tensor computed at
        run time from the inputs' shapes."""
        parts = [self._dim_tensor(d) for d in value.reshape(-1)]
        if value.ndim == 0:
            return parts[0]
        flat = op.concat(*[op.expand_dims(p_, axis=0) for p_ in parts], axis=0) if parts else \
            graph.Constant(np.zeros(0, np.int64))
        return flat if value.ndim == 1 else op.reshape(flat, shape=list(value.shape))

    def expr(self, value, dtype=None):
        """A value as a graph expression: known arrays become constants."""
        if not isinstance(value, np.ndarray):
            if dtype is not None and value is not None and not isinstance(value, (tuple, list)) \
                    and self.dtype(value) != str(dtype):
                return op.cast(value, dtype=str(dtype))
            return value
        if is_symbolic(value):
            try:
                out = self.shape_tensor(value)
            except _core.TypeError as e:
                raise _core.TypeError(f"the shape {shape_text(value)} has a symbolic dimension and is used as a "
                                      f"tensor: {e} (docs/frontends.md, \"Dynamic shapes\")") from None
            return out if dtype is None or str(dtype) == "int64" else op.cast(out, dtype=str(dtype))
        if dtype is not None and str(value.dtype) != str(dtype):
            value = value.astype(dtype)
        cached = self._constants.get(id(value))
        if cached is None:
            # (np.ascontiguousarray would make a 0-d array 1-d)
            cached = self._constants[id(value)] = (value, graph.Constant(np.require(value, requirements="C")))
        return cached[1]

    def const(self, value, like):
        """A scalar or array as a constant of `like`'s dtype."""
        return self.expr(np.asarray(value, dtype=self.dtype(like)))

    def type(self, value):
        """(shape, dtype): dimensions are ints, or tir variables when symbolic."""
        if isinstance(value, np.ndarray):
            return tuple(value.shape), str(value.dtype)
        t = ir.infer_type(value)  # cached on the nodes: only new nodes are typed
        dims = tuple(int(d.value) if d.type_key == "tir.IntImm" else d for d in t.shape)
        return dims, str(t.dtype)

    def shape(self, value):
        return self.type(value)[0]

    def static_shape(self, node, value, what="the input"):
        """The shape as Python ints; a TypeError naming the node when a
        dimension is symbolic."""
        shape = self.shape(value)
        if not all(isinstance(d, int) for d in shape):
            node.unsupported(f"{what} of symbolic shape {shape_text(shape)}")
        return list(shape)

    def dtype(self, value):
        return self.type(value)[1]

    def rank(self, value):
        return len(self.shape(value))



@contextlib.contextmanager
def evaluating(module, switch, importer):
    """Runs the import with `module` in eval mode when `switch`, restoring
    its own mode after; a module in training mode otherwise gets a warning
    (dropout refuses, batch norm normalises with the batch's statistics,
    as PyTorch's forward does there)."""
    import torch
    if not isinstance(module, torch.nn.Module) or not module.training:
        yield
        return
    if not switch:
        warnings.warn(f"{importer}: the module is in training mode and is imported as it computes there (dropout is "
                      "refused, batch norm uses the batch's statistics); call module.eval() first, or pass "
                      "eval=True to import it in eval mode", stacklevel=4)
        yield
        return
    states = {m: m.training for m in module.modules()}
    module.eval()
    try:
        yield
    finally:
        for m, training in states.items():
            m.training = training
