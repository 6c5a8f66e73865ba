"""loom.torch: a model compiled by Loom, called from PyTorch
(docs/extern-torchscript.md, "Back to PyTorch").

`compile(module, example_inputs, config=...)` traces a torch.nn.Module
with the example inputs (torch.jit.trace; scripting only when asked with
script=True, or when tracing is refused), imports the graph with
loom.frontend.torchscript.from_torchscript (what Loom cannot compile stays
TorchScript, run by libtorch), builds it, and returns a CompiledModule:
PyTorch code calls it with torch tensors and gets torch tensors back, both
ways through DLPack without a copy.  `compiled.report` says which nodes
Loom compiled and which stayed TorchScript.  `CompiledModule.export(path)`
writes one shared library; `load(path)` returns a CompiledModule again, in
a process that need not have the model's Python code.
"""
import warnings

import torch as _torch

from . import _core
from . import runtime as _runtime
from .build import build as _build

# Without a config: the llvm target for this machine, its default pipeline.
DEFAULT_CONFIG = {"target": {"kind": "llvm", "mcpu": "native"}}

# Operators that carry a model's arithmetic: when one stays TorchScript,
# compile warns (the report names them).
HEAVY = ("aten::_convolution", "aten::convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
         "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::linear", "aten::matmul", "aten::mm",
         "aten::bmm", "aten::addmm", "aten::einsum", "aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu",
         "aten::_native_multi_head_attention", "aten::scaled_dot_product_attention")


class CompiledModule:
    """A built Loom module whose @main PyTorch calls: torch tensors in
    (CPU; contiguous ones are used without a copy), torch tensors out
    (sharing Loom's memory), a tuple for a tuple result.  Works under
    torch.no_grad() and on tensors that require grad (it computes no
    gradient: its results do not require grad).  `report` is the import
    report (None for a loaded library).  With dynamic dimensions, a call
    whose shapes differ there builds again for them (once per shape)."""

    def __init__(self, library, report=None, rebuild=None, signature=None):
        self.library = library
        self.report = report
        self._main = library["main"]
        self._rebuild = rebuild      # shapes -> library, for dynamic dimensions
        self._signature = signature  # [(shape, dynamic dims)] of the inputs it was built for
        self._builds = {}

    def __call__(self, *inputs):
        args = [_as_input(x) for x in inputs]
        main = self._main
        if self._signature is not None:
            main = self._for_shapes(args)
        return _to_torch(main(*args))

    def _for_shapes(self, args):
        shapes = tuple(tuple(a.shape) if isinstance(a, _torch.Tensor) else None for a in args)
        first = tuple(tuple(shape) for shape, _ in self._signature)
        if shapes == first:
            return self._main
        for k, ((shape, dynamic), got) in enumerate(zip(self._signature, shapes)):
            if got is None:
                continue
            if len(got) != len(shape):
                raise _core.TypeError(f"loom.torch: input {k} has rank {len(got)}, the module was compiled for rank "
                                      f"{len(shape)}")
            for d, (want, have) in enumerate(zip(shape, got)):
                if want != have and d not in dynamic:
                    raise _core.TypeError(f"loom.torch: input {k} has {have} in dimension {d}, the module was "
                                          f"compiled for {want} there (declare it dynamic: "
                                          f"compile(..., dynamic={{{k}: {{{d}: 'name'}}}}))")
        if shapes not in self._builds:
            self._builds[shapes] = self._rebuild(shapes)["main"]
        return self._builds[shapes]

    def export(self, path):
        """Writes the module to one shared library (load it with loom.torch.load)."""
        self.library.export_library(str(path))

    def __repr__(self):
        return f"<loom.torch.CompiledModule {self.library.kind}>"


def _trace(module, examples, script):
    """The TorchScript module to import: the module itself when scripted
    already; traced with the examples; scripted when asked or when tracing
    is refused.  PyTorch's errors become one Loom error."""
    if isinstance(module, _torch.jit.ScriptModule):
        return module
    errors = []
    if not script:
        try:
            # (Not under no_grad: there nn.MultiheadAttention records its
            # fused fast path, which has no converter.)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", _torch.jit.TracerWarning)
                return _torch.jit.trace(module, tuple(examples), check_trace=False)
        except Exception as e:  # noqa: BLE001 (PyTorch's tracer: RuntimeError, TypeError, ...)
            errors.append(f"torch.jit.trace: {type(e).__name__}: {_first_line(e)}")
    try:
        return _torch.jit.script(module)
    except Exception as e:  # noqa: BLE001 (NotSupportedError and kin)
        errors.append(f"torch.jit.script: {type(e).__name__}: {_first_line(e)}")
    raise _core.TypeError("loom.torch.compile: PyTorch can neither trace nor script the module:\n  " +
                          "\n  ".join(errors))


def _first_line(e):
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _dynamic_dims(dynamic, count):
    """{input index: {dimension: name}} from compile's `dynamic`: a dict by
    input index, a list (one dict per input), or, for one input, its dict."""
    if dynamic is None:
        return [{} for _ in range(count)]
    if isinstance(dynamic, (list, tuple)):
        dims = [dict(d or {}) for d in dynamic] + [{} for _ in range(count - len(dynamic))]
    elif isinstance(dynamic, dict) and all(isinstance(v, dict) for v in dynamic.values()):
        dims = [dict(dynamic.get(k, {})) for k in range(count)]
    elif isinstance(dynamic, dict):
        dims = [dict(dynamic)] + [{} for _ in range(count - 1)]
    else:
        raise _core.TypeError(f"loom.torch.compile: dynamic takes {{input: {{dimension: name}}}}, got {dynamic!r}")
    return dims[:count]


