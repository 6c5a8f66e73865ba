"""Operators on loom.Object (docs/python.md, "Builders"): arithmetic and
comparisons build tir expressions on a PrimExpr and operator calls on a
graph expression; `[]` loads from a buffer, reads a tuple's field or a
module's function.  Any other object answers NotImplemented (Python's
TypeError)."""
from . import _core
from . import graph, op, tir
from ._ffi import is_node

_PRIM, _GRAPH = "tir.PrimExpr", "ir.Expr"


def _operands(a, b):
    """Which family the operands belong to, or None."""
    for x in (a, b):
        if is_node(x, _PRIM):
            return "prim"
    for x in (a, b):
        if is_node(x, _GRAPH):
            return "graph"
    return None


def _binary(prim, graph_op):
    """(forward, reflected) methods for one operator."""
    def apply(a, b):
        family = _operands(a, b)
        if family == "prim":
            return prim(a, b)
        if family == "graph" and graph_op is not None:
            return getattr(op, graph_op)(a, b)
        return NotImplemented
    return (lambda self, other: apply(self, other)), (lambda self, other: apply(other, self))


def _install():
    table = {
        "add": (tir.add, "add"), "sub": (tir.sub, "subtract"), "mul": (tir.mul, "multiply"),
        "truediv": (tir.div, "divide"), "floordiv": (tir.floordiv, None), "mod": (tir.floormod, None),
        "matmul": (None, "matmul"),
    }
    for name, (prim, graph_op) in table.items():
        forward, reverse = _binary(prim if prim else (lambda a, b: NotImplemented), graph_op)
        setattr(_core.Object, f"__{name}__", forward)
        setattr(_core.Object, f"__r{name}__", reverse)
    for name, prim in (("lt", tir.lt), ("le", tir.le), ("gt", tir.gt), ("ge", tir.ge)):
        setattr(_core.Object, f"__{name}__", _binary(prim, None)[0])

    def neg(self):
        if is_node(self, _PRIM):
            return tir.sub(tir.expr(0, self), self)
        if is_node(self, _GRAPH):
            return op.neg(self)
        return NotImplemented

    def getitem(self, key):
        if is_node(self, "tir.Buffer"):
            return tir.BufferLoad(self, key)
        if is_node(self, "ir.IRModule"):
            return self.functions[key]
        if is_node(self, _GRAPH) and isinstance(key, int):
            return graph.TupleGetItem(self, key)
        raise _core.TypeError(f"'{self.type_key}' is not subscriptable")

    def no_iter(self):
        raise _core.TypeError(f"'{self.type_key}' is not iterable")

    def to_mlir(self):
        """An IRModule's graph functions as MLIR text of TOSA operations
        (docs/tosa.md)."""
        if not is_node(self, "ir.IRModule"):
            raise _core.TypeError(f"to_mlir is an IRModule's, not a '{self.type_key}''s")
        from .frontend import mlir
        return mlir.to_mlir(self)

    _core.Object.to_mlir = to_mlir
    _core.Object.__neg__ = neg
    _core.Object.__getitem__ = getitem
    _core.Object.__iter__ = no_iter


_install()
