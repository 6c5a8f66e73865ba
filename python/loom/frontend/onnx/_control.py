"""Control flow (docs/frontends.md, "Control flow"): If (one branch when
the condition is known at import, else the graph IR's if), Loop (unrolled
when short and known, else a graph function calling itself in tail
position) and Scan (unrolled).  Subgraphs are imported by the scope of the
node that holds them (`node.scope.subgraph`), which sees every value
defined before the node."""
import collections.abc

import numpy as np

from ... import _core, graph, ir, op, tir
from .. import common
from . import _is_symbolic, _shape_text, converter

MAX_UNROLLED = 1024  # iterations a Scan, or a Loop whose body needs known values, may unroll to


def _known_scalar(value):
    """value's single element when it is known at import, else None."""
    if isinstance(value, np.ndarray) and not _is_symbolic(value) and value.size == 1:
        return value.reshape(-1)[0].item()
    return None


def _join(ctx, node, k, then_value, else_value):
    """The two branches' values of output k as expressions of one type; a
    dimension in which they differ becomes a variable the VM binds from
    the taken branch's value (runtime.bind_shape)."""
    name = node.proto.output[k] if k < len(node.proto.output) and node.proto.output[k] else f"{node.name}_{k}"
    t, e = ctx.expr(then_value), ctx.expr(else_value)
    (ts, td), (es, ed) = ctx.type(t), ctx.type(e)
    if td != ed or len(ts) != len(es):
        _refuse(node, f"output {k} ('{name}') is {td}{_shape_text(ts)} in the then branch and "
                      f"{ed}{_shape_text(es)} in the else branch; the branches must agree in element type and rank")
    if all(common.same_dim(a, b) for a, b in zip(ts, es)):
        return t, e
    differ = [axis for axis, (a, b) in enumerate(zip(ts, es)) if not common.same_dim(a, b)]
    dims = [a if axis not in differ else common.data_dim(name if len(differ) == 1 else f"{name}_{axis}")
            for axis, (a, b) in enumerate(zip(ts, es))]
    joined = ir.TensorType(dims, td)
    return tuple(graph.call_packed("runtime.bind_shape", [v], joined) for v in (t, e))


@converter("If", opsets=(1, 17))
def _if(ctx, node, cond):
    then_graph, else_graph = node.attrs["then_branch"], node.attrs["else_branch"]
    if len(then_graph.output) != len(else_graph.output):
        _refuse(node, f"its branches have {len(then_graph.output)} and {len(else_graph.output)} outputs")
    taken = _known_scalar(cond)
    if taken is not None:  # known at import: only the branch taken is imported
        return tuple(node.scope.subgraph(then_graph if taken else else_graph))
    c = _flag(ctx, node, cond)
    then_out = node.scope.subgraph(then_graph)
    else_out = node.scope.subgraph(else_graph)
    joined = [_join(ctx, node, k, a, b) for k, (a, b) in enumerate(zip(then_out, else_out))]
    if len(joined) == 1:
        return graph.If(c, joined[0][0], joined[0][1])
    out = graph.If(c, graph.Tuple([j[0] for j in joined]), graph.Tuple([j[1] for j in joined]))
    return tuple(graph.TupleGetItem(out, k) for k in range(len(joined)))


def _stack(ctx, values, axis):
    """values (one per iteration, of one shape) stacked along a new axis."""
    if all(isinstance(v, np.ndarray) and not _is_symbolic(v) for v in values):
        return np.stack(values, axis=axis)
    return op.concat(*[op.expand_dims(ctx.expr(v), axis=axis) for v in values], axis=axis)


def _empty_stack(ctx, value, axis):
    """A stack of no iterations: value's shape with a 0 inserted at axis."""
    shape, dtype = ctx.type(value)
    shape = list(shape)
    if not all(isinstance(d, int) for d in shape):
        return None
    shape.insert(axis, 0)
    return np.zeros(shape, dtype=dtype)


def _refuse(node, what):
    raise _core.TypeError(f"{node.op_type} '{node.name}': {what} (docs/frontends.md, \"Control flow\")")


