"""The TorchScript importer (docs/extern-torchscript.md, "The importer"):
`from_torchscript(module, example_inputs)`.

The module (scripted, traced, or a torch.nn.Module, which is scripted) is
frozen (`torch.jit.freeze`: submodules inlined, parameters made
constants), and each node of its graph's top level either becomes Loom
operators, when a converter takes it, or joins a region of nodes Loom
does not compile.  Each region, a run of consecutive nodes in the graph's
order (so no region both feeds and consumes another through Loom), becomes
a `torchscript` extern function: its nodes copied into a graph of their
own, printed as TorchScript source and scripted into a module of its own
(torch.jit.save's bytes), called from @main with call_dps.  So every model
imports and runs; Loom's passes fuse the part it compiles.

Converters: the FX importer's where one takes the operator as a function
(`aten::relu` is `torch.relu`'s), and a few for the aten spelling of what
FX sees as modules (`aten::linear`, `aten::conv2d`, ...).  A node is
converted only when its non-tensor inputs are constants; one whose input
comes from a region goes into a region too.
"""
import numpy as np

from .. import _core
from .. import graph, ir, op
from .onnx import Context

# aten operators the FX importer's function converters take, by their key there.
_FX_KEYS = {
    "aten::relu": "torch.relu", "aten::add": "torch.add", "aten::sub": "torch.sub", "aten::mul": "torch.mul",
    "aten::div": "torch.div", "aten::flatten": "torch.flatten", "aten::hardtanh": "torch.nn.functional.hardtanh",
    "aten::adaptive_avg_pool2d": "torch.nn.functional.adaptive_avg_pool2d",
}


class _Node:
    """An aten node as the FX importer's converters see one."""

    def __init__(self, kind, name):
        self.kind, self.name, self.module, self.path, self.kwargs = kind, name, None, None, {}

    def unsupported(self, what):
        raise _Unsupported(what)


class _Unsupported(Exception):
    pass


def _pair(v):
    return [int(v), int(v)] if isinstance(v, int) else [int(x) for x in v]


def _linear(ctx, node, x, w, b):
    y = op.dense(x, ctx.expr(w))
    return y if b is None else op.add(y, ctx.expr(b))


def _conv2d(ctx, node, x, w, b, stride, padding, dilation, groups):
    if isinstance(padding, str):
        raise _Unsupported(f"padding='{padding}'")
    y = op.conv2d(x, ctx.expr(w), strides=_pair(stride), padding=_pair(padding), dilation=_pair(dilation),
                  groups=int(groups))
    return y if b is None else op.add(y, ctx.expr(np.asarray(b).reshape(-1, 1, 1)))


def _max_pool2d(ctx, node, x, kernel, stride, padding, dilation, ceil_mode):
    if ceil_mode or _pair(dilation) != [1, 1]:
        raise _Unsupported("ceil_mode or dilation")
    return op.max_pool2d(x, pool_size=_pair(kernel), strides=_pair(stride or kernel), padding=_pair(padding))


def _unary(name):
    return lambda ctx, node, x: getattr(op, name)(x)


def _softmax(ctx, node, x, dim, dtype=None):
    if dtype is not None:
        raise _Unsupported("a dtype argument")
    return op.softmax(x, axis=int(dim))


def _matmul(ctx, node, a, b):
    return op.matmul(ctx.expr(a), ctx.expr(b))


def _dropout(ctx, node, x, p, train):
    if train:
        raise _Unsupported("dropout in training mode")
    return x


_ATEN = {
    "aten::linear": _linear, "aten::conv2d": _conv2d, "aten::max_pool2d": _max_pool2d,
    "aten::tanh": _unary("tanh"), "aten::sigmoid": _unary("sigmoid"), "aten::exp": _unary("exp"),
    "aten::sqrt": _unary("sqrt"), "aten::softmax": _softmax, "aten::matmul": _matmul, "aten::dropout": _dropout,
}


# What a converter takes of an operator's constant arguments (None for a
# tensor); the rest of the operator stays TorchScript.
_ACCEPTS = {
    "aten::add": lambda a: len(a) < 3 or a[2] == 1,  # alpha
    "aten::sub": lambda a: len(a) < 3 or a[2] == 1,
    "aten::div": lambda a: len(a) == 2,  # no rounding_mode
    "aten::max_pool2d": lambda a: not a[5] and _pair(a[4]) == [1, 1],  # ceil_mode, dilation
    "aten::conv2d": lambda a: not isinstance(a[4], str),  # padding="same"
    "aten::softmax": lambda a: len(a) < 3 or a[2] is None,  # dtype
    "aten::dropout": lambda a: not a[2],  # train
    "aten::flatten": lambda a: a[2] == -1,  # end_dim
    "aten::adaptive_avg_pool2d": lambda a: _pair(a[1]) == [1, 1],
}


