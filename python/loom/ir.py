"""IR nodes through reflection, and the module-level builders
(docs/python.md, "IR" and "Builders").

Every node is a `loom.Object` whose attributes are its reflected fields;
`repr` prints the text format.  `make(type_key, **fields)` creates a node
of any registered type, a plugin's included.  The builders below go
through the C++ constructors (so their checks and derived fields apply).
"""
import base64

from . import _core
from ._ffi import call, is_node, type_name

Object = _core.Object
Array = _core.Array
Map = _core.Map


def parse(text, source="<string>"):
    """An IRModule from the text format; ParseError with file:line:col."""
    return _core.parse(text, source)


def save(module, path):
    """Write `module` to the file `path` as text; constants over 1 KiB go,
    as raw bytes, to `path + ".weights"` beside it (docs/ir-text-format.md,
    "Weights beside the text")."""
    _core.save_module_file(module, str(path))


def load(path):
    """The module in the file `path` (text, with its weights file if any);
    ParseError with file:line:col."""
    return _core.load_module_file(str(path))


def make(type_key, **fields):
    """A node of type `type_key` with the given fields (by reflection)."""
    return _core.make_node(type_key, **fields)


def type_fields(type_key):
    """[(name, type, doc)] of the fields of `type_key`."""
    return _core.type_fields(type_key)


def structural_equal(a, b):
    """Equal as trees, variables matched by binding (alpha-equivalence)."""
    return _core.structural_equal(a, b)


def structural_hash(a):
    """A hash consistent with structural_equal."""
    return _core.structural_hash(a)


def assert_structural_equal(a, b):
    """AssertionError with the path of the first difference when not equal."""
    difference = _core.structural_difference(a, b)
    if difference is not None:
        raise AssertionError(f"not structurally equal: {difference}")


def save_json(node):
    """Any object (a module, a node, an NDArray) as JSON text."""
    return _core.save_json(node)


def load_json(text):
    """The object saved by save_json."""
    return _core.load_json(text)


# ---- types ------------------------------------------------------------------
def _dim(d):
    if isinstance(d, bool) or not (isinstance(d, int) or is_node(d, "tir.PrimExpr")):
        raise _core.TypeError(f"a dimension is an int or a tir expression, got {type_name(d)}")
    return call("tir.IntImm", _core.DataType("int64"), d) if isinstance(d, int) else d


def TensorType(shape, dtype="float32"):
    """Tensor[(shape), dtype]; shape None is an unknown rank."""
    dims = None if shape is None else [_dim(d) for d in shape]
    return call("ir.TensorType", dims, _core.DataType(str(dtype)))


def PrimType(dtype):
    return call("ir.PrimType", _core.DataType(str(dtype)))


def TupleType(fields):
    return call("ir.TupleType", list(fields))


def FuncType(params, ret=None):
    return call("ir.FuncType", list(params), ret)


def OpaqueType(name):
    return call("ir.OpaqueType", name)


# ---- functions and modules ----------------------------------------------------
def GlobalVar(name):
    return call("ir.GlobalVar", name)


def Op(name):
    """The operator `name` (loads the plugin that provides it)."""
    return call("ir.Op", name)


def ExternFunc(kind, payload, params, ret=None, convention="dps", attrs=None):
    """An extern function of a registered kind ("asm", "torchscript", ...):
    its payload (text, or bytes, kept base64-encoded), the types of its
    parameters and result, and its calling convention ("dps": outputs are
    trailing parameters; "packed")."""
    encoding = "text"
    if isinstance(payload, (bytes, bytearray)):
        payload, encoding = base64.b64encode(bytes(payload)).decode("ascii"), "base64"
    return call("ir.ExternFunc", kind, payload, FuncType(params, ret), convention, attrs or {}, encoding)


def IRModule(functions=None, attrs=None):
    """A module from {name: function} (graph, prim or extern functions)."""
    if functions is not None and not isinstance(functions, dict):
        raise _core.TypeError(f"IRModule takes a dict of name: function, got {type_name(functions)}")
    return call("ir.IRModule", functions or {}, attrs or {}, {})


def with_function(module, name, function):
    """A new module with `name` bound to `function`."""
    return call("ir.IRModule.with_function", module, name, function)


def with_attr(module, key, value):
    return call("ir.IRModule.with_attr", module, key, value)


def well_formed(module):
    """Every well-formedness problem of `module`, as text ([] when none)."""
    return list(call("ir.well_formed", module))


def infer_type(expr, module=None):
    """The type of a graph expression; fills `checked_type` of it and of
    its sub-expressions not yet typed (so typing each new node of a growing
    graph costs only that node).  loom.TypeInferenceError on a type error."""
    return call("ir.infer_type", expr, module)


def rewrite(node, fn, type_key="ir.Expr"):
    """Rewrites `node` (a module, a function, an expression) bottom-up:
    each node of `type_key` (or a subtype), its children already
    rewritten, goes to fn, which returns its replacement or None to keep
    it.  Nodes that do not change are shared, not copied; a node reached
    twice is rewritten once."""
    return _core.rewrite(node, fn, type_key)