def _steps(node, count):
    if count > MAX_UNROLLED:
        _refuse(node, f"it runs {count} steps; Loom unrolls a Scan of at most {MAX_UNROLLED} at import")


class _RunTime(Exception):
    """Unrolling gives up: the body computes the condition at run time, or
    the loop runs more iterations than unrolling takes."""


UNROLLED = 64  # a Loop of a trip count known at import and at most this many iterations is unrolled


@converter("Loop", opsets=(1, 17))
def _loop(ctx, node, trip_count=None, cond=None, *carried):
    m = None if trip_count is None else _known_scalar(trip_count)
    go = True if cond is None else _known_scalar(cond)
    known = (trip_count is None or m is not None) and go is not None
    if known and m is not None and m <= UNROLLED:
        try:
            return _unrolled(ctx, node, m, go, carried, UNROLLED)
        except _RunTime:
            pass
    try:
        return _runtime_loop(ctx, node, trip_count, cond, carried)
    except _core.LoomError as error:
        if not (known and m is not None and m <= MAX_UNROLLED):
            raise
        try:  # the body needs values known at import (a slice at the iteration number): unrolled
            return _unrolled(ctx, node, m, go, carried, MAX_UNROLLED)
        except _RunTime:
            raise error from None


def _unrolled(ctx, node, m, keep_going, carried, limit):
    """The Loop unrolled: one copy of the body per iteration, the iteration
    number and the condition known in each."""
    body = node.attrs["body"]
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    values, scans, i = list(carried), [[] for _ in range(n_scan)], 0
    while keep_going and (m is None or i < m):
        if i >= limit:
            raise _RunTime()
        outs = node.scope.subgraph(body, [np.asarray(i, np.int64), np.asarray(bool(keep_going))] + values)
        keep_going = _known_scalar(outs[0])
        if keep_going is None:
            raise _RunTime()
        values = list(outs[1:1 + n_carried])
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
        i += 1
    stacked = []
    for k in range(n_scan):
        if scans[k]:
            stacked.append(_stack(ctx, scans[k], 0))
            continue
        # No iteration ran: the body imported once (and dropped) gives the shape.
        probe = node.scope.subgraph(body, [np.asarray(0, np.int64), np.asarray(True)] + list(carried))
        stacked.append(_empty_stack(ctx, probe[1 + n_carried + k], 0))
        if stacked[-1] is None:
            raise _RunTime()
    return tuple(values + stacked)


class _Capture(collections.abc.Mapping):
    """The outer scope as a loop's body, a function of its own, sees it: a
    value computed at run time becomes a parameter of the function (the
    caller passes it: `params`, name -> (parameter, value)); a value known
    at import stays as it is."""

    def __init__(self, ctx, outer, outer_symbols):
        self.ctx, self.outer, self.params = ctx, outer, {}
        self.outer_symbols = outer_symbols  # where the caller reads its sizes (Context.symbols)
        self.bound = set()  # the variables the parameters' shapes bind

    def note(self, params):
        """The function's other parameters (the carried values): the
        variables their shapes bind."""
        for p in params:
            self._bind(self.ctx.shape(p))

    def __getitem__(self, name):
        if name in self.params:
            return self.params[name][0]
        value = self.outer[name]
        if value is None or (isinstance(value, np.ndarray) and not _is_symbolic(value)):
            return value
        with self.ctx.symbols(self.outer_symbols):  # the value as the caller computes it
            value = self.ctx.expr(value)
        return self._parameter(name, common.identifier(name, "v", "v"), value)

    def _parameter(self, key, pname, value):
        shape, dtype = self.ctx.type(value)
        param = graph.Var(pname, shape=self._shape(shape, pname), dtype=dtype)
        self.ctx.symbol_sources(param)  # the function reads the sizes it has from its parameters
        self.params[key] = (param, value)
        self._bind(self.ctx.shape(param))
        return param

    def _bind(self, shape):
        for d in shape:
            if not isinstance(d, int) and _bindable(d):
                self.bound.update(common.dim_variables(d))

    def _shape(self, shape, pname):
        """`shape` as a parameter's (_parameter_shape): a dimension the VM
        cannot bind from the argument keeps its variables when the values
        they are read from are parameters too (captured for it: a
        reference, not a copy)."""
        return _parameter_shape(shape, pname, [], keep=self._keeps)

    def _keeps(self, dim):
        variables = common.dim_variables(dim)
        for v in variables:
            if v not in self.bound:
                self._capture_size(v)
        return all(v in self.bound for v in variables)

    def _capture_size(self, var):
        """The caller's value that var is a dimension of, as a parameter."""
        source = self.outer_symbols.get(var)
        key = ("size of", var.name, id(var))
        if source is None or key in self.params:
            return
        self.params[key] = None  # (being captured: no second time)
        self._parameter(key, common.identifier(f"{var.name}_source", "v", "v"), source[0])

    def __contains__(self, name):
        return name in self.params or name in self.outer

    def __iter__(self):
        return iter(self.outer)

    def __len__(self):
        return len(self.outer)


