"""The TorchScript importer (docs/extern-torchscript.md, "The importer"):
`from_torchscript(module, example_inputs)`.

The module (scripted, traced, or a torch.nn.Module, which is scripted) is
frozen in eval mode (`torch.jit.freeze`: submodules inlined, parameters
made constants; a module in training mode is inlined instead and its
attributes read), and each node of its graph's top level either becomes
Loom operators, when an aten converter (aten.py, shared with from_fx)
takes it, or joins a region of nodes Loom does not compile.  Each region,
a run of consecutive nodes in the graph's order (so no region both feeds
and consumes another through Loom), becomes a `torchscript` extern
function: its nodes copied into a graph of their own, printed as
TorchScript source and scripted into a module of its own (torch.jit.save's
bytes), called from @main with call_dps.  So every model imports and
runs; Loom's passes fuse the part it compiles.

Values known at import time are constants (weights, lists of them) and
values computed from shapes only (`aten::size` and the integer arithmetic
a traced `x.view(x.size(0), -1)` records): they are taken from one run of
the graph on the examples, so shape arithmetic never splits the graph.
A node is converted when its non-tensor arguments are known and its
converter accepts them.
"""
import numpy as np

from .. import _core
from .. import graph, ir
from . import aten
from .common import Context, evaluating, without_none

# Operators whose result depends on their inputs' shapes and values
# alone: computed from shapes only, they are known at import time.
_SHAPE_OPS = {
    "aten::size", "aten::dim", "aten::len", "aten::numel", "prim::NumToTensor", "aten::Int", "aten::Float",
    "aten::ScalarImplicit", "aten::IntImplicit", "aten::FloatImplicit", "prim::ListConstruct", "prim::TupleConstruct",
    "prim::ListUnpack", "prim::TupleUnpack", "aten::__getitem__", "prim::min", "prim::max", "aten::add", "aten::sub",
    "aten::mul", "aten::div", "aten::floordiv", "aten::floor_divide", "aten::remainder", "aten::neg", "aten::eq",
    "aten::ne", "aten::lt", "aten::gt", "aten::le", "aten::ge", "aten::floor", "aten::ceil", "aten::sqrt",
    "prim::shape", "aten::__range_length", "aten::__derive_index", "prim::device", "prim::dtype", "aten::to",
    "aten::detach", "prim::TupleIndex", "aten::format", "prim::RaiseException", "aten::warn",
}


# Operators that read a tensor's shape.
_SIZE_OPS = {"aten::size", "aten::dim", "aten::numel", "prim::shape", "aten::len"}


def _data_shaped(n):
    """Whether n's result has a shape the data decides: an operator in
    aten.DATA_SHAPED, or indexing with a boolean mask."""
    if n.kind() in aten.DATA_SHAPED:
        return True
    if n.kind() != "aten::index" or n.inputsSize() < 2:
        return False
    maker = n.inputsAt(1).node()
    return maker.kind() == "prim::ListConstruct" and any(
        _is_tensor(v) and v.type().scalarType() in ("Bool", "Byte") for v in maker.inputs())


def _functional(kind):
    """aten::relu for aten::relu_ (an in-place twin of a converted operator)."""
    if kind.endswith("_") and not kind.endswith("__") and aten.find(kind[:-1]) is not None:
        return kind[:-1]
    return kind


def supported_operators():
    return aten.supported_operators()


class ImportReport:
    """Where each node of the frozen graph went: `compiled` (node name ->
    its kind) and `regions` (extern function name -> the kinds of its
    nodes, in order).  print(report) shows both."""

    def __init__(self):
        self.compiled = {}
        self.regions = {}
        self.inside = {}  # region -> the kinds of all its nodes, nested blocks' too
        self.dropped = []  # regions none of whose results is read

    def kept(self):
        """{kind: count} of the nodes kept as TorchScript, those inside
        their loops and branches included."""
        counts = {}
        for kinds in self.inside.values():
            for kind in kinds:
                counts[kind] = counts.get(kind, 0) + 1
        return counts

    def __str__(self):
        kept = sum(len(v) for v in self.regions.values())
        lines = [f"{len(self.compiled)} nodes compiled by Loom, {kept} kept as TorchScript in "
                 f"{len(self.regions)} function{'s' if len(self.regions) != 1 else ''}"]
        counts = {}
        for kind in self.compiled.values():
            counts[kind] = counts.get(kind, 0) + 1
        if counts:
            lines.append("  loom: " + ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(counts.items())))
        for name, kinds in self.regions.items():
            lines.append(f"  @{name} (torchscript): " + ", ".join(kinds))
        for kinds in self.dropped:
            lines.append("  dropped, nothing reads its result: " + ", ".join(kinds))
        return "\n".join(lines)

    __repr__ = __str__


