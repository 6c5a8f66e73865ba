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

    def expr(self, value, dtype=None):
        """A value as a graph expression: known arrays become constants."""
        if not isinstance(value, np.ndarray):
            if dtype is not None and value is not None and not isinstance(value, (tuple, list)) \
                    and self.dtype(value) != str(dtype):
                return op.cast(value, dtype=str(dtype))
            return value
        if is_symbolic(value):
            raise _core.TypeError(f"the shape {shape_text(value)} has a symbolic dimension and is used as a "
                                  "tensor, which is not supported (docs/frontends.md, \"Dynamic shapes\")")
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
