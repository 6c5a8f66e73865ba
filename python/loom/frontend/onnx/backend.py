"""Loom as an ONNX backend (`onnx.backend.base.Backend`): the interface
ONNX's backend tests and its users' harnesses call (docs/frontends.md,
"Loom as an ONNX backend").

    from loom.frontend.onnx import backend
    rep = backend.prepare(model)              # a path, ModelProto or bytes
    outputs = rep.run([x, y])                 # NumPy in, a tuple of NumPy out

Loom compiles ahead of time for static shapes, so a prepared model is
built at its first run, for the shapes of the inputs it is given (and
again for other shapes: one build per input signature, kept).  An input
whose value a converter needs at compile time (a Reshape's target shape
passed as an input, a TopK's k) is bound as a constant of that build
(`from_onnx(..., constants=...)`), found from the importer's
ValueNeededError; its value is part of the build's key.
"""
import numpy as np
import onnx.backend.base

from ... import _core
from ...build import build as _build
from . import ValueNeededError, _load, from_onnx

DEFAULT_CONFIG = {"target": {"kind": "llvm", "mcpu": "native"}}


class LoomRep(onnx.backend.base.BackendRep):
    """A prepared model: run(inputs) builds (once per signature) and runs."""

    def __init__(self, model, config=None):
        self.model = _load(model)
        self.config = config if config is not None else DEFAULT_CONFIG
        initializers = {init.name for init in self.model.graph.initializer}
        self.input_names = [vi.name for vi in self.model.graph.input if vi.name not in initializers]
        self.output_names = [vi.name for vi in self.model.graph.output]
        self.compile_time = set()  # inputs the model needs as constants
        self._builds = {}

    def _arrays(self, inputs):
        if isinstance(inputs, dict):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise _core.TypeError(f"run: no value for the input{'s' if len(missing) > 1 else ''} "
                                      f"{', '.join(repr(m) for m in missing)}")
            return [np.asarray(inputs[n]) for n in self.input_names]
        inputs = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(inputs) != len(self.input_names):
            raise _core.TypeError(f"run: the model takes {len(self.input_names)} inputs "
                                  f"({', '.join(self.input_names)}), got {len(inputs)}")
        return [np.asarray(a) for a in inputs]

    def _build_for(self, arrays):
        named = dict(zip(self.input_names, arrays))
        while True:
            key = tuple((a.shape, a.dtype.str) for a in arrays) + tuple(
                (n, named[n].tobytes()) for n in sorted(self.compile_time))
            if key in self._builds:
                return self._builds[key]
            try:
                module = from_onnx(self.model, shapes={n: a.shape for n, a in named.items()},
                                   constants={n: named[n] for n in self.compile_time})
            except ValueNeededError as e:
                new = set(e.inputs) - self.compile_time
                if not new:
                    raise
                self.compile_time |= new
                continue
            library = _build(module, self.config)
            self._builds[key] = library
            return library

    def run(self, inputs, **kwargs):
        arrays = self._arrays(inputs)
        library = self._build_for(arrays)
        args = [a for n, a in zip(self.input_names, arrays) if n not in self.compile_time]
        result = library["main"](*args)
        outputs = [result] if hasattr(result, "numpy") else list(result)
        return tuple(o.numpy() for o in outputs)


class LoomBackend(onnx.backend.base.Backend):
    """The onnx.backend.base.Backend interface, as class methods."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model, device="CPU", config=None, **kwargs):
        if not cls.supports_device(device):
            raise _core.TypeError(f"the Loom ONNX backend runs on the CPU, not {device!r}")
        return LoomRep(model, config)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        from onnx import helper
        arrays = [np.asarray(a) for a in inputs]
        names = [n for n in node.input if n]
        graph_inputs = [helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                        for n, a in zip(names, arrays)]
        graph_outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        model = helper.make_model(helper.make_graph([node], "node", graph_inputs, graph_outputs))
        return cls.run_model(model, arrays, device, **kwargs)

    @classmethod
    def supports_device(cls, device):
        return str(device).upper().startswith("CPU")


prepare = LoomBackend.prepare
run_model = LoomBackend.run_model
run_node = LoomBackend.run_node
supports_device = LoomBackend.supports_device
