"""The PyTorch importer through torch.fx (docs/frontends.md):
`from_fx(module, example_inputs)`.

torch.fx traces the module's forward symbolically into a graph of
placeholders, calls of submodules (`call_module`), functions
(`call_function`) and tensor methods (`call_method`), parameters
(`get_attr`) and an output.  Each call target has one small converter in
the registry below, registered with `@converter(target)`: a module class
(`torch.nn.Conv2d`), a function (`torch.flatten`, `operator.add`) or a
method name (`"flatten"`).  A converter gets the context, the node and the
node's arguments (graph expressions for tensors, Python values otherwise;
keyword arguments as `node.kwargs`); module converters find their module
as `node.module`.  Parameters and buffers become constants.
"""
import operator
import warnings

import numpy as np

from .. import _core
from .. import graph, ir, op, tir
from . import Registry, UnsupportedOperatorError, aten, aten_quantized, naming
from .common import Context, evaluating, without_none

REGISTRY = Registry("PyTorch")
_ANY = (0, 0)  # PyTorch converters are not versioned by opset


def _key(target):
    """The registry key of a call target: 'torch.nn.Conv2d',
    'torch.flatten', 'operator.add', or 'Tensor.flatten' for a method."""
    if isinstance(target, str):
        return f"Tensor.{target}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    if module.startswith("torch.nn.modules"):
        module = "torch.nn"
    elif module in ("torch._C._VariableFunctions", "torch._C._nn") or module.startswith("torch._C"):
        module, name = "torch", getattr(target, "__name__", name)  # builtins: '_VariableFunctionsClass.sin'
    if module == "torch" and "." in name:
        name = name.rsplit(".", 1)[1]
    elif module == "_operator":
        module = "operator"
    return f"{module}.{name}" if module else name


def converter(*targets, replace=False):
    """Registers the decorated function as the converter of each target."""
    def register(fn):
        for t in targets:
            REGISTRY.register(_key(t), fn, _ANY, replace=replace)
        return fn
    return register


def supported_operators():
    return [name for name, _, _ in REGISTRY.operators()]


class Node:
    """One fx node as a converter sees it."""

    def __init__(self, fx_node, module, kwargs):
        self.fx = fx_node
        self.name = fx_node.name
        self.kind = _key(type(module)) if module is not None else _key(fx_node.target)
        self.module = module
        self.path = fx_node.target if module is not None else None  # the module's name in the model
        self.kwargs = dict(kwargs)

    def unsupported(self, what):
        raise _core.TypeError(f"{self.kind} '{self.name}': {what} is not supported (docs/frontends.md)")


def _numpy(tensor):
    return tensor.detach().cpu().contiguous().numpy()


def _module_key(module):
    """The registry key of a module: its class's, or the nearest base
    class's with a converter (a LayerNorm2d subclassing nn.LayerNorm)."""
    for cls in type(module).__mro__:
        key = _key(cls)
        if REGISTRY.find(key, 0) is not None:
            return key
    return _key(type(module))


def from_fx(module, example_inputs, *, params="constants", eval=False, dynamic_axes=None):
    """Imports a torch.nn.Module as an IRModule whose @main takes tensors
    shaped like `example_inputs`.  Its module-level graph (torch.fx's
    symbolic trace) is converted when every call in it has a converter;
    otherwise, or when symbolic tracing fails (Python control flow on
    shapes), the aten graph make_fx traces with the example inputs (every
    operator PyTorch runs, functionalized; aten converters, aten.py).
    Parameters and buffers become constants (params="constants"), or
    parameters of @main after the inputs, returned with their values as
    (module, {name: array}) (params="inputs").  A module in training mode
    is imported as it computes there, with a warning, unless eval=True,
    which imports it in eval mode (and leaves its mode as it was).
    dynamic_axes={input index: {axis: name}} makes those dimensions
    symbolic (one variable per name), as torch.onnx.export's argument does;
    the aten graph then comes from make_fx's symbolic tracing (PyTorch's
    shape arithmetic recorded), and a module whose Python code branches on
    a dynamic dimension is refused."""
    if params not in ("constants", "inputs"):
        raise _core.TypeError(f"from_fx: params must be 'constants' or 'inputs', got {params!r}")
    examples = list(example_inputs) if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    shapes = _dynamic_shapes(examples, dynamic_axes)
    with evaluating(module, eval, "from_fx"):
        traced, missing = _symbolic(module, examples)
        if traced is None or missing:
            return from_aten(module, examples, params=params, why=missing if traced is not None else None,
                             shapes=shapes)
        try:
            return _convert_fx(traced, examples, params, shapes)
        except _core.LoomError as refused:  # a converter refused its arguments: the aten graph may do
            try:
                return from_aten(module, examples, params=params, shapes=shapes)
            except _core.LoomError:
                raise refused from None


def _dynamic_shapes(examples, dynamic_axes):
    """Each input's shape with the dimensions dynamic_axes names made tir
    variables (one per name), or None without dynamic_axes."""
    if not dynamic_axes:
        return None
    if isinstance(dynamic_axes, (list, tuple)):
        dynamic_axes = dict(enumerate(dynamic_axes))
    if not isinstance(dynamic_axes, dict):
        raise _core.TypeError(f"from_fx: dynamic_axes must map an input's index to {{axis: name}}, "
                              f"got {type(dynamic_axes).__name__}")
    symbols, shapes = {}, [list(e.shape) for e in examples]
    for index, axes in dynamic_axes.items():
        if not isinstance(index, int) or not 0 <= index < len(examples) or not isinstance(axes, dict):
            raise _core.TypeError(f"from_fx: dynamic_axes has the entry {index!r}: {axes!r}; it needs an input's "
                                  f"index (0 to {len(examples) - 1}) and a dict {{axis: name}}")
        rank = len(shapes[index])
        for axis, name in axes.items():
            if not isinstance(axis, int) or not -rank <= axis < rank or not isinstance(name, str) or not name:
                raise _core.TypeError(f"from_fx: dynamic_axes of input {index} (rank {rank}) has {axis!r}: "
                                      f"{name!r}; it needs an axis and a name")
            shapes[index][axis] = symbols.setdefault(name, tir.Var(name))
    return shapes