def _top(node, block):
    """The node of `block` (the graph's top level) that holds `node`."""
    while node.owningBlock() != block:
        node = node.owningBlock().owningNode()
    return node


def _nested(node):
    """`node` and every node inside its blocks."""
    out = [node]
    for b in node.blocks():
        for n in b.nodes():
            out.extend(_nested(n))
    return out


_MAKES_COMPLEX = {"aten::stft", "aten::fft_rfft", "aten::fft_fft", "aten::fft_fft2", "aten::fft_fftn",
                  "aten::fft_rfft2", "aten::fft_rfftn", "aten::_fft_r2c", "aten::_fft_c2c", "aten::view_as_complex",
                  "aten::complex", "aten::polar"}
_MAKES_REAL = {"aten::abs", "aten::real", "aten::imag", "aten::view_as_real", "aten::angle", "aten::fft_irfft",
               "aten::fft_irfftn", "aten::istft", "aten::_fft_c2r"}


def _complex_values(nodes):
    """The complex tensors of the graph: typed so (a traced graph's types
    say), or made by a transform, or computed from one by an operator that
    does not make it real (a scripted graph's tensors have no dtype)."""
    out = set()
    for n in (m for t in nodes for m in _nested(t)):
        for o in n.outputs():
            t = o.type()
            if t.kind() != "TensorType":
                continue
            dtype = t.scalarType()
            if dtype is not None:
                if str(dtype).startswith("Complex"):
                    out.add(o)
                continue
            flag = list(n.inputs())[-1].toIValue() if n.kind() == "aten::stft" and n.inputsSize() else None
            if (n.kind() in _MAKES_COMPLEX and flag is not False) or \
                    (n.kind() not in _MAKES_REAL and any(v in out for v in n.inputs())):
                out.add(o)
    return out


def _is_tensor(value):
    return value.type().kind() == "TensorType"


def _pytorch_error(what, e):
    first = str(e).strip().splitlines()
    return _core.TypeError(f"from_torchscript: {what} ({type(e).__name__}: {first[0] if first else ''})")


def _graph_of(module):
    """The graph to import, its parameter values, and the values known from
    the module's attributes: the frozen graph of a module in eval mode; the
    inlined graph of one in training mode (freezing needs eval mode), its
    prim::GetAttr values read from the module."""
    import torch
    if not module.training:
        try:
            frozen = torch.jit.freeze(module)
        except RuntimeError:
            frozen = module  # frozen already
        return frozen.graph, {}, None
    g = module.graph.copy()
    torch._C._jit_pass_inline(g)
    attrs = {}
    owner = {list(g.inputs())[0]: module}
    for n in g.nodes():
        if n.kind() == "prim::GetAttr" and n.input() in owner:
            value = getattr(owner[n.input()], n.s("name"))
            if isinstance(value, torch.nn.Module) or hasattr(value, "_c"):
                owner[n.output()] = value
            else:
                attrs[n.output()] = value
    return g, attrs, module


def from_torchscript(module, example_inputs, *, report=False, eval=False):
    """Imports a TorchScript module (or a torch.nn.Module, scripted first)
    for inputs shaped like `example_inputs`; what Loom has no converter for
    becomes `torchscript` extern functions.  A module in training mode is
    imported as it computes there (with a warning; dropout stays
    TorchScript, batch norm uses the batch's statistics) unless eval=True.
    Returns the IRModule, or (IRModule, ImportReport) with report=True."""
    import torch
    examples = list(example_inputs) if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    with evaluating(module, eval, "from_torchscript"):
        if not isinstance(module, torch.jit.ScriptModule):
            try:
                module = torch.jit.script(module)
            except Exception as e:  # noqa: BLE001 (TorchScript's NotSupportedError and kin)
                raise _pytorch_error("TorchScript cannot script the module; trace it (torch.jit.trace, or "
                                     "loom.torch.compile, which traces)", e) from None
        elif eval and module.training:
            module.eval()
        g, attrs, owner = _graph_of(module)
        _bind_optional_defaults(module, g, len(examples))
        return _import(g, attrs, owner, examples, report)


