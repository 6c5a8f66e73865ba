"""loom.torch: a model compiled by Loom, called from PyTorch
(docs/extern-torchscript.md, "Back to PyTorch").

`compile(module, example_inputs, config=...)` imports a torch.nn.Module
or a TorchScript module (loom.frontend.torch.from_torchscript: what Loom
cannot compile stays TorchScript, run by libtorch), builds it, and
returns a CompiledModule:
PyTorch code calls it with torch tensors and gets torch tensors back, both
ways through DLPack without a copy.  `CompiledModule.export(path)` writes
one shared library; `load(path)` returns a CompiledModule again, in a
process that need not have the model's Python code.
"""
import torch as _torch

from . import _core
from . import runtime as _runtime
from .build import build as _build

# Without a config: the llvm target for this machine, its default pipeline.
DEFAULT_CONFIG = {"target": {"kind": "llvm", "mcpu": "native"}}


class CompiledModule:
    """A built Loom module whose @main PyTorch calls: torch tensors in
    (CPU; contiguous ones are used without a copy), torch tensors out
    (sharing Loom's memory), a tuple for a tuple result.  Works under
    torch.no_grad() and on tensors that require grad (it computes no
    gradient: its results do not require grad)."""

    def __init__(self, library):
        self.library = library
        self._main = library["main"]

    def __call__(self, *inputs):
        args = [_as_input(x) for x in inputs]
        return _to_torch(self._main(*args))

    def export(self, path):
        """Writes the module to one shared library (load it with loom.torch.load)."""
        self.library.export_library(str(path))

    def __repr__(self):
        return f"<loom.torch.CompiledModule {self.library.kind}>"


def compile(module, example_inputs, config=None):
    """Imports `module` (a torch.nn.Module, scripted first, or a scripted
    or traced module) for inputs shaped like `example_inputs` and builds it
    with `config` (a YAML path, a dict or a loom.Config; the llvm target
    for this machine without one)."""
    from .frontend.torch import from_torchscript
    examples = list(example_inputs) if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    with _torch.no_grad():
        imported = from_torchscript(module, examples)
    return CompiledModule(_build(imported, config if config is not None else DEFAULT_CONFIG))


def load(path):
    """A CompiledModule from a library CompiledModule.export wrote."""
    return CompiledModule(_runtime.load_module(str(path)))


def _as_input(x):
    if isinstance(x, _torch.Tensor):
        x = x.detach()  # DLPack refuses a tensor that requires grad; no gradient flows through Loom
        return x if x.is_contiguous() else x.contiguous()
    return x


def _to_torch(value):
    if hasattr(value, "__dlpack__"):
        return _torch.utils.dlpack.from_dlpack(value)
    if isinstance(value, (tuple, list, _core.Array)):  # a tuple result
        return tuple(_to_torch(v) for v in value)
    raise _core.TypeError(f"loom.torch: the model returned {type(value).__name__}, which is not a tensor")