def _tracer():
    """torch.fx's tracer, with `a, b = call(...)` unpacking a call's result
    on every Python: torch 1.13 finds the unpacking instruction by an index
    that Python 3.11's inline caches shift (an IndexError, so every module
    that unpacks a submodule's tuple, `out, _ = self.attn(x, x, x)`, fell
    back to the aten path); this finds it by its offset."""
    import dis
    import inspect
    import torch.fx

    class Proxy(torch.fx.Proxy):
        def __iter__(self):
            frame = inspect.currentframe().f_back
            for inst in dis.get_instructions(frame.f_code):
                if inst.offset == frame.f_lasti:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
            return self.tracer.iter(self)

    class Tracer(torch.fx.Tracer):
        def proxy(self, node):
            return Proxy(node, self)

    return Tracer()


def _symbolic(module, examples):
    """(the module-level fx graph, [(target, node) without a converter]),
    or (None, None) when symbolic tracing fails."""
    import torch
    import torch.fx
    if isinstance(module, torch.fx.GraphModule):
        traced = module
    else:
        # The module is traced as the child of a root, so a torch.nn module
        # (a leaf for torch.fx: nn.TransformerEncoder) is one call of it.
        # The root's forward is written with one parameter per example
        # input: fx traces a signature, not *args.
        names = ", ".join(f"input{k}" for k in range(len(examples)))
        scope = {}
        exec(f"def forward(self, {names}):\n    return self.model({names})\n", scope)

        class Root(torch.nn.Module):
            forward = scope["forward"]

            def __init__(self, inner):
                super().__init__()
                self.model = inner
        try:
            tracer = _tracer()
            graph = tracer.trace(Root(module))
            traced = torch.fx.GraphModule(tracer.root, graph)
        except Exception:  # noqa: BLE001 (control flow on values: the aten path traces with real tensors)
            return None, None
    submodules = dict(traced.named_modules())
    missing = []
    for n in traced.graph.nodes:
        if n.op == "call_module":
            key = _module_key(submodules[n.target])
        elif n.op in ("call_function", "call_method"):
            key = _key(n.target)
        else:
            continue
        if REGISTRY.find(key, 0) is None:
            missing.append((key, n.name))
    return traced, missing


def _convert_fx(traced, examples, params, shapes=None):
    import torch
    submodules = dict(traced.named_modules())
    ctx = Context()
    values, inputs, weights = {}, [], {}
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(examples):
        raise _core.TypeError(f"from_fx: the module takes {len(placeholders)} inputs, "
                              f"got {len(examples)} example inputs")
    for k, (n, example) in enumerate(zip(placeholders, examples)):
        var = aten.input_var(n.name, example, f"from_fx: input {k}", shapes[k] if shapes else None)
        inputs.append(var)
        values[n] = var
    params_out, param_vars = [], {}

    def weight(name, tensor):
        array = _numpy(tensor)
        if params == "constants":
            return array
        if name not in param_vars:
            param_vars[name] = graph.Var(name.replace(".", "_"), shape=array.shape, dtype=str(array.dtype))
            params_out.append(param_vars[name])
            weights[name.replace(".", "_")] = array
        return param_vars[name]

    ctx.weight = weight
    result = None
    for n in traced.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "get_attr":
            obj = traced
            for part in n.target.split("."):
                obj = getattr(obj, part)
            values[n] = weight(n.target, obj) if isinstance(obj, torch.Tensor) else obj
            continue
        args = torch.fx.node.map_arg(n.args, lambda a: values[a])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: values[a])
        if n.op == "output":
            result = args[0]
            break
        sub = submodules[n.target] if n.op == "call_module" else None
        node = Node(n, sub, kwargs)
        if sub is not None:
            node.kind = _module_key(sub)
        convert, _ = REGISTRY.find(node.kind, 0)
        with naming(f"{node.kind} '{node.name}'"):
            out = convert(ctx, node, *args)
            if out is not None and not isinstance(out, (np.ndarray, int, float, tuple, list)):
                ctx.type(out)  # typed now: errors name the node
        values[n] = out
    return _finish(ctx, result, inputs, params_out, weights, params)


def _finish(ctx, result, inputs, params_out, weights, params):
    """The module of a converted graph whose output is `result`."""
    outputs = without_none(list(_flat(result)), "from_fx")
    if any(isinstance(o, aten.Complex) for o in outputs):
        raise _core.TypeError("from_fx: the model returns a complex tensor, which Loom has no type for; return "
                              "torch.view_as_real(...) of it (docs/frontends.md, \"Complex values in PyTorch "
                              "models\")")
    exprs = [ctx.expr(o) for o in outputs]
    body = exprs[0] if len(exprs) == 1 and not isinstance(result, (tuple, list)) else graph.Tuple(exprs)
    mod = ir.IRModule({"main": graph.Function(inputs + params_out, body)})
    return (mod, weights) if params == "inputs" else mod


