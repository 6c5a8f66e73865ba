"""Compiled modules (docs/python.md, "Build and run")."""
from . import _core

Module = _core.Module
Function = _core.Function


def _profile(module):
    """What the modules of this tree recorded of their calls so far, by
    module kind: {"npu": {"regions": {...}, ...}} (docs/npu.md, "Profile");
    empty when none records anything."""
    import json

    out = {}
    pending = [module]
    while pending:
        m = pending.pop(0)
        text = m.profile_json()
        if text:
            out[m.kind] = json.loads(text)
        pending.extend(m.imports)
    return out


Module.profile = _profile


def load_module(path):
    """Opens a library written by Module.export_library."""
    return _core.load_module(str(path))


def get_global_func(name):
    """A function of the global registry (loading its plugin if needed)."""
    return _core.get_global_func(name)


def list_global_funcs():
    return list(_core.list_global_funcs())