def _general(a, b, hint, made):
    """A type covering both (shape, dtype) a and b: the dimensions in which
    they differ made variables (appended to `made`); None when dtype or
    rank differ."""
    (sa, da), (sb, db) = a, b
    if da != db or len(sa) != len(sb):
        return None
    dims = []
    for k, (x, y) in enumerate(zip(sa, sb)):
        if not common.same_dim(x, y) and not (not isinstance(x, int) and x in set(made)):
            x = tir.Var(f"{hint}_{k}")
            made.append(x)
        dims.append(x)
    return tuple(dims), da


def _bindable(d):
    """Whether a dimension binds its variable from a parameter's shape: an
    int, a variable, or linear in one variable (%n * 4 + 2)."""
    if isinstance(d, int) or d.type_key in ("tir.Var", "tir.IntImm"):
        return True
    if len({v.name for v in common.dim_variables(d)}) != 1:
        return False

    def linear(e):
        if e.type_key in ("tir.Var", "tir.IntImm"):
            return True
        if e.type_key in ("tir.Add", "tir.Sub"):
            return linear(e.a) and linear(e.b)
        return e.type_key == "tir.Mul" and (e.a.type_key == "tir.IntImm" or e.b.type_key == "tir.IntImm") and \
            linear(e.a) and linear(e.b)
    return linear(d)


def _parameter_shape(shape, hint, made, keep=lambda dim: False):
    """`shape` as a function parameter's: a dimension the VM cannot bind
    from the argument (min(%n, 100): %n is not known when it is 100) made
    a variable of its own (appended to `made`), unless keep(dim) says the
    function's other parameters bind its variables."""
    out = []
    for k, d in enumerate(shape):
        if not _bindable(d) and not keep(d):
            d = tir.Var(f"{hint}_{k}")
            made.append(d)
        out.append(d)
    return tuple(out)


def _among(d, variables):
    """Whether the dimension d (an int or a tir expression) is one of the
    tir variables `variables` (a set: by identity)."""
    return not isinstance(d, int) and d in variables


def _same_type(a, b):
    return a[1] == b[1] and len(a[0]) == len(b[0]) and all(common.same_dim(x, y) for x, y in zip(a[0], b[0]))


def _flag(ctx, node, value):
    """A condition (a tensor of one element) as a bool scalar expression."""
    c = ctx.expr(value)
    shape, dtype = ctx.type(c)
    if any(not (isinstance(d, int) and d == 1) for d in shape):
        _refuse(node, f"its condition has shape {_shape_text(shape)}; it must have one element")
    if shape:
        c = op.reshape(c, shape=[])
    return c if dtype == "bool" else op.cast(c, dtype="bool")


