"""Compiled modules (docs/python.md, "Build and run")."""
from . import _core

Module = _core.Module
Function = _core.Function


def load_module(path):
    """Opens a library written by Module.export_library."""
    return _core.load_module(str(path))


def get_global_func(name):
    """A function of the global registry (loading its plugin if needed)."""
    return _core.get_global_func(name)


def list_global_funcs():
    return list(_core.list_global_funcs())