def _bind_optional_defaults(module, g, count):
    """Trailing parameters past the examples whose default is None
    (wav2vec 2.0's `lengths: Optional[Tensor] = None`) taken as None: the
    graph specialized to it, its `is None` branches folded."""
    import torch
    arguments = list(module.forward.schema.arguments)[1:]  # (not self)
    params = list(g.inputs())
    offset = len(params) - len(arguments)  # 1 where the graph takes self
    extra = arguments[count:]
    if not extra or offset < 0 or not all(a.has_default_value() and a.default_value is None for a in extra):
        return
    with g.insert_point_guard(next(iter(g.nodes()))):
        none = g.insertConstant(None)
    for k in reversed(range(offset + count, len(params))):
        params[k].replaceAllUsesWith(none)
        g.eraseInput(k)
    torch._C._jit_pass_constant_propagation(g)
    torch._C._jit_pass_dce(g)


def _import(g, attrs, owner, examples, report):
    import torch
    top = g.block()
    params = list(g.inputs())
    if params and params[0].type().kind() == "ClassType":
        if params[0].uses() and not attrs:
            uses = sorted({(u.user.kind(), u.user.s("name") if u.user.hasAttribute("name") else "")
                           for u in params[0].uses()})
            assigned = sorted({name for kind, name in uses if kind == "prim::SetAttr"})
            raise _core.TypeError(
                "from_torchscript: the frozen module still reads its own attributes (torch.jit.freeze could not "
                f"fold {', '.join(repr(n) for n in sorted({n for _, n in uses if n})) or 'them'}" +
                (f"; forward assigns {', '.join(repr(n) for n in assigned)}" if assigned else "") +
                "); export the model to ONNX and import it with from_onnx, or make those attributes constants")
        params = params[1:]
    if len(params) != len(examples):
        raise _core.TypeError(f"from_torchscript: the module takes {len(params)} inputs, got {len(examples)} "
                              "example inputs")
    nodes = [n for n in g.nodes() if n.kind() != "prim::GetAttr"]
    quantized = [m for n in top.nodes() for m in _nested(n) if m.kind().startswith("quantized::") or
                 m.kind() in ("aten::quantize_per_tensor", "aten::quantize_per_channel")]
    if quantized:
        # Its graph does not say each quantized value's scale and zero
        # point, and its packed weights cannot be kept TorchScript apart.
        raise _core.TypeError(f"from_torchscript: a quantized model ({quantized[0].kind()} among "
                              f"{len(quantized)} quantized nodes) is not supported; import the module with "
                              "loom.frontend.fx.from_fx (docs/frontends.md, \"Quantized PyTorch models\")")
    # Known values: constants and attributes (weights are tensors), lists
    # of them, and what is computed from shapes only (taken from the probe).
    known = dict(attrs)
    static = set()  # values computed from shapes and constants only
    # Tensors whose shape the data decides (a nonzero's, and what is
    # computed from it): their sizes are not the probe's, so what reads
    # them is neither static nor converted (it stays TorchScript).
    data_shaped = set()
    for n in (m for t in nodes for m in _nested(t)):
        if _data_shaped(n) or any(v in data_shaped for v in n.inputs()):
            data_shaped.update(o for o in n.outputs() if _is_tensor(o) or _is_list_of_tensors(o))

    def reads_data_size(n):
        return n.kind() in _SIZE_OPS and any(v in data_shaped for v in n.inputs())
    for n in nodes:
        if reads_data_size(n):
            continue
        if n.kind() == "prim::Constant":
            known[n.output()] = n.output().toIValue()
        elif n.kind() == "prim::ListConstruct" and all(v in known for v in n.inputs()):
            known[n.output()] = [known[v] for v in n.inputs()]
        elif n.kind() in _SHAPE_OPS and not list(n.blocks()) and n.outputsSize() and all(
                v in known or v in static or (n.kind() in _SIZE_OPS and _is_tensor(v)) for v in n.inputs()) and \
                not any(_is_tensor(o) and n.kind() not in ("prim::NumToTensor",) for o in n.outputs()):
            static.update(n.outputs())
    position = {n: k for k, n in enumerate(nodes)}

    def last_use(v):
        return max((position.get(_top(u.user, top), -1) for u in v.uses()), default=-1)

    constant = {n for n in nodes if n.outputsSize() and all(o in known or o in static for o in n.outputs())}
    complex_values = _complex_values(nodes)

    def convertible(n):
        if n in constant or list(n.blocks()):
            return False
        if reads_data_size(n):
            return False
        kind = _functional(n.kind())
        if kind in ("prim::TupleConstruct", "prim::TupleUnpack", "prim::ListConstruct", "prim::ListUnpack"):
            return True
        if aten.find(kind) is None:
            return False
        # An in-place operator (relu_) is its functional twin when nothing
        # reads the tensor it overwrites afterwards.
        if kind != n.kind() and last_use(n.inputsAt(0)) > position[n]:
            return False
        if not all(_is_tensor(v) or v in known or v in static or _is_list_of_tensors(v) for v in n.inputs()):
            return False
        if any(v in complex_values for v in n.inputs()):
            if not aten.takes_complex(kind):
                return False  # (it stays TorchScript, and so does the complex value's maker: below)
        elif not aten.takes_real(kind):
            return False  # (x.real of a real tensor)
        if any(n.outputsAt(k).uses() for k in aten.missing_results(kind) if k < n.outputsSize()):
            return False  # a result its converter does not give is read
        return aten.accepts(kind, [known.get(v) for v in n.inputs()])

    supported = {n: convertible(n) for n in nodes}
    # A complex tensor cannot leave Loom (it has no complex type): its
    # maker does not convert when TorchScript reads it, nor when it is a
    # result of the model.
    for v in g.return_node().inputs():
        maker = _top(v.node(), top)
        if v in complex_values and maker in supported:
            supported[maker] = False
    # A non-tensor made by a compiled node (a tuple) and read by a region
    # cannot cross: its maker joins the regions.
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if supported.get(n) and any(v in complex_values and not supported.get(_top(v.node(), top), True)
                                        for inner in _nested(n) for v in inner.inputs()):
                supported[n] = False  # a complex value TorchScript makes stays there: so does its reader
                changed = True
            if n in constant or supported[n]:
                continue
            for inner in _nested(n):
                for v in inner.inputs():
                    maker = _top(v.node(), top) if v.node().kind() != "prim::Param" or v in params else None
                    if maker is not None and maker in supported and supported[maker] and \
                            (not _is_tensor(v) or v in complex_values) and v not in static:
                        supported[maker] = False
                        changed = True
    # Regions: runs of consecutive unsupported nodes; a region whose
    # non-tensor result is read later runs on to that reader.
    order = [n for n in nodes if n not in constant]
    regions, current = [], []
    for n in order:
        if supported[n]:
            if current:
                regions.append(current)
                current = []
        else:
            current.append(n)
    if current:
        regions.append(current)
    at = {n: k for k, n in enumerate(order)}
    merged = True
    while merged:
        merged = False
        for r in regions:
            last = max(at[n] for n in r)
            reach = last
            for n in r:
                # A non-tensor result, and a tensor an in-place operator
                # overwrote (what reads it later must see the change): their
                # readers join the region.
                carried = [o for o in n.outputs() if not _is_tensor(o) and o not in static]
                if n.kind().endswith("_") and n.inputsSize():
                    carried.append(n.inputsAt(0))
                for o in carried:
                    for use in o.uses():
                        user = _top(use.user, top)
                        if user in at:
                            reach = max(reach, at[user])
            if reach > last:
                members = set(r)
                for n in order[at[r[0]]:reach + 1]:
                    members.add(n)
                    supported[n] = False
                regions = [x for x in regions if not (set(x) & members) or x is r]
                r[:] = [n for n in order if n in members]
                merged = True
                break
    # The shapes of what each region gives, and the values computed from
    # shapes: the graph run once on the examples.
    crossing = []
    region_of = {n: k for k, r in enumerate(regions) for n in r}
    for r in regions:
        members = set(r)
        for n in r:
            for o in n.outputs():
                if any(_top(u.user, top) not in members for u in o.uses()):
                    if not _is_tensor(o) and o not in static:
                        raise _core.TypeError(f"from_torchscript: a {o.type()} made by {n.kind()} is read outside "
                                              "its region")
                    if _is_tensor(o):
                        if o in data_shaped:  # the extern's result type would be the probe's shape
                            raise _core.TypeError(
                                f"from_torchscript: {n.kind()}, kept as TorchScript, makes a tensor whose shape "
                                "the data decides, read by Loom; that is not supported (docs/frontends.md, "
                                "\"Shapes the data decides\")")
                        crossing.append(o)
    wanted_static = [v for v in static if v not in known and v.uses()]
    try:
        probed = _probe(g, examples, crossing + wanted_static, owner)
    except Exception as e:  # noqa: BLE001 (PyTorch running the module on the examples)
        raise _pytorch_error("PyTorch failed running the module on the example inputs", e) from None
    for v in wanted_static:
        value = probed[v]
        known[v] = value.detach().numpy() if isinstance(value, torch.Tensor) else value
    # Build @main.
    ctx = Context()
    values, inputs = {}, []
    for k, (p, example) in enumerate(zip(params, examples)):
        name = p.debugName().split(".")[0] or f"input{k}"
        var = aten.input_var(name if name.isidentifier() else f"input{k}", example, f"from_torchscript: input {k}")
        inputs.append(var)
        values[p] = var

    def value(v):
        if isinstance(v, torch.Tensor):  # a tensor of a list constant, a region's input
            return v.detach().numpy()
        if v in values:
            return values[v]
        if v in known:
            c = known[v]
            if isinstance(c, torch.Tensor):
                return c.detach().numpy()
            if isinstance(c, (list, tuple)):
                return type(c)(x.detach().numpy() if isinstance(x, torch.Tensor) else x for x in c)
            return c
        raise _core.TypeError(f"from_torchscript: the value %{v.debugName()} has no import")

    functions, result = {}, ImportReport()
    done = set()
    bindings = []  # @main's let chain, one binding per converted node or region call

    def bind(name, expr, type_):
        """`expr` bound to a new variable of the chain."""
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        var = graph.Var(name if name and not name[0].isdigit() else f"v{name}", type_)
        bindings.append((var, expr))
        return var

    def bound(name, out):
        """A converter's tensor result bound (known arrays, tuples and lists
        are kept as they are)."""
        if out is None or isinstance(out, (np.ndarray, int, float, bool, list, tuple)):
            return out
        if isinstance(out, aten.Complex):  # its parts bound
            return aten.Complex(bound(name, out.parts))
        out = ctx.expr(out)
        shape, dtype = ctx.type(out)
        return bind(name, out, ir.TensorType(list(shape), dtype))

    for n in order:
        if n in done:
            continue
        if supported[n]:
            kind = _functional(n.kind())
            args = [value(v) for v in n.inputs()]
            if kind in ("prim::TupleConstruct", "prim::ListConstruct"):
                values[n.outputsAt(0)] = tuple(args) if kind == "prim::TupleConstruct" else list(args)
                continue
            if kind in ("prim::TupleUnpack", "prim::ListUnpack"):
                for o, item in zip(n.outputs(), args[0]):
                    values[o] = item
                continue
            name = n.outputsAt(0).debugName() if n.outputsSize() else n.kind()
            node = aten.Node(kind, name)
            with _naming(kind, name):
                try:
                    out = aten.find(kind)(ctx, node, *args)
                except aten.Unsupported as e:  # accepts() should have kept it TorchScript
                    raise _core.TypeError(f"{kind} '{name}': {e} is not supported, and the importer did not keep "
                                          "it TorchScript (its converter's accepts lacks the case)") from None
            outs = out if isinstance(out, tuple) and n.outputsSize() > 1 else (out,)
            if n.outputsSize() == 1 and isinstance(out, tuple) and n.outputsAt(0).type().kind() == "ListType":
                outs = (list(out),)
            for k, (o, item) in enumerate(zip(n.outputs(), outs)):
                values[o] = bound(o.debugName(), item) if not isinstance(item, list) else \
                    [bound(f"{o.debugName()}_{j}", x) for j, x in enumerate(item)]
            result.compiled[name] = kind
            continue
        region = regions[region_of[n]]
        done.update(region)
        outs = [o for o in crossing if _top(o.node(), top) in set(region)]
        if not outs:
            # Nothing of it is read: a check on shapes (ResNet's pooling
            # asserts its input's rank), which the examples passed.
            result.dropped.append([m.kind() for m in region])
            continue
        name = f"torchscript_{len(functions)}"
        payload, ins = _region_module(torch, g, top, region, known, static, params)
        in_exprs = [ctx.expr(value(v)) for v in ins]
        in_types = [ir.TensorType(list(ctx.shape(e)), ctx.dtype(e)) for e in in_exprs]
        out_types = []
        for o in outs:
            t = probed[o]
            what = f"from_torchscript: what {o.node().kind()} gives Loom"
            out_types.append(ir.TensorType(list(t.shape), aten.tensor_dtype(t, what)))
        functions[name] = ir.ExternFunc("torchscript", payload, in_types + out_types)
        out_type = out_types[0] if len(outs) == 1 else ir.TupleType(out_types)
        call = graph.call_dps(ir.GlobalVar(name), in_exprs, out_type)
        if len(outs) == 1:
            values[outs[0]] = bind(outs[0].debugName(), call, out_type)
        else:
            both = bind(name + "_out", call, out_type)
            for k, o in enumerate(outs):
                values[o] = graph.TupleGetItem(both, k)
        result.regions[name] = [m.kind() for m in region]
        result.inside[name] = [inner.kind() for m in region for inner in _nested(m)]
    returned = list(g.return_node().inputs())
    outputs = [value(v) for v in returned]
    flat = without_none(list(_flatten(outputs)), "from_torchscript")
    body = ctx.expr(flat[0]) if len(flat) == 1 and not isinstance(outputs[0], (tuple, list)) else \
        graph.Tuple([ctx.expr(x) for x in flat])
    for var, expr in reversed(bindings):
        body = graph.Let(var, expr, body)
    functions["main"] = graph.Function(inputs, body)
    mod = ir.IRModule(functions)
    return (mod, result) if report else mod