def _runtime_loop(ctx, node, trip_count, cond, carried):
    """The Loop as a graph function of its own that calls itself in tail
    position while the condition holds and the count is below the trip
    count (the VM runs it in constant stack): the body's values computed
    at run time, carried values whose shape changes from one iteration to
    the next typed with variables, scan outputs concatenated."""
    body = node.attrs["body"]
    n_carried = len(carried)
    name = common.identifier(f"loop_{node.name}", "v", "v")
    while name in ctx.functions:
        name += "_"
    fn = ir.GlobalVar(name)
    carried = [ctx.expr(v) for v in carried]
    made = []  # the variables the generalisation made: sizes the loop changes
    # the carried values', generalised until the body keeps them
    types = [(_parameter_shape(t[0], f"v{k}", made), t[1]) for k, t in enumerate(ctx.type(v) for v in carried)]
    elements = None  # the scan outputs' element types
    i = graph.Var("i", shape=(), dtype="int64")
    m = graph.Var("trip_count", shape=(), dtype="int64")
    go = graph.Var("cond", shape=(), dtype="bool")
    for _ in range(4):
        outer_symbols = ctx.symbols_now()
        capture = _Capture(ctx, node.scope.values, outer_symbols)
        v = [graph.Var(f"v{k}", shape=t[0], dtype=t[1]) for k, t in enumerate(types)]
        lengths = [tir.Var(f"scan{k}_len") for k in range(len(elements or []))]
        acc = [graph.Var(f"scan{k}", shape=(n,) + tuple(t[0]), dtype=t[1])
               for k, (n, t) in enumerate(zip(lengths, elements or []))]
        with ctx.symbols({}):  # a function of its own: sizes are read from its parameters, not the caller's values
            capture.note(v + acc)
            for param in v + acc:
                ctx.symbol_sources(param)
            outs = node.scope.subgraph(body, [i, go] + v, outer=capture)
            outs = [ctx.expr(o) for o in outs]
            new_types = [_general(t, ctx.type(o), f"v{k}", made)
                         for k, (t, o) in enumerate(zip(types, outs[1:1 + n_carried]))]
            new_elements = [ctx.type(o) for o in outs[1 + n_carried:]]
            step = [ctx.expr(o) for o in outs[1 + n_carried:]]
            cond_out = _flag(ctx, node, outs[0])
        if any(t is None for t in new_types):
            k = new_types.index(None)
            _refuse(node, f"its body changes the element type or rank of carried value {k} "
                          f"({types[k][1]}{_shape_text(types[k][0])} to "
                          f"{ctx.type(outs[1 + k])[1]}{_shape_text(ctx.type(outs[1 + k])[0])})")
        if elements is not None and all(_same_type(a, b) for a, b in zip(types, new_types)) and \
                all(_same_type(a, b) for a, b in zip(elements, new_elements)):
            break
        if elements is not None:
            for k, (a, b) in enumerate(zip(elements, new_elements)):
                if not _same_type(a, b):
                    _refuse(node, f"the shape of its scan output {k} changes from one iteration to the next")
        types, elements = new_types, new_elements
    else:
        _refuse(node, "the shapes of its carried values do not settle")
    one = graph.Constant(np.int64(1))
    again = graph.Call(fn, [op.add(i, one), m, cond_out] + outs[1:1 + n_carried] +
                       [op.concat(a, op.expand_dims(s, axis=0), axis=0) for a, s in zip(acc, step)] +
                       [p for p, _ in capture.params.values()])
    # The result: the carried values, and the scan outputs stacked, typed
    # with variables of their own where the loop decides the size.
    local = set(made)
    outer = {}  # a variable of the loop's -> its variable in the result type
    ret = [[outer.setdefault(d, tir.Var(f"{d}_out")) if _among(d, local) else d for d in t[0]] for t in types]
    ret += [[outer.setdefault(a_len, tir.Var(f"scan{k}_out"))] + list(t[0]) for k, (a_len, t) in
            enumerate(zip(lengths, elements))]
    dtypes = [t[1] for t in types] + [t[1] for t in elements]
    loop_decided = set(outer.values())
    ret = [ir.TensorType(dims, dtype) for dims, dtype in zip(ret, dtypes)]
    done = graph.Tuple([graph.call_packed("runtime.bind_shape", [x], r) if any(_among(d, loop_decided) for d in r.shape)
                        else x for x, r in zip(v + acc, ret)])
    loop_body = graph.If(op.logical_and(go, op.less(i, m)), again, done)
    ctx.functions[name] = graph.Function([i, m, go] + v + acc + [p for p, _ in capture.params.values()], loop_body,
                                         ret_type=ir.TupleType(ret))
    first = [graph.Constant(np.int64(0)),
             graph.Constant(np.int64(np.iinfo(np.int64).max)) if trip_count is None else
             op.reshape(ctx.expr(trip_count, "int64"), shape=[]),
             graph.Constant(np.bool_(True)) if cond is None else _flag(ctx, node, cond)]
    first += carried + [op.broadcast_to(graph.Constant(np.zeros((), t[1])), shape=[0] + list(t[0])) for t in elements]
    result = graph.Call(fn, first + [value for _, value in capture.params.values()])
    outputs = []
    for k, r in enumerate(ret):
        item = graph.TupleGetItem(result, k)
        dims = list(ctx.shape(item))
        if any(_among(d, loop_decided) for d in dims):  # sizes the loop decides: the caller's own variables
            name_k = node.proto.output[k] if k < len(node.proto.output) and node.proto.output[k] else name
            dims = [common.data_dim(f"{name_k}_{j}") if _among(d, loop_decided) else d for j, d in enumerate(dims)]
            item = graph.call_packed("runtime.bind_shape", [item], ir.TensorType(dims, dtypes[k]))
        outputs.append(item)
    return tuple(outputs)