def _functional(kind):
    """aten::relu for aten::relu_ (and the other in-place twins of converted operators)."""
    if kind.endswith("_") and not kind.endswith("__") and (kind[:-1] in _ATEN or kind[:-1] in _FX_KEYS):
        return kind[:-1]
    return kind


def supported_operators():
    return sorted(set(_ATEN) | set(_FX_KEYS))


class ImportReport:
    """Where each node of the frozen graph went: `compiled` (node name ->
    its kind) and `regions` (extern function name -> the kinds of its
    nodes, in order).  print(report) shows both."""

    def __init__(self):
        self.compiled = {}
        self.regions = {}
        self.dropped = []  # regions none of whose results is read

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


def _is_tensor(value):
    return value.type().kind() == "TensorType"


def from_torchscript(module, example_inputs, *, report=False):
    """Imports a TorchScript module (or a torch.nn.Module, scripted first)
    for inputs shaped like `example_inputs`; what Loom has no converter for
    becomes `torchscript` extern functions.  Returns the IRModule, or
    (IRModule, ImportReport) with report=True."""
    import torch
    examples = list(example_inputs) if isinstance(example_inputs, (list, tuple)) else [example_inputs]
    if not isinstance(module, torch.jit.ScriptModule):
        module = torch.jit.script(module.eval())
    try:
        frozen = torch.jit.freeze(module.eval())
    except RuntimeError:
        frozen = module  # frozen already
    g = frozen.graph
    top = g.block()
    params = list(g.inputs())
    if params and params[0].type().kind() == "ClassType":
        if params[0].uses():
            raise _core.TypeError("from_torchscript: the frozen module still reads its own attributes "
                                  "(torch.jit.freeze could not fold them)")
        params = params[1:]
    if len(params) != len(examples):
        raise _core.TypeError(f"from_torchscript: the module takes {len(params)} inputs, got {len(examples)} "
                              "example inputs")
    nodes = list(g.nodes())
    # Constants: values known now (weights are tensors), lists of them.
    known = {}
    for n in nodes:
        if n.kind() == "prim::Constant":
            known[n.output()] = n.output().toIValue()
        elif n.kind() == "prim::ListConstruct" and all(v in known for v in n.inputs()):
            known[n.output()] = [known[v] for v in n.inputs()]
    constant = {n for n in nodes if n.outputsSize() and all(o in known for o in n.outputs())}
    position = {n: k for k, n in enumerate(nodes)}

    def last_use(v):
        return max((position[_top(u.user, top)] for u in v.uses()), default=-1)

    def convertible(n):
        if n in constant or list(n.blocks()):
            return False
        kind = _functional(n.kind())
        if kind not in _ATEN and kind not in _FX_KEYS and kind not in ("prim::TupleConstruct", "prim::TupleUnpack"):
            return False
        # An in-place operator (relu_) is its functional twin when nothing
        # reads the tensor it overwrites afterwards.
        if kind != n.kind() and last_use(n.inputsAt(0)) > position[n]:
            return False
        if not all(_is_tensor(v) or v in known for v in n.inputs()):
            return False
        accepts = _ACCEPTS.get(kind)
        return accepts is None or accepts([known.get(v) for v in n.inputs()])

    supported = {n: convertible(n) for n in nodes}
    # A non-tensor made by a compiled node (a tuple) and read by a region
    # cannot cross: its maker joins the regions.
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if n in constant or supported[n]:
                continue
            for inner in _nested(n):
                for v in inner.inputs():
                    maker = _top(v.node(), top) if v.node().kind() != "prim::Param" or v in params else None
                    if maker is not None and maker in supported and supported[maker] and not _is_tensor(v):
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
                carried = [o for o in n.outputs() if not _is_tensor(o)]
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
    # The shapes of what each region gives: the frozen graph run once on
    # the examples, every region's results added to its outputs.
    crossing = []
    region_of = {n: k for k, r in enumerate(regions) for n in r}
    for r in regions:
        members = set(r)
        for n in r:
            for o in n.outputs():
                if any(_top(u.user, top) not in members for u in o.uses()):
                    if not _is_tensor(o):
                        raise _core.TypeError(f"from_torchscript: a {o.type()} made by {n.kind()} is read outside "
                                              "its region")
                    crossing.append(o)
    probed = _probe(g, examples, crossing)
    # Build @main.
    ctx = Context()
    values, inputs = {}, []
    for k, (p, example) in enumerate(zip(params, examples)):
        array = example.detach().numpy()
        name = p.debugName().split(".")[0] or f"input{k}"
        var = graph.Var(name if name.isidentifier() else f"input{k}", shape=array.shape, dtype=str(array.dtype))
        inputs.append(var)
        values[p] = var

    def value(v):
        if v in values:
            return values[v]
        if v in known:
            c = known[v]
            return c.detach().numpy() if isinstance(c, torch.Tensor) else c
        raise _core.TypeError(f"from_torchscript: the value %{v.debugName()} has no import")

    functions, result = {}, ImportReport()
    done = set()
    bindings = []  # @main's let chain, one binding per converted node or region call

    def bind(name, expr, type_of, type_=None):
        """`expr` bound to a new variable of the chain, typed."""
        if type_ is None:
            shape, dtype = type_of
            type_ = ir.TensorType(list(shape), dtype)
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        var = graph.Var(name if name and not name[0].isdigit() else f"v{name}", type_)
        bindings.append((var, expr))
        return var

    from . import torch as fx
    for n in order:
        if n in done:
            continue
        if supported[n]:
            kind = _functional(n.kind())
            args = [value(v) for v in n.inputs()]
            if kind == "prim::TupleConstruct":
                values[n.output()] = tuple(ctx.expr(a) for a in args)
                continue
            if kind == "prim::TupleUnpack":
                for o, item in zip(n.outputs(), args[0]):
                    values[o] = item
                continue
            node = _Node(kind, n.output().debugName())
            try:
                if kind in _ATEN:  # the first argument is the tensor; converters make constants of weights
                    out = _ATEN[kind](ctx, node, *[ctx.expr(a) if k == 0 else a for k, a in enumerate(args)])
                else:
                    convert, _ = fx.REGISTRY.find(_FX_KEYS[kind], 0)
                    if kind in ("aten::add", "aten::sub"):
                        args = args[:2]  # alpha is 1 (_ACCEPTS)
                    out = convert(ctx, node, *[ctx.expr(a) if isinstance(a, np.ndarray) else a for a in args])
            except _Unsupported as e:  # _ACCEPTS should have kept it TorchScript
                raise _core.TypeError(f"from_torchscript: {kind} '{node.name}': {e} is not supported, and the "
                                      "importer did not keep it TorchScript (_ACCEPTS lacks the case)") from None
            values[n.output()] = bind(n.output().debugName(), ctx.expr(out), ctx.type(out))
            result.compiled[n.output().debugName()] = kind
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
        payload, ins = _region_module(torch, g, top, region, known, params)
        in_exprs = [ctx.expr(value(v)) for v in ins]
        in_types = [ir.TensorType(list(ctx.shape(e)), ctx.dtype(e)) for e in in_exprs]
        out_types = [ir.TensorType(list(probed[o].shape), str(probed[o].numpy().dtype)) for o in outs]
        functions[name] = ir.ExternFunc("torchscript", payload, in_types + out_types)
        out_type = out_types[0] if len(outs) == 1 else ir.TupleType(out_types)
        call = graph.call_dps(ir.GlobalVar(name), in_exprs, out_type)
        if len(outs) == 1:
            values[outs[0]] = bind(outs[0].debugName(), call, None, out_type)
        else:
            both = bind(name + "_out", call, None, out_type)
            for k, o in enumerate(outs):
                values[o] = graph.TupleGetItem(both, k)
        result.regions[name] = [m.kind() for m in region]
    returned = list(g.return_node().inputs())
    outputs = [value(v) for v in returned]
    body = outputs[0] if len(outputs) == 1 else graph.Tuple(outputs)
    if isinstance(body, tuple):
        body = graph.Tuple(list(body))
    body = ctx.expr(body) if isinstance(body, np.ndarray) else body
    for var, bound in reversed(bindings):
        body = graph.Let(var, bound, body)
    functions["main"] = graph.Function(inputs, body)
    mod = ir.IRModule(functions)
    return (mod, result) if report else mod