def _is_list_of_tensors(v):
    t = v.type()
    return t.kind() in ("ListType", "TupleType") and v.node().kind() in ("prim::ListConstruct", "prim::TupleConstruct")


def _flatten(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


class _naming:
    """Loom errors inside a converter name the node (kind and output)."""

    def __init__(self, kind, name):
        self.label = f"{kind} '{name}'"

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if e is None:
            return False
        if isinstance(e, _core.LoomError):
            if not str(e).startswith(self.label):
                raise type(e)(f"{self.label}: {e}") from None
            return False
        # A converter's own bug still names the node.
        raise _core.LoomError(f"{self.label}: the converter failed ({kind.__name__}: {e}); please report it") from e


def _tuple(g, values):
    """A tuple of `values` made at the end of graph `g`."""
    import torch
    node = g.create("prim::TupleConstruct", values)
    node.output().setType(torch._C.TupleType([v.type() for v in values]))
    g.appendNode(node)
    return node.output()


def _probe(g, examples, wanted, owner=None):
    """The values `wanted` (of `g`'s top level) computed on the examples
    (`owner`: the module a graph that reads its attributes runs on)."""
    import torch
    if not wanted:
        return {}
    probe = g.copy()
    originals = list(g.nodes())
    copies = list(probe.nodes())
    mapping = {}
    for a, b in zip(originals, copies):
        for x, y in zip(a.outputs(), b.outputs()):
            mapping[x] = y
    for _ in range(len(list(probe.outputs()))):
        probe.eraseOutput(0)
    first = list(probe.inputs())[0]
    if first.type().kind() == "ClassType" and owner is None:
        probe.eraseInput(0)
    probe_outputs = [mapping[v] for v in wanted]
    probe.registerOutput(_tuple(probe, probe_outputs) if len(probe_outputs) > 1 else probe_outputs[0])
    fn = torch._C._create_function_from_graph("loom_probe", probe)
    with torch.no_grad():
        out = fn(*([owner._c] if owner is not None else []), *examples)
    out = out if isinstance(out, tuple) and len(wanted) > 1 else (out,)
    return dict(zip(wanted, out))


_regions_made = 0


def _region_module(torch, g, top, region, known, static, params):
    """torch.jit.save's bytes of a module whose forward runs `region`'s
    nodes, and the values it takes (tensors made outside it, weights
    included), in order."""
    members = set(region)
    rg = torch._C.Graph()
    mapping, ins = {}, []

    def source(v):
        if v in mapping:
            return mapping[v]
        maker = v.node()
        value = known.get(v)
        if isinstance(value, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in value):
            # A list of tensors frozen into one constant (an RNN's weights):
            # printed, it would read a CONSTANTS table the region's module
            # lacks; its tensors become inputs and the list is built anew.
            items = []
            for x in value:
                if isinstance(x, torch.Tensor):
                    arg = rg.addInput()
                    arg.setType(torch._C.TensorType.get())
                    ins.append(x)
                    items.append(arg)
                else:
                    items.append(rg.insertConstant(x))
            made = rg.create("prim::ListConstruct", items)
            made.output().setType(v.type())
            rg.insertNode(made)
            mapping[v] = made.output()
            return mapping[v]
        if v in known and not isinstance(known[v], (torch.Tensor, np.ndarray)) and \
                (v in static or maker.kind() == "prim::GetAttr"):
            mapping[v] = rg.insertConstant(known[v])  # computed from shapes, or an attribute
            return mapping[v]
        if v in known and maker.kind() == "prim::Constant" and v.type().kind() == "TensorType" and \
                isinstance(known[v], (bool, int, float)):
            # A tensor constant known as a number (a traced `x * 2.0`):
            # printed, it would read a CONSTANTS table; an input instead.
            arg = rg.addInput()
            arg.setType(torch._C.TensorType.get())
            ins.append(torch.tensor(known[v]))
            mapping[v] = arg
            return arg
        if v in known and not isinstance(known[v], (torch.Tensor, np.ndarray)):
            clone = rg.createClone(maker, lambda x: source(x))
            rg.insertNode(clone)
            for a, b in zip(maker.outputs(), clone.outputs()):
                mapping[a] = b
            return mapping[v]
        arg = rg.addInput()
        arg.setType(v.type())
        mapping[v] = arg
        ins.append(v)
        return arg

    def inside(v):
        if v in params:
            return False
        if v.node().kind() == "prim::Param":
            return True  # a parameter of a block of the region's nodes
        return _top(v.node(), top) in members

    for n in region:
        for inner in _nested(n):
            for v in inner.inputs():
                if not inside(v):
                    source(v)
        clone = rg.createClone(n, lambda x: source(x))
        rg.insertNode(clone)
        for a, b in zip(n.outputs(), clone.outputs()):
            mapping[a] = b
    outs = [o for n in region for o in n.outputs() if any(_top(u.user, top) not in members for u in o.uses())]
    rg.registerOutput(mapping[outs[0]] if len(outs) == 1 else _tuple(rg, [mapping[o] for o in outs]))
    fn = torch._C._create_function_from_graph("region", rg)
    code = fn.code
    head, body = code.split("\n", 1)
    head = head.replace("def region(", "def forward(self, ", 1).replace("forward(self, )", "forward(self)")
    # A class of its own per region: a method is defined once per class.
    global _regions_made
    _regions_made += 1
    holder = type(f"LoomRegion{_regions_made}", (torch.jit.ScriptModule,), {})()
    inner = holder._actual_script_module
    import typing
    # Printed code spells aten operators torch.NAME: resolved as torch.ops.aten.
    import math
    names = {"inf": math.inf, "nan": math.nan, "torch": torch.ops.aten, "Tensor": torch.Tensor, "Tuple": typing.Tuple, "List": typing.List,
             "Optional": typing.Optional, "ops": torch.ops, "annotate": torch.jit.annotate}
    inner._c._define(inner._concrete_type, head + "\n" + body, lambda name: names.get(name))
    import io
    buffer = io.BytesIO()
    torch.jit.save(holder, buffer)
    return buffer.getvalue(), ins