def _flat(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flat(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    else:
        yield value


def _functionalize(f):
    """PyTorch's functionalization of `f` (functorch's, torch.func's in
    PyTorch 2)."""
    try:
        from functorch import functionalize
    except ImportError:  # PyTorch 2: torch.func
        from torch.func import functionalize
    return functionalize(f)


def aten_graph(module, examples):
    """The functionalized aten graph of `module` on the example inputs
    (make_fx, real tensors)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        return make_fx(_functionalize(module))(*examples)
    except Exception as e:  # PyTorch's own error while running the module
        raise _core.TypeError(f"from_fx: PyTorch could not trace the module on the example inputs "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None


def aten_graph_symbolic(module, examples, shapes):
    """The aten graph of `module` with the dimensions `shapes` makes
    variables symbolic (make_fx's symbolic tracing, the parameters and
    buffers passed in), and those state tensors by name, in the order of
    the graph's first placeholders.  Each dynamic dimension is traced at
    a size of its own that no static dimension has (PyTorch gives equal
    sizes one symbol).  Refused: a module whose traced code compares a
    dynamic dimension in a way that comes out otherwise for some size from
    2 up (a guard), and one whose graph differs when traced again at other
    sizes (a size turned into a Python int: an arange's length)."""
    first, sizes = _trace_symbolic(module, examples, shapes, set())
    again, _ = _trace_symbolic(module, examples, shapes, set(sizes.values()))
    difference = _graph_difference(first[0], again[0])
    if difference:
        names = sorted({d.name for shape in shapes for d in shape if not isinstance(d, int)})
        raise _core.TypeError(f"from_fx: the module's graph depends on the value of {', '.join(names)} ({difference} "
                              "differs between two sizes): import with static shapes")
    return _functionalized(first[0]), first[1]


def _trace_symbolic(module, examples, shapes, avoid):
    """((graph module, {name: state tensor}), {name: size traced}) of one
    symbolic trace, no dynamic size in `avoid` (see aten_graph_symbolic)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless
    state = dict(module.named_parameters())
    state.update(module.named_buffers())
    used = {int(d) for t in list(examples) + list(state.values()) for d in t.shape} | set(avoid)
    sizes, traced_inputs = {}, []
    for e, shape in zip(examples, shapes):
        dims = []
        for d, given in zip(shape, e.shape):
            if isinstance(d, int):
                dims.append(d)
                continue
            if d.name not in sizes:
                size = max(int(given), 2)  # PyTorch specialises sizes 0 and 1
                while size in used:
                    size += 1
                used.add(size)
                sizes[d.name] = size
            dims.append(sizes[d.name])
        traced_inputs.append(torch.zeros(dims, dtype=e.dtype))

    single = []

    def run(state, *inputs):
        out = stateless.functional_call(module, state, inputs)
        single.append(isinstance(out, torch.Tensor))
        return out

    try:
        gm = make_fx(run, tracing_mode="symbolic")(state, *traced_inputs)
    except Exception as e:  # PyTorch's own error while tracing
        raise _core.TypeError(f"from_fx: PyTorch could not trace the module symbolically for dynamic_axes "
                              f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    # The symbols of the dimensions: a dynamic one's name, a static one's
    # value.  A comparison PyTorch recorded (a guard) that names a dynamic
    # dimension is a test of its value, the module's (`if n > 4`) or
    # PyTorch's own (a reshape's copy of a transposed tensor for more than
    # one row): refused where it would not come out as it did for some
    # size from 2 up (sizes 0 and 1 PyTorch treats apart itself, and its
    # own tests there choose strides, which Loom does not have).  The
    # inputs' contiguity, on strides, is not the module's.
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"][len(state):]
    symbols, statics = {}, {}
    for n, shape in zip(placeholders, shapes):
        for d, traced in zip(shape, n.meta["val"].shape):
            node = traced.get_pyobj() if hasattr(traced, "get_pyobj") else getattr(traced, "node", None)
            expr = getattr(node, "expr", None)
            if expr is None:
                continue
            if isinstance(d, int):
                statics[expr] = d
            else:
                symbols[expr] = d.name
    trials = [2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 127, 128, 129, 1000, 4096]
    for guard in getattr(getattr(gm, "shape_env", None), "guards", []):
        expr, value = guard[0], guard[1]
        comparison = isinstance(value, bool) or bool(getattr(value, "is_Boolean", False))
        free = getattr(expr, "free_symbols", set())
        if not comparison or any("stride" in str(f) for f in free):
            continue
        left = expr.subs(statics) if statics else expr
        dynamic = [f for f in getattr(left, "free_symbols", set()) if f in symbols]
        if not dynamic:
            continue
        for trial in trials:
            try:
                holds = bool(left.subs({f: trial for f in dynamic})) == bool(value)
            except TypeError:  # undecided (another symbol): not known to hold
                holds = False
            if not holds:
                named = sorted({symbols[f] for f in dynamic})
                raise _core.TypeError(f"from_fx: the traced code compares the dynamic dimension"
                                      f"{'s' * (len(named) > 1)} {', '.join(named)} ({expr}: not so at {trial}), so "
                                      "a graph traced at one size would not hold for others: import with static "
                                      "shapes, or move the test out of the module")
    gm.loom_single_output = bool(single and single[0])  # make_fx returns a lone tensor in a list
    gm.loom_trace_inputs = (state, traced_inputs)
    return (gm, state), sizes


def _functionalized(gm):
    """`gm` without in-place operators (MobileNetV3's hardswish_ on a tensor
    read again), by tracing the recorded graph once more, which PyTorch
    1.13 does with symbolic sizes where it refuses to functionalize the
    module itself; `gm` as it is where that fails (the converters then
    refuse an in-place operator whose tensor is read again)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    state, inputs = gm.loom_trace_inputs
    try:
        functional = make_fx(_functionalize(gm), tracing_mode="symbolic")(state, *inputs)
    except Exception:  # noqa: BLE001
        return gm
    functional.loom_single_output = gm.loom_single_output
    return functional


def _graph_difference(a, b):
    """The first node (as 'aten::x \'name\'') where two traces of one module
    differ in operator or in a constant argument, or None."""
    import torch
    nodes_a, nodes_b = list(a.graph.nodes), list(b.graph.nodes)
    if len(nodes_a) != len(nodes_b):
        return f"its number of nodes ({len(nodes_a)} against {len(nodes_b)})"
    position = {n: k for k, n in enumerate(nodes_a)}
    position.update({n: k for k, n in enumerate(nodes_b)})
    for na, nb in zip(nodes_a, nodes_b):
        leaves_a, leaves_b = [], []
        torch.fx.node.map_aggregate((na.args, na.kwargs), leaves_a.append)
        torch.fx.node.map_aggregate((nb.args, nb.kwargs), leaves_b.append)
        key = lambda v: ("node", position[v]) if isinstance(v, torch.fx.Node) else v  # noqa: E731
        if na.op != nb.op or na.target != nb.target or [key(v) for v in leaves_a] != [key(v) for v in leaves_b]:
            return f"{_aten_kind(na.target)} '{na.name}'"
    return None


_INT_ARITHMETIC = (operator.mul, operator.add, operator.sub, operator.floordiv, operator.mod, operator.neg)


def _shape_kind(target):
    """'size', 'numel' or 'arithmetic' for a node of PyTorch's symbolic
    shape arithmetic (a tensor's dimension, its count of elements, integer
    operators over them), else None."""
    import torch
    if target in _INT_ARITHMETIC:
        return "arithmetic"
    packet = getattr(target, "overloadpacket", target)
    for kind in ("size", "numel"):
        if packet is getattr(torch.ops.aten, f"sym_{kind}", None):
            return kind
    return None


def _shape_value(ctx, kind, args):
    """A tensor's dimension (kind 'size') or count of elements ('numel')
    over Loom's dimensions (ints and tir expressions)."""
    dims = ctx.shape(aten._t(ctx, args[0]))
    if kind == "size":
        return dims[args[1]]
    total = 1
    for d in dims:
        total = total * d
    return total


def from_aten(module, examples, *, params="constants", why=None, shapes=None):
    """Imports `module` through its aten graph (see from_fx); `shapes`:
    the inputs' shapes with symbolic dimensions (from_fx's dynamic_axes)."""
    import torch
    if shapes is None:
        gm, state = aten_graph(module, examples), {}
    else:
        gm, state = aten_graph_symbolic(module, examples, shapes)
    # A node that reads no input (a weight's weight norm, a constant's
    # transpose) is computed at import (_fold) and needs no converter.
    varying = {n for n in gm.graph.nodes if n.op == "placeholder"}
    if params == "inputs":
        varying |= {n for n in gm.graph.nodes if n.op == "get_attr" and
                    isinstance(getattr(gm, n.target, None), torch.nn.Parameter)}
    calls = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if any(a in varying for a in n.all_input_nodes):
            varying.add(n)
        elif not _random(n.target):
            continue
        if n.target is not operator.getitem and _shape_kind(n.target) is None:
            calls.append((_aten_kind(n.target), n.name))
    missing = [(kind, name) for kind, name in calls if aten.find(kind) is None]

    def refuse(missing):
        try:
            aten.REGISTRY.check(missing, 0)
        except UnsupportedOperatorError as e:
            note = ""
            if why:
                note = ("\n(its module-level graph has no converter for " +
                        ", ".join(sorted({k for k, _ in why})) + "; its aten graph was tried instead)")
            raise UnsupportedOperatorError(str(e) + note) from None
    if missing:
        refuse(missing)
    ctx = Context()
    values, inputs, weights, params_out = {}, [], {}, []
    traced_sizes = {}  # a size the data decides, as traced -> the node that made it
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n, (name, obj) in zip(placeholders, state.items()):  # parameters and buffers, passed in (symbolic)
        array = _numpy(obj)
        if params == "inputs" and isinstance(obj, torch.nn.Parameter):
            var = graph.Var(name.replace(".", "_"), shape=array.shape, dtype=str(array.dtype))
            params_out.append(var)
            weights[name.replace(".", "_")] = array
            values[n] = var
        else:
            values[n] = array
    for k, (n, example) in enumerate(zip(placeholders[len(state):], examples)):
        var = aten.input_var(f"input{k}", example, f"from_fx: input {k}", shapes[k] if shapes else None)
        inputs.append(var)
        values[n] = var
    result = None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "get_attr":
            obj = getattr(gm, n.target)
            array = _numpy(obj) if isinstance(obj, torch.Tensor) else obj
            if params == "inputs" and isinstance(obj, torch.nn.Parameter):
                var = graph.Var(n.target, shape=array.shape, dtype=str(array.dtype))
                params_out.append(var)
                weights[n.target] = array
                values[n] = var
            else:
                values[n] = array
            continue
        if n.op == "output":
            result = torch.fx.node.map_arg(n.args[0], lambda a: values[a])
            if getattr(gm, "loom_single_output", False) and isinstance(result, (list, tuple)) and len(result) == 1:
                result = result[0]
            break
        args = torch.fx.node.map_arg(n.args, lambda a: values[a])
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: values[a])
        shape_kind = _shape_kind(n.target) if n.op == "call_function" else None
        if shape_kind == "arithmetic":
            values[n] = n.target(*args)
            continue
        if shape_kind is not None:  # a dimension of a tensor, or its count of elements
            values[n] = _shape_value(ctx, shape_kind, args)
            continue
        if n.target is operator.getitem:
            values[n] = args[0][args[1]]
            if values[n] is None and n.users:
                maker = n.args[0]
                raise _core.TypeError(f"{_aten_kind(maker.target)} '{maker.name}': its result {args[1]} is not "
                                      "supported (docs/frontends.md)")
            continue
        kind = _aten_kind(n.target)
        if kind.endswith("_") and not kind.endswith("__") and n.args and isinstance(n.args[0], torch.fx.Node):
            # An in-place operator functionalization left (zero_ on a slice
            # of a clone): the converters compute values, so a mutated
            # tensor that is read again, or that views another, would be
            # read as it was.  Refused rather than wrong.
            target = n.args[0]
            later = [u for u in target.users if u is not n]
            if later or _aten_kind(getattr(target, "target", None)) in _VIEWS:
                raise _core.TypeError(f"{kind} '{n.name}': an in-place operator on a tensor that is read again or "
                                      "views another (PyTorch's functionalization left it) is not supported "
                                      "(docs/frontends.md)")
        folded = _fold(n, args, kwargs)
        if folded is not None:
            values[n] = None if folded is _NOTHING else folded
            continue
        if traced_sizes and shapes is None:
            _warn_traced_size(n, args, kwargs, traced_sizes)
        if aten.find(kind) is None:  # a node of constants PyTorch could not compute either
            refuse([(kind, n.name)])
        node = aten.Node(kind, n.name)
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "layout", "pin_memory", "memory_format")}
        with naming(f"{kind} '{n.name}'"):
            try:
                out = aten.find(kind)(ctx, node, *args, **kwargs)
                meta = n.meta.get("tensor_meta")
                if getattr(meta, "is_quantized", False):  # PyTorch's result lies on a quantized grid
                    out = aten_quantized.requantized(ctx, out, meta)
            except aten.Unsupported as e:
                raise _core.TypeError(f"{kind} '{n.name}': {e} is not supported (docs/frontends.md)") from None
            for o in (out if isinstance(out, tuple) else (out,)):
                if isinstance(o, aten.Complex):
                    ctx.type(o.parts)
                elif o is not None and not isinstance(o, (np.ndarray, int, float, list)):
                    ctx.type(o)  # typed now: errors name the node
        values[n] = out
        if shapes is None:
            traced_sizes.update(_data_decided_sizes(ctx, n, out))
    return _finish(ctx, result, inputs, params_out, weights, params)


