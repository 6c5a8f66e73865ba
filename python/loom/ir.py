"""IR nodes through reflection (docs/python.md, "IR").

Every node is a `loom.Object` whose attributes are its reflected fields;
`repr` prints the text format.  `make(type_key, **fields)` creates a node
of any registered type, a plugin's included.
"""
from . import _core

Object = _core.Object
Array = _core.Array
Map = _core.Map


def parse(text, source="<string>"):
    """An IRModule from the text format; ParseError with file:line:col."""
    return _core.parse(text, source)


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