def compile(module, example_inputs, config=None, *, script=False, dynamic=None, eval=False):
    """Imports `module` (a torch.nn.Module, traced with the examples, or a
    scripted or traced module) for inputs like `example_inputs` and builds
    it with `config` (a YAML path, a dict or a loom.Config; the llvm target
    for this machine without one).  script=True scripts instead of
    tracing.  `dynamic` names dimensions that may change between calls
    ({input index: {dimension: name}}, e.g. {0: {0: "batch"}}): a call
    with other sizes there builds for them.  A module in training mode is
    compiled as it computes there, with a warning, unless eval=True."""
    from .frontend.common import evaluating
    from .frontend.torchscript import from_torchscript
    examples = list(example_inputs) if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    dims = _dynamic_dims(dynamic, len(examples))
    chosen = config if config is not None else DEFAULT_CONFIG
    if _quantized(module):
        # PyTorch's quantized modules: from_fx, whose trace says each
        # quantized value's scale and zero point (docs/frontends.md,
        # "Quantized PyTorch models"); TorchScript's graph does not.
        if script or any(dims):
            raise _core.TypeError("loom.torch.compile: a quantized module is imported through from_fx, which takes "
                                  "neither script=True nor dynamic dimensions")
        from .frontend.fx import from_fx
        return CompiledModule(_build(from_fx(module, examples, eval=eval), chosen), None)
    with evaluating(module, eval, "loom.torch.compile"):
        traced = _trace(module, examples, script)
        imported, report = from_torchscript(traced, examples, report=True)
    heavy = {kind: n for kind, n in report.kept().items() if kind in HEAVY}
    if heavy:
        warnings.warn("loom.torch.compile: heavy operators stay TorchScript (libtorch runs them): " +
                      ", ".join(f"{k} x{n}" for k, n in sorted(heavy.items())) + "; see compiled.report",
                      stacklevel=2)
    library = _build(imported, chosen)
    signature = None
    rebuild = None
    if any(dims):
        signature = [(tuple(x.shape), set(d)) for x, d in zip(examples, dims)]

        def rebuild(shapes):
            fresh = [_torch.randn(s).to(x.dtype) if x.dtype.is_floating_point else _torch.zeros(s, dtype=x.dtype)
                     for s, x in zip(shapes, examples)]
            with evaluating(module, eval, "loom.torch.compile"):
                again = from_torchscript(_trace(module, fresh, script), fresh)
            return _build(again, chosen)
    return CompiledModule(library, report, rebuild, signature)


def _quantized(module):
    """Whether `module` holds PyTorch's quantized modules (eager mode's
    converted model, or FX graph mode's)."""
    if isinstance(module, _torch.jit.ScriptModule) or not isinstance(module, _torch.nn.Module):
        return False
    prefixes = ("torch.ao.nn.quantized", "torch.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                "torch.nn.intrinsic.quantized")
    return any(type(m).__module__.startswith(prefixes) for m in module.modules())


def load(path):
    """A CompiledModule from a library CompiledModule.export wrote."""
    return CompiledModule(_runtime.load_module(str(path)))


# PyTorch's DLPack (1.13) refuses bool and bfloat16: they cross as the
# integers of their width, relabelled on either side (no copy).
_BY_BITS = {_torch.bool: (_torch.uint8, "bool"), _torch.bfloat16: (_torch.int16, "bfloat16")}


def _as_input(x):
    if isinstance(x, _torch.Tensor):
        if x.is_complex():
            raise _core.TypeError(f"loom.torch: a {x.dtype} tensor; Loom has no complex types (pass the real and "
                                  "imaginary parts, torch.view_as_real)")
        if x.layout != _torch.strided:
            raise _core.TypeError(f"loom.torch: a {x.layout} tensor; Loom takes dense (strided) tensors "
                                  "(to_dense() first)")
        if x.device.type != "cpu":
            raise _core.TypeError(f"loom.torch: a tensor on {x.device}; Loom's compiled module takes CPU tensors")
        x = x.detach()  # DLPack refuses a tensor that requires grad; no gradient flows through Loom
        x = x if x.is_contiguous() else x.contiguous()
        if x.dtype in _BY_BITS:
            carrier, name = _BY_BITS[x.dtype]
            return _core.ndarray_from_dlpack(x.view(carrier)).view(_core.DataType(name))
        return x
    return x


def _to_torch(value):
    if hasattr(value, "__dlpack__"):
        dtype = str(value.dtype)
        if dtype in ("bool", "bfloat16"):
            carrier = "uint8" if dtype == "bool" else "int16"
            tensor = _torch.utils.dlpack.from_dlpack(value.view(_core.DataType(carrier)))
            return tensor.view(_torch.bool if dtype == "bool" else _torch.bfloat16)
        return _torch.utils.dlpack.from_dlpack(value)
    if isinstance(value, (tuple, list, _core.Array)):  # a tuple result
        return tuple(_to_torch(v) for v in value)
    raise _core.TypeError(f"loom.torch: the model returned {type(value).__name__}, which is not a tensor")