def _data_decided_sizes(ctx, n, out):
    """{traced size: n} for the dimensions of n's results that the data
    decides (Loom types them with a variable; the trace has a number)."""
    metas = n.meta.get("tensor_meta")
    outs = out if isinstance(out, tuple) else (out,)
    metas = (metas,) if hasattr(metas, "shape") else metas if isinstance(metas, (tuple, list)) else ()
    found = {}
    for o, meta in zip(outs, metas):
        if o is None or isinstance(o, (np.ndarray, int, float, list, aten.Complex)) or not hasattr(meta, "shape"):
            continue
        for d, traced in zip(ctx.shape(o), meta.shape):
            if not isinstance(d, int) and d.type_key == "tir.Var" and isinstance(traced, int):
                found[traced] = n
    return found


def _warn_traced_size(n, args, kwargs, traced_sizes):
    """Warns when a number n reads equals a size the data decided in the
    trace: make_fx runs the module on the examples, so a size read in
    Python (len(), .shape[0]) is a constant of the aten graph, right only
    for those examples."""
    import torch
    numbers = []
    torch.fx.node.map_aggregate((args, kwargs), lambda a: numbers.append(a) if isinstance(a, (int, float)) and
                                not isinstance(a, bool) else None)
    for number in numbers:
        maker = traced_sizes.get(number) if float(number).is_integer() else None
        if maker is not None:
            warnings.warn(f"from_fx: {_aten_kind(n.target)} '{n.name}' reads the number {number:g}, which is the "
                          f"size {_aten_kind(maker.target)} '{maker.name}' had in the trace; if it is that size "
                          "(len(), .shape read in Python), PyTorch's trace fixed it for the examples: import with "
                          "from_torchscript or from_onnx, which keep it (docs/frontends.md, \"Shapes the data "
                          "decides\")", stacklevel=3)
            return


