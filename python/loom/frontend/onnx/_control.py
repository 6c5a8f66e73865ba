"""Control flow (docs/frontends.md, "Control flow"): If, and Loop and Scan
with a trip count known at import.  Subgraphs are imported by the scope
of the node that holds them (`node.scope.subgraph`), which sees every
value defined before the node."""
import numpy as np

from ... import _core, graph, ir, op
from .. import common
from . import _is_symbolic, _shape_text, converter

MAX_UNROLLED = 1024  # iterations a Loop or Scan may unroll to


def _known_scalar(value):
    """value's single element when it is known at import, else None."""
    if isinstance(value, np.ndarray) and not _is_symbolic(value) and value.size == 1:
        return value.reshape(-1)[0].item()
    return None


def _same_dim(a, b):
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int) and a == b
    return ir.structural_equal(a, b)


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
    if all(_same_dim(a, b) for a, b in zip(ts, es)):
        return t, e
    differ = [axis for axis, (a, b) in enumerate(zip(ts, es)) if not _same_dim(a, b)]
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
    c = ctx.expr(cond)
    shape, dtype = ctx.type(c)
    if any(d != 1 for d in shape):
        _refuse(node, f"its condition has shape {_shape_text(shape)}; it must have one element")
    if shape:
        c = op.reshape(c, shape=[])
    if dtype != "bool":
        c = op.cast(c, dtype="bool")
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


def _iterations(node, count):
    if count > MAX_UNROLLED:
        _refuse(node, f"more than {MAX_UNROLLED} iterations; Loom unrolls loops of at most {MAX_UNROLLED} at import")


def _known_input(node, value, what, default):
    """A Loop's trip count or condition, which must be known at import."""
    if value is None:
        return default
    known = _known_scalar(value)
    if known is None:
        _refuse(node, f"its {what} is computed at run time; Loom unrolls loops whose {what} is known at import")
    return known


@converter("Loop", opsets=(1, 17))
def _loop(ctx, node, trip_count=None, cond=None, *carried):
    body = node.attrs["body"]
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    m = _known_input(node, trip_count, "trip count", None)
    keep_going = _known_input(node, cond, "condition", True)
    values, scans, i = list(carried), [[] for _ in range(n_scan)], 0
    while keep_going and (m is None or i < m):
        _iterations(node, i + 1)
        outs = node.scope.subgraph(body, [np.asarray(i, np.int64), np.asarray(bool(keep_going))] + values)
        keep_going = _known_scalar(outs[0])
        if keep_going is None:
            _refuse(node, f"its body computes the condition at run time (iteration {i}); Loom unrolls loops "
                           "whose condition is known at import")
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
            _refuse(node, f"it runs no iteration and its scan output {k} has a symbolic shape")
    return tuple(values + stacked)


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
    _iterations(node, length)
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