@converter("Scan", opsets=(9, 17))
def _scan(ctx, node, *inputs):
    body = node.attrs["body"]
    n_in = int(node.attrs["num_scan_inputs"])
    n_state = len(inputs) - n_in
    states, xs = list(inputs[:n_state]), list(inputs[n_state:])
    n_out = len(body.output) - n_state

    def axes(name, count):
        given = list(node.attrs.get(name, [0] * count))
        return given + [0] * (count - len(given))
    in_axes, in_dirs = axes("scan_input_axes", n_in), axes("scan_input_directions", n_in)
    out_axes, out_dirs = axes("scan_output_axes", n_out), axes("scan_output_directions", n_out)
    lengths = set()
    for k, x in enumerate(xs):
        shape = ctx.shape(x)
        in_axes[k] = in_axes[k] + len(shape) if in_axes[k] < 0 else in_axes[k]
        if not isinstance(shape[in_axes[k]], int):
            _refuse(node, f"it scans input {n_state + k} along axis {in_axes[k]}, whose length "
                           f"{shape[in_axes[k]]} is symbolic; Loom unrolls scans of a length known at import")
        lengths.add(shape[in_axes[k]])
    if len(lengths) != 1:
        _refuse(node, f"its scan inputs have different lengths ({sorted(lengths)})")
    length = lengths.pop()
    _steps(node, length)
    outs_per_step = [[] for _ in range(n_out)]
    for i in range(length):
        slices = []
        for x, axis, reverse in zip(xs, in_axes, in_dirs):
            at = length - 1 - i if reverse else i
            if isinstance(x, np.ndarray) and not _is_symbolic(x):
                slices.append(np.take(x, at, axis=axis))
            else:
                cut = op.slice(ctx.expr(x), begin=[at], end=[at + 1], axes=[axis])
                slices.append(op.squeeze(cut, axis=[axis]))
        outs = node.scope.subgraph(body, states + slices)
        states = list(outs[:n_state])
        for k in range(n_out):
            outs_per_step[k].append(outs[n_state + k])
    results = []
    for k in range(n_out):
        steps = outs_per_step[k][::-1] if out_dirs[k] else outs_per_step[k]
        rank = len(ctx.shape(steps[0])) + 1 if steps else 1
        axis = out_axes[k] + rank if out_axes[k] < 0 else out_axes[k]
        if not steps:
            _refuse(node, "it scans no element, so its outputs have no shape")
        results.append(_stack(ctx, steps, axis))
    return tuple(states + results)
