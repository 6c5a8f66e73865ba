"""The C++ constructors and queries that the core registers in the global
function registry (core/src/AREA/constructors.cc), looked up once each."""
import functools

from . import _core


@functools.lru_cache(maxsize=None)
def func(name):
    return _core.get_global_func(name)


def call(name, *args):
    return func(name)(*args)


def is_node(value, type_key):
    """Whether `value` is a loom object of `type_key` or a subtype."""
    return isinstance(value, _core.Object) and value.is_instance(type_key)


def type_name(value):
    return value.type_key if isinstance(value, _core.Object) else type(value).__name__
