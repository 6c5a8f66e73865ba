"""Loom: a deep-learning compiler framework (docs/python.md).

`import loom` loads the C++ core and no plugin; plugins load when first
needed (a target kind, a pass, an operator, a function), or by name with
`loom.plugins.load`.
"""
import os as _os

# The extension lives next to this file once installed; in a source tree
# it is in build/python/loom (LOOM_BUILD_DIR overrides build/).
_here = _os.path.dirname(_os.path.abspath(__file__))
if not any(name.startswith("_core.") for name in _os.listdir(_here)):
    _build = _os.environ.get("LOOM_BUILD_DIR") or _os.path.join(_os.path.dirname(_os.path.dirname(_here)), "build")
    __path__.append(_os.path.join(_build, "python", "loom"))  # noqa: F821 (the package's own __path__)

from . import _core  # noqa: E402
from ._core import (  # noqa: E402,F401
    LoomError, ParseError, ConfigError, PluginError, TypeInferenceError, RuntimeError, TypeError, LookupError,
    ScheduleError, DataType, Device, Object)
from . import ir, plugins, runtime, nd, graph, op, tir, transform, target  # noqa: E402,F401
from . import _sugar  # noqa: E402,F401 (operators on loom.Object)
from .ir import parse, IRModule  # noqa: E402,F401
from .build import build, Config  # noqa: E402,F401

__version__ = "0.2.0"

# Subpackages that import heavy dependencies (NumPy-only importers, ONNX,
# PyTorch, Dask) load on first attribute access (PEP 562), so
# `import loom` stays fast and `loom.frontend.onnx.from_onnx` works after
# it alone.
_LAZY = ("frontend", "script", "torch", "tune")


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
