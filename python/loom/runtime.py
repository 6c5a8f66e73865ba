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


def register_func(name, fn, override=False):
    """Registers the Python callable `fn` as the global function `name`, so
    that C++, plugins and C API callers (docs/c-api.md) can call it;
    refused when the name is taken, unless `override`."""
    _core.register_global_func(name, fn, bool(override))


def list_global_funcs():
    return list(_core.list_global_funcs())


def set_num_threads(threads):
    """Sizes the runtime's thread pool for the whole process (0: one per
    CPU this process may use).  LOOM_NUM_THREADS, when set, wins; a
    library built with a num-threads of its own sizes the pool again when
    it loads (docs/python.md, "Threads")."""
    _core.set_num_threads(int(threads))


def num_threads():
    """The threads the runtime's pool runs parallel loops on."""
    return _core.num_threads()


def time_evaluator(func, dev="cpu", number=10, repeat=1, min_repeat_ms=0, cache_flush=False):
    """A callable that times `func` (a Function) on its arguments as TVM's
    time_evaluator does (docs/rpc.md, "The client"): the same code as a
    remote session's, so local and remote figures compare.  It returns a
    loom.rpc.TimeResult (seconds per run, one entry per repeat)."""
    from .rpc import TimeResult

    def evaluate(*args):
        n, seconds = _core.time_evaluate(func, list(args), str(dev), int(number), int(repeat), float(min_repeat_ms),
                                         bool(cache_flush))
        return TimeResult(n, seconds)

    return evaluate