def _tuple(g, values):
    """A tuple of `values` made at the end of graph `g`."""
    import torch
    node = g.create("prim::TupleConstruct", values)
    node.output().setType(torch._C.TupleType([v.type() for v in values]))
    g.appendNode(node)
    return node.output()


def _probe(g, examples, wanted):
    """The values `wanted` (tensors of `g`'s top level) computed on the examples."""
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
    if first.type().kind() == "ClassType":
        probe.eraseInput(0)
    probe_outputs = [mapping[v] for v in wanted]
    probe.registerOutput(_tuple(probe, probe_outputs) if len(probe_outputs) > 1 else probe_outputs[0])
    fn = torch._C._create_function_from_graph("loom_probe", probe)
    with torch.no_grad():
        out = fn(*examples)
    out = out if isinstance(out, tuple) else (out,)
    return dict(zip(wanted, out))


_regions_made = 0


def _region_module(torch, g, top, region, known, params):
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
        if v in known and not isinstance(known[v], torch.Tensor):
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
    names = {"torch": torch.ops.aten, "Tensor": torch.Tensor, "Tuple": typing.Tuple, "List": typing.List,
             "Optional": typing.Optional, "ops": torch.ops, "annotate": torch.jit.annotate}
    inner._c._define(inner._concrete_type, head + "\n" + body, lambda name: names.get(name))
    import io
    buffer = io.BytesIO()
    torch.jit.save(holder, buffer)
    return buffer.getvalue(), ins