def _fold(n, args, kwargs):
    """The node computed now by PyTorch when every tensor it reads is known
    (a weight, a constant, a shape's arithmetic): a weight's transpose in
    a linear layer, a position embedding's reshape.  None when it reads a
    run-time value, makes none, or is random."""
    import torch
    leaves = []
    torch.fx.node.map_aggregate((args, kwargs), lambda a: leaves.append(a))
    if any(not isinstance(a, (np.ndarray, int, float, bool, str, type(None), torch.dtype, torch.device,
                              torch.layout, torch.memory_format)) for a in leaves):
        return None  # reads a Loom expression (a run-time value)
    if not any(isinstance(a, np.ndarray) for a in leaves):
        return None  # a constructor (zeros, arange): its converter makes the constant
    if _random(n.target):
        return None
    to_torch = lambda a: torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a  # noqa: E731
    # The operands are contiguous copies, not the views PyTorch traced, so
    # a view taking explicit strides would read them wrongly: _reshape_alias
    # is the reshape it stands for (as its converter takes it).
    target = n.target
    if _aten_kind(target) == "aten::_reshape_alias":
        target, args = torch.reshape, args[:2]
    try:
        with torch.no_grad():
            out = target(*torch.fx.node.map_aggregate(args, to_torch), **torch.fx.node.map_aggregate(kwargs, to_torch))
    except Exception:  # noqa: BLE001 (let the converter say what is wrong)
        return None

    def back(v):
        if isinstance(v, torch.Tensor):
            if v.dtype == torch.bfloat16 or v.is_complex():
                raise ValueError("not a NumPy dtype")
            return v.detach().contiguous().numpy()
        if isinstance(v, (tuple, list)):
            return type(v)(back(x) for x in v)
        return v
    if out is None:
        return _NOTHING  # a check of constants (_linalg_check_errors) that passed
    try:
        return back(out)
    except ValueError:
        return None


def _random(target):
    """Whether a call target draws random numbers (never computed at import)."""
    name = str(getattr(target, "__name__", ""))
    return any(word in name for word in ("rand", "dropout", "bernoulli", "normal"))


_NOTHING = object()  # _fold's result for a node computed at import that gives no value


_VIEWS = {"aten::slice", "aten::select", "aten::view", "aten::as_strided", "aten::transpose", "aten::permute",
          "aten::unsqueeze", "aten::squeeze", "aten::expand", "aten::t", "aten::diagonal", "aten::narrow",
          "aten::_reshape_alias", "aten::unfold", "aten::alias", "aten::split", "aten::chunk"}


def _aten_kind(target):
    """'aten::convolution' for aten.convolution.default."""
    if target is None or isinstance(target, str):
        return str(target)
    name = getattr(target, "__name__", str(target))  # 'convolution.default'
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        name = packet.__name__
    namespace = getattr(target, "namespace", "aten")
    return f"{namespace}::{name.split('.')[0]}"


# ------------------------------------------------------------ helpers

def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


def _param(ctx, node, name):
    tensor = getattr(node.module, name)
    return None if tensor is None else ctx.expr(ctx.weight(f"{node.path}.{name}", tensor))


def _arg(node, args, index, name, default):
    if len(args) > index:
        return args[index]
    return node.kwargs.get(name, default)


# ------------------------------------------------------------ modules

def _torch():
    import torch
    return torch


def _register_modules():
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    @converter(nn.Conv2d)
    def conv2d(ctx, node, x):
        m = node.module
        if m.padding_mode != "zeros":
            node.unsupported(f"padding_mode='{m.padding_mode}'")
        if isinstance(m.padding, str):
            node.unsupported(f"padding='{m.padding}'")
        y = op.conv2d(x, _param(ctx, node, "weight"), strides=_pair(m.stride), padding=_pair(m.padding),
                      dilation=_pair(m.dilation), groups=int(m.groups))
        if m.bias is not None:
            bias = ctx.weight(f"{node.path}.bias", m.bias)
            bias = bias.reshape(-1, 1, 1) if isinstance(bias, np.ndarray) else op.reshape(bias, shape=[-1, 1, 1])
            y = op.add(y, ctx.expr(bias))
        return y

    @converter(nn.BatchNorm2d)
    def batch_norm(ctx, node, x):
        m = node.module
        if m.training or not m.track_running_stats:
            node.unsupported("batch statistics (training mode)")
        return op.batch_norm(x, _param(ctx, node, "weight"), _param(ctx, node, "bias"),
                             _param(ctx, node, "running_mean"), _param(ctx, node, "running_var"),
                             epsilon=float(m.eps))

    @converter(nn.ReLU, F.relu, torch.relu, "relu")
    def relu(ctx, node, x, *rest):
        return op.relu(x)

    @converter(nn.ReLU6, F.relu6)
    def relu6(ctx, node, x, *rest):
        return op.clip(x, a_min=0.0, a_max=6.0)

    @converter(nn.Hardtanh, F.hardtanh)
    def hardtanh(ctx, node, x, *rest):
        m = node.module
        low = m.min_val if m is not None else _arg(node, (x,) + rest, 1, "min_val", -1.0)
        high = m.max_val if m is not None else _arg(node, (x,) + rest, 2, "max_val", 1.0)
        return op.clip(x, a_min=float(low), a_max=float(high))

    @converter(nn.Identity, nn.Dropout)
    def identity(ctx, node, x, *rest):
        return x

    @converter(nn.MaxPool2d)
    def max_pool(ctx, node, x):
        m = node.module
        if m.return_indices:
            node.unsupported("return_indices=True")
        stride = m.stride if m.stride is not None else m.kernel_size
        return op.max_pool2d(x, pool_size=_pair(m.kernel_size), strides=_pair(stride), padding=_pair(m.padding),
                             dilation=_pair(m.dilation), ceil_mode=bool(m.ceil_mode))

    @converter(nn.AdaptiveAvgPool2d)
    def adaptive_avg_pool(ctx, node, x):
        return aten.adaptive_avg_pool2d(ctx, x, node.module.output_size)

    @converter(F.adaptive_avg_pool2d)
    def adaptive_avg_pool_f(ctx, node, x, size=None):
        return aten.adaptive_avg_pool2d(ctx, x, size if size is not None else node.kwargs.get("output_size"))

    @converter(nn.Linear)
    def linear(ctx, node, x):
        y = op.dense(x, _param(ctx, node, "weight"))
        bias = _param(ctx, node, "bias")
        return y if bias is None else op.add(y, bias)

    @converter(torch.flatten, "flatten", nn.Flatten)
    def flatten(ctx, node, x, *rest):
        start = node.module.start_dim if node.module is not None else _arg(node, (x,) + rest, 1, "start_dim", 0)
        end = node.module.end_dim if node.module is not None else _arg(node, (x,) + rest, 2, "end_dim", -1)
        shape = ctx.shape(x)
        start = start + len(shape) if start < 0 else start
        if end not in (-1, len(shape) - 1):
            node.unsupported(f"end_dim={end}")
        if start == 1:
            return op.flatten(x)
        if not all(isinstance(d, int) for d in shape):
            node.unsupported(f"start_dim={start} with a symbolic shape")
        return op.reshape(x, shape=list(shape[:start]) + [-1])

    def binary(loom_op):
        def convert(ctx, node, a, b, *rest):
            like = a if not isinstance(a, (int, float)) else b
            dtype = ctx.dtype(like)
            a = ctx.expr(np.asarray(a, dtype=dtype)) if isinstance(a, (int, float)) else a
            b = ctx.expr(np.asarray(b, dtype=dtype)) if isinstance(b, (int, float)) else b
            return getattr(op, loom_op)(a, b)
        return convert

    @converter(operator.getitem)
    def getitem(ctx, node, x, index):
        if isinstance(x, (tuple, list)):
            return x[index]
        if isinstance(index, int) and ir.infer_type(x).type_key == "ir.TupleType":
            return graph.TupleGetItem(x, index)
        node.unsupported("indexing a tensor (the aten path takes it)")

    converter(operator.add, torch.add, "add")(binary("add"))
    converter(operator.mul, torch.mul, "mul")(binary("multiply"))
    converter(operator.sub, torch.sub, "sub")(binary("subtract"))
    converter(operator.truediv, torch.div, "div")(binary("divide"))


    # Transformer encoders are leaves for torch.fx (their forward branches
    # on tensor properties, which symbolic tracing refuses): converted as
    # what they compute in eval mode, without masks.
    def layer_norm(ctx, prefix, m, x):
        w = ctx.expr(ctx.weight(f"{prefix}.weight", m.weight))
        b = ctx.expr(ctx.weight(f"{prefix}.bias", m.bias))
        return op.layer_norm(x, w, b, epsilon=float(m.eps))

    def dense(ctx, prefix, m, x):
        y = op.dense(x, ctx.expr(ctx.weight(f"{prefix}.weight", m.weight)))
        return y if m.bias is None else op.add(y, ctx.expr(ctx.weight(f"{prefix}.bias", m.bias)))

    def projection(ctx, prefix, m, k):
        """The weight and bias of projection k (0 q, 1 k, 2 v) of a
        MultiheadAttention: slices of in_proj_weight, or its own."""
        e = m.embed_dim
        if m.in_proj_weight is not None:
            w = op.slice(ctx.expr(ctx.weight(f"{prefix}.in_proj_weight", m.in_proj_weight)), begin=[k * e],
                         end=[(k + 1) * e], axes=[0])
        else:
            name = ("q", "k", "v")[k] + "_proj_weight"
            w = ctx.expr(ctx.weight(f"{prefix}.{name}", getattr(m, name)))
        b = None
        if m.in_proj_bias is not None:
            b = op.slice(ctx.expr(ctx.weight(f"{prefix}.in_proj_bias", m.in_proj_bias)), begin=[k * e],
                         end=[(k + 1) * e], axes=[0])
        return w, b

    def additive(ctx, mask):
        """A mask as what it adds to the scores: a boolean one -inf where
        True (not attended), a float one itself."""
        if mask is None:
            return None
        if ctx.dtype(mask) == "bool":
            return op.where(mask, graph.Constant(np.float32(-np.inf)), graph.Constant(np.float32(0.0)))
        return mask

    def attention(ctx, prefix, m, x, batch, seq, memory=None, mem_seq=None, attn_mask=None, key_padding_mask=None,
                  weights=False):
        """Multi-head attention of x (B, L, E) over itself, or over memory
        (B, S, E); attn_mask (L, S) and key_padding_mask (B, S) boolean or
        additive.  Returns the output, and with weights=True the attention
        weights averaged over the heads (B, L, S)."""
        e, h = m.embed_dim, m.num_heads
        d = e // h
        if m.bias_k is not None or m.add_zero_attn:
            raise _core.TypeError(f"{prefix}: bias_k or add_zero_attn")
        if m.kdim != e or m.vdim != e:
            raise _core.TypeError(f"{prefix}: keys or values of another width than the embedding (kdim, vdim)")

        def heads(y, length):  # (B, S, E) -> (B, H, S, D)
            return op.transpose(op.reshape(y, shape=[batch, length, h, d]), axes=[0, 2, 1, 3])

        def project(y, k):
            w, b = projection(ctx, prefix, m, k)
            y = op.dense(y, w)
            return y if b is None else op.add(y, b)

        if memory is None and m.in_proj_weight is not None:  # self-attention: one product for q, k and v
            qkv = op.dense(x, ctx.expr(ctx.weight(f"{prefix}.in_proj_weight", m.in_proj_weight)))
            if m.in_proj_bias is not None:
                qkv = op.add(qkv, ctx.expr(ctx.weight(f"{prefix}.in_proj_bias", m.in_proj_bias)))
            q, k, v = (heads(op.slice(qkv, begin=[j * e], end=[(j + 1) * e], axes=[2]), seq) for j in range(3))
        else:
            kv, kv_seq = (x, seq) if memory is None else (memory, mem_seq)
            q, k, v = heads(project(x, 0), seq), heads(project(kv, 1), kv_seq), heads(project(kv, 2), kv_seq)
        q = op.multiply(q, ctx.expr(np.asarray(1.0 / np.sqrt(d), dtype=np.float32)))
        scores = op.matmul(q, k, transpose_b=True)
        mask = additive(ctx, attn_mask)
        if mask is not None:
            if ctx.rank(mask) != 2:
                raise _core.TypeError(f"{prefix}: an attn_mask of rank {ctx.rank(mask)} (one (L, S) mask is taken)")
            scores = op.add(scores, mask)
        padding = additive(ctx, key_padding_mask)
        if padding is not None:
            scores = op.add(scores, op.expand_dims(op.expand_dims(padding, axis=1), axis=1))
        probs = op.softmax(scores, axis=-1)
        o = op.transpose(op.matmul(probs, v), axes=[0, 2, 1, 3])
        out = dense(ctx, f"{prefix}.out_proj", m.out_proj, op.reshape(o, shape=[batch, seq, e]))
        if weights:
            return out, op.mean(probs, axis=[1])
        return out

    def activation_of(prefix, m):
        act = {F.relu: op.relu, F.gelu: op.gelu}.get(m.activation)
        if act is None:
            act = op.relu if isinstance(m.activation, nn.ReLU) else op.gelu if isinstance(m.activation, nn.GELU) \
                else None
        if act is None:
            raise _core.TypeError(f"{prefix}: activation {m.activation}")
        return act

    def encoder_layer(ctx, prefix, m, x, batch, seq):
        act = activation_of(prefix, m)

        def sa(y):
            return attention(ctx, f"{prefix}.self_attn", m.self_attn, y, batch, seq)

        def ff(y):
            return dense(ctx, f"{prefix}.linear2", m.linear2, act(dense(ctx, f"{prefix}.linear1", m.linear1, y)))
        if m.norm_first:
            x = op.add(x, sa(layer_norm(ctx, f"{prefix}.norm1", m.norm1, x)))
            return op.add(x, ff(layer_norm(ctx, f"{prefix}.norm2", m.norm2, x)))
        x = layer_norm(ctx, f"{prefix}.norm1", m.norm1, op.add(x, sa(x)))
        return layer_norm(ctx, f"{prefix}.norm2", m.norm2, op.add(x, ff(x)))

    def encoder_input(ctx, node, x, first, rest):
        if any(r is not None for r in rest) or any(v is not None for v in node.kwargs.values() if v is not False):
            node.unsupported("masks")
        shape = ctx.shape(x)
        if len(shape) != 3 or not isinstance(shape[2], int):
            node.unsupported(f"an input of shape {shape} ((batch, sequence, features), the features static)")
        if not first:  # (S, B, E) -> (B, S, E)
            x = op.transpose(x, axes=[1, 0, 2])
        b, s_, _ = ctx.shape(x)
        return x, b, s_

    @converter(nn.TransformerEncoderLayer)
    def transformer_encoder_layer(ctx, node, x, *rest):
        m = node.module
        y, b, s_ = encoder_input(ctx, node, x, m.self_attn.batch_first, rest)
        y = encoder_layer(ctx, node.path, m, y, b, s_)
        return y if m.self_attn.batch_first else op.transpose(y, axes=[1, 0, 2])

    @converter(nn.TransformerEncoder)
    def transformer_encoder(ctx, node, x, *rest):
        m = node.module
        first = m.layers[0].self_attn.batch_first
        y, b, s_ = encoder_input(ctx, node, x, first, rest)
        for i, layer in enumerate(m.layers):
            y = encoder_layer(ctx, f"{node.path}.layers.{i}", layer, y, b, s_)
        if m.norm is not None:
            y = layer_norm(ctx, f"{node.path}.norm", m.norm, y)
        return y if first else op.transpose(y, axes=[1, 0, 2])


    def batch_first(ctx, y, first):
        return y if first else op.transpose(y, axes=[1, 0, 2])

    def sequence_input(ctx, node, y, first, what):
        shape = ctx.shape(y)
        if len(shape) != 3 or not isinstance(shape[2], int):
            node.unsupported(f"{what} of shape {shape} ((batch, sequence, features), the features static)")
        y = batch_first(ctx, y, first)
        b, s_, _ = ctx.shape(y)
        return y, b, s_

    @converter(nn.MultiheadAttention)
    def multihead_attention(ctx, node, query, key, value, *rest):
        m = node.module
        names = ["key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal"]
        given = dict(zip(names, rest))
        given.update(node.kwargs)
        if given.get("is_causal"):
            node.unsupported("is_causal (pass the causal attn_mask itself)")
        if given.get("average_attn_weights", True) is False and given.get("need_weights", True):
            node.unsupported("per-head attention weights (average_attn_weights=False)")
        first = m.batch_first
        q, b, lq = sequence_input(ctx, node, query, first, "a query")
        if key is query and value is query:
            memory, ls = None, None
        elif key is value:
            memory, _, ls = sequence_input(ctx, node, key, first, "a key")
        else:
            node.unsupported("keys and values that are different tensors")
        out = attention(ctx, node.path, m, q, b, lq, memory, ls, given.get("attn_mask"), given.get("key_padding_mask"),
                        weights=bool(given.get("need_weights", True)))
        if isinstance(out, tuple):
            return batch_first(ctx, out[0], first), out[1]
        return batch_first(ctx, out, first), None

    def decoder_layer(ctx, prefix, m, x, memory, batch, seq, mem_seq, masks):
        act = activation_of(prefix, m)
        tgt_mask, memory_mask, tgt_padding, memory_padding = masks

        def sa(y):
            return attention(ctx, f"{prefix}.self_attn", m.self_attn, y, batch, seq, attn_mask=tgt_mask,
                             key_padding_mask=tgt_padding)

        def ca(y):
            return attention(ctx, f"{prefix}.multihead_attn", m.multihead_attn, y, batch, seq, memory, mem_seq,
                             attn_mask=memory_mask, key_padding_mask=memory_padding)

        def ff(y):
            return dense(ctx, f"{prefix}.linear2", m.linear2, act(dense(ctx, f"{prefix}.linear1", m.linear1, y)))

        def norm(k, y):
            return layer_norm(ctx, f"{prefix}.norm{k}", getattr(m, f"norm{k}"), y)
        if m.norm_first:
            x = op.add(x, sa(norm(1, x)))
            x = op.add(x, ca(norm(2, x)))
            return op.add(x, ff(norm(3, x)))
        x = norm(1, op.add(x, sa(x)))
        x = norm(2, op.add(x, ca(x)))
        return norm(3, op.add(x, ff(x)))

    def decoder_args(node, rest):
        names = ["tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask", "tgt_is_causal",
                 "memory_is_causal"]
        given = dict(zip(names, rest))
        given.update(node.kwargs)
        if given.get("tgt_is_causal") or given.get("memory_is_causal"):
            node.unsupported("tgt_is_causal/memory_is_causal (pass the causal mask itself)")
        return [given.get(n) for n in names[:4]]

    @converter(nn.TransformerDecoderLayer)
    def transformer_decoder_layer(ctx, node, tgt, memory, *rest):
        m = node.module
        first = m.self_attn.batch_first
        x, b, s_ = sequence_input(ctx, node, tgt, first, "a target")
        mem, _, ms = sequence_input(ctx, node, memory, first, "a memory")
        return batch_first(ctx, decoder_layer(ctx, node.path, m, x, mem, b, s_, ms, decoder_args(node, rest)), first)

    @converter(nn.TransformerDecoder)
    def transformer_decoder(ctx, node, tgt, memory, *rest):
        m = node.module
        first = m.layers[0].self_attn.batch_first
        x, b, s_ = sequence_input(ctx, node, tgt, first, "a target")
        mem, _, ms = sequence_input(ctx, node, memory, first, "a memory")
        masks = decoder_args(node, rest)
        for i, layer in enumerate(m.layers):
            x = decoder_layer(ctx, f"{node.path}.layers.{i}", layer, x, mem, b, s_, ms, masks)
        if m.norm is not None:
            x = layer_norm(ctx, f"{node.path}.norm", m.norm, x)
        return batch_first(ctx, x, first)


_register_modules()


def _table(which="fx"):
    if which == "aten":
        names = aten.supported_operators()
        rows = ["| aten operators (from_fx's aten path, from_torchscript; `quantized::` ones from_fx only) |", "|---|"]
        rows += ["| " + ", ".join(f"`{n.replace('aten::', '')}`" for n in names[k:k + 8]) + " |"
                 for k in range(0, len(names), 8)]
        rows.append("| with a complex argument (\"Complex values in PyTorch models\"): " +
                    ", ".join(f"`{n.replace('aten::', '')}`" for n in aten.complex_operators()) + " |")
        return "\n".join(rows)
    rows = ["| PyTorch call target |", "|---|"]
    rows += [f"| `{name}` |" for name in supported_operators()]
    return "\n".join(rows)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--table"]:
        print(_table())
    elif sys.argv[1:] == ["--aten-table"]:
        print(_table("aten"))
    else:
        sys.exit("usage: python3 -m loom.frontend.fx --table | --aten-table")


