"""ONNX converters: shapes and indexing (Shape, Reshape, Transpose, Slice,
Gather*, Scatter*, Pad, Tile, Resize, TopK, ...) and constants."""
import numpy as np

from ... import _core, graph, ir, op, tir
from .. import common
from . import _axis, _dim, _dtype, _ints, _is_symbolic, _known, _normalised, _object_array, _sizes, converter


def _item(node, value, what, default=None):
    """A known scalar input (k, axis, depth...) as a Python number."""
    if value is None:
        return default
    return np.asarray(_known(node, value, what)).reshape(-1)[0].item()


def _outputs(call, count):
    """The fields of a call with a tuple result, as a Python tuple."""
    return tuple(graph.TupleGetItem(call, k) for k in range(count))


# ---------------------------------------------------------------- shapes

@converter("Shape")
def _shape(ctx, node, x):
    shape = ctx.shape(x)
    start, end = node.attr("start", 0), node.attr("end", len(shape))
    return _normalised(_object_array(shape)[start:end])


@converter("Size")
def _size(ctx, node, x):
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        return _normalised(_object_array([_dim(np.prod(_object_array(shape)))]).reshape(()))
    return np.asarray(int(np.prod(shape)), dtype=np.int64)


def _shape_entries(value):
    """A known shape, perhaps symbolic, as a list of ints and tir expressions."""
    return [_dim(d) for d in np.asarray(value).reshape(-1)]


def _reshape_target(node, shape, target):
    target = _shape_entries(target)
    if not node.attr("allowzero", 0):
        target = [shape[k] if isinstance(t, int) and t == 0 else t for k, t in enumerate(target)]
    return target


@converter("Reshape", fold=lambda node, x, s: x.reshape(_reshape_target(node, x.shape, s)))
def _reshape(ctx, node, x, target):
    if isinstance(x, np.ndarray):  # a symbolic shape itself reshaped ([%batch, -1, -1] to [-1])
        return _normalised(x.reshape(_reshape_target(node, x.shape, _ints(_known(node, target, "target shape")))))
    target = _reshape_target(node, ctx.shape(x), _known(node, target, "target shape", symbolic=True))
    # Symbolic entries ([%seq, %batch * 4, 8]) go to Loom's reshape as they
    # are; its type rule checks that the element counts agree.
    return op.reshape(ctx.expr(x), shape=target)


@converter("Flatten", fold=lambda node, x: x.reshape(int(np.prod(x.shape[:_axis(node.attr("axis", 1), x.ndim)])), -1))
def _flatten(ctx, node, x):
    shape = ctx.shape(x)
    axis = _axis(int(node.attr("axis", 1)), len(shape))
    if axis == 1 and len(shape) >= 2:
        return op.flatten(x)
    def product(dims):
        out = 1
        for d in dims:
            out = out * d
        return _dim(out)
    lead, rest = product(shape[:axis]), product(shape[axis:])
    # One entry may be -1, which reshape infers: the symbolic one when the other is a number.
    return op.reshape(ctx.expr(x), shape=[-1, rest] if isinstance(rest, int) else [lead, -1])


@converter("Transpose", fold=lambda node, x: np.transpose(x, node.attr("perm")))
def _transpose(ctx, node, x):
    perm = node.attr("perm")
    return op.transpose(ctx.expr(x), axes=list(perm) if perm is not None else list(range(ctx.rank(x)))[::-1])


def _unsqueeze_axes(node, axes, rank):
    axes = _ints(axes) if node.opset >= 13 else list(node.attr("axes"))
    out_rank = rank + len(axes)
    return sorted(_axis(a, out_rank) for a in axes)


def _unsqueeze_fold(node, x, axes=None):
    for a in _unsqueeze_axes(node, axes, x.ndim):
        x = np.expand_dims(x, a)
    return x


@converter("Unsqueeze", fold=_unsqueeze_fold)
def _unsqueeze(ctx, node, x, axes=None):
    x = ctx.expr(x)
    for a in _unsqueeze_axes(node, _known(node, axes, "axes"), ctx.rank(x)):
        x = op.expand_dims(x, axis=a)
    return x


def _squeeze_axes(node, axes, shape):
    if node.opset >= 13:
        axes = None if axes is None else _ints(axes)
    else:
        axes = node.attr("axes")
    if axes is None:
        return [k for k, d in enumerate(shape) if d == 1]
    return [_axis(a, len(shape)) for a in axes]


@converter("Squeeze", fold=lambda node, x, axes=None: np.squeeze(x, axis=tuple(_squeeze_axes(node, axes, x.shape))))
def _squeeze(ctx, node, x, axes=None):
    return op.squeeze(ctx.expr(x), axis=_squeeze_axes(node, _known(node, axes, "axes"), ctx.shape(x)))


@converter("Concat", fold=lambda node, *xs: np.concatenate(xs, axis=node.attr("axis")))
def _concat(ctx, node, *xs):
    like = next(x for x in xs if not isinstance(x, np.ndarray))
    dtype = ctx.dtype(like)
    values = [ctx.expr(x, dtype) for x in xs]
    axis = _axis(int(node.attr("axis")), ctx.rank(values[0]))
    return op.concat(*common.agree(ctx, values, axis), axis=axis)


def _split_sizes(ctx, node, x, split):
    axis = _axis(int(node.attr("axis", 0)), ctx.rank(x))
    extent = ctx.shape(x)[axis]
    count = len(node.proto.output)
    if node.opset < 13:
        split = node.attr("split")
    else:
        split = None if split is None else _ints(_known(node, split, "split sizes"))
    if split is None or len(split) == 0:
        if not isinstance(extent, int):
            node.unsupported("splitting a symbolic axis")
        size = -(-extent // count)  # the last part may be smaller (opset 18 num_outputs)
        split = [min(size, extent - k * size) for k in range(count)]
    return axis, list(split)


@converter("Split")
def _split(ctx, node, x, split=None):
    x = ctx.expr(x)
    axis, sizes = _split_sizes(ctx, node, x, split)
    points = list(np.cumsum(sizes)[:-1])
    if not points:
        return x
    return _outputs(op.split(x, indices_or_sections=[int(p) for p in points], axis=axis), len(sizes))


# ------------------------------------------------------------- indexing

def _gather_fold(node, data, indices):
    return np.take(data, indices, axis=node.attr("axis", 0))


@converter("Gather", fold=_gather_fold)
def _gather(ctx, node, data, indices):
    shape = ctx.shape(data)
    axis = _axis(int(node.attr("axis", 0)), len(shape))
    if isinstance(indices, np.ndarray):
        extent = shape[axis]
        flat = [i + extent if i < 0 else i for i in _ints(indices)] if isinstance(extent, int) else _ints(indices)
        data = ctx.expr(data)
        if indices.ndim == 0 and flat[0] >= 0:
            picked = op.slice(data, begin=[flat[0]], end=[flat[0] + 1], axes=[axis])
            return op.squeeze(picked, axis=[axis])
        if indices.ndim == 1 and flat and min(flat) >= 0 and flat == list(range(flat[0], flat[0] + len(flat))):
            return op.slice(data, begin=[flat[0]], end=[flat[0] + len(flat)], axes=[axis])
    return op.take(ctx.expr(data), ctx.expr(indices), axis=axis)


@converter("GatherElements")
def _gather_elements(ctx, node, data, indices):
    return op.gather_elements(ctx.expr(data), ctx.expr(indices), axis=int(node.attr("axis", 0)))


@converter("GatherND")
def _gather_nd(ctx, node, data, indices):
    return op.gather_nd(ctx.expr(data), ctx.expr(indices), batch_dims=int(node.attr("batch_dims", 0)))


def _reduction(node):
    return node.attr("reduction", "none")


@converter("ScatterElements")
def _scatter_elements(ctx, node, data, indices, updates):
    dtype = ctx.dtype(data)
    return op.scatter_elements(ctx.expr(data), ctx.expr(indices), ctx.expr(updates, dtype),
                               axis=int(node.attr("axis", 0)), reduction=_reduction(node))


converter("Scatter", opsets=(9, 10))(_scatter_elements)


@converter("ScatterND")
def _scatter_nd(ctx, node, data, indices, updates):
    dtype = ctx.dtype(data)
    return op.scatter_nd(ctx.expr(data), ctx.expr(indices), ctx.expr(updates, dtype), reduction=_reduction(node))


def _slice_args(node, rank, starts, ends, axes, steps):
    if node.opset < 10:
        starts, ends, axes = node.attr("starts"), node.attr("ends"), node.attr("axes")
        steps = None
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else [_axis(a, rank) for a in _ints(axes)]
    steps = [1] * len(starts) if steps is None else _ints(steps)
    big = np.iinfo(np.int64).max // 2  # ONNX writes INT64_MAX for "to the end"
    ends = [min(e, big) if e > 0 else max(e, -big) for e in ends]
    starts = [min(s, big) if s > 0 else max(s, -big) for s in starts]
    return starts, ends, axes, steps


def _slice_fold(node, x, starts=None, ends=None, axes=None, steps=None):
    starts, ends, axes, steps = _slice_args(node, x.ndim, starts, ends, axes, steps)
    if any(st == 0 for st in steps):
        node.unsupported(f"steps={steps}")
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = _onnx_slice(s, e, st, x.shape[a])
    return x[tuple(index)]


def _onnx_slice(start, end, step, n):
    """ONNX's Slice bounds on an axis of length n as a Python slice: a
    negative bound counts from the end, then both are clamped to [0, n]
    (a negative step: the start to [0, n - 1], the end to [-1, n - 1]).
    Python's own slicing differs for a negative step's start before the
    axis (it gives nothing; ONNX starts at 0), as runtime.slice does not."""
    start, end = start + n if start < 0 else start, end + n if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), n), min(max(end, 0), n), step)
    start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return slice(start, None if end < 0 else end, step)


def _signs(e):
    """The signs (-1, 0, 1) a symbolic expression takes at dimension values
    1 and 4096 (all at one, all at the other, each alone at the other): how
    the importer judges what a bound does for every length."""
    if isinstance(e, int):
        return {(e > 0) - (e < 0)}
    names = sorted({v.name for v in common.dim_variables(e)})
    signs = set()
    for assignment in [{n: 1 for n in names}, {n: 4096 for n in names}] + \
            [{n: (4096 if n == m else 1) for n in names} for m in names] + \
            [{n: (1 if n == m else 4096) for n in names} for m in names]:
        v = _evaluate(e, assignment)
        signs.add((v > 0) - (v < 0))
    return signs


def _evaluate(e, values):
    if e.type_key == "tir.IntImm":
        return int(e.value)
    if e.type_key == "tir.Var":
        return values[e.name]
    a, b = _evaluate(e.a, values), _evaluate(e.b, values)
    ops = {"tir.Add": lambda: a + b, "tir.Sub": lambda: a - b, "tir.Mul": lambda: a * b,
           "tir.FloorDiv": lambda: a // b if b else 0, "tir.FloorMod": lambda: a % b if b else 0,
           "tir.Min": lambda: min(a, b), "tir.Max": lambda: max(a, b)}
    if e.type_key not in ops:
        raise _core.TypeError(f"the shape entry {e} ({e.type_key})")
    return ops[e.type_key]()


def _symbolic_slice(ctx, node, x, starts, ends, axes, steps):
    """Slice with symbolic bounds (x[:, -%n:], mask[:, :%p + 1]): each such
    axis gathered at start, start + step, ... with the start read from the
    inputs' shapes at run time.  A bound's sign (from the end or not) and
    the clamping to the axis decide at compile time, for every dimension
    value: an expression whose sign depends on them is refused."""
    rank = ctx.rank(x)
    starts, ends = _shape_entries(starts), _shape_entries(ends)
    axes = list(range(len(starts))) if axes is None else [_axis(a, rank) for a in _ints(_known(node, axes, "axes"))]
    steps = [1] * len(starts) if steps is None else _ints(_known(node, steps, "steps"))
    big = np.iinfo(np.int64).max // 2
    y = ctx.expr(x)
    shape = ctx.shape(x)
    for s, e, a, st in zip(starts, ends, axes, steps):
        if st <= 0:
            node.unsupported(f"a symbolic bound with step {st} (a positive step is)")
        d = shape[a]

        def resolve(v, what):
            """The bound counted from the axis's start and clamped to it."""
            if isinstance(v, int) and abs(v) >= big:
                return d if v > 0 else 0
            signs = _signs(v)
            if min(signs) < 0 <= max(signs):
                node.unsupported(f"a {what} ({v}) counted from the start or the end depending on the dimensions")
            v = _dim(v + d) if max(signs) < 0 else v
            over, below = _signs(_dim(v - d)), _signs(v)
            if min(over) >= 0:
                return d
            if max(below) <= 0:
                return 0
            if isinstance(d, int) and max(over) > 0 and min(below) >= 0 and \
                    _evaluate(_dim(v - d), {x.name: 1 for x in common.dim_variables(v)}) <= 0:
                # A fixed axis (a buffer of the model's maximum length, a
                # causal mask of 1024 positions): the lengths are taken to
                # stay inside it, as the model's own limit; past it the
                # gather clamps (no read outside the buffer).
                return v
            if max(over) > 0 or min(below) < 0:
                node.unsupported(f"a {what} ({v}) that may or may not lie inside the axis ({d})")
            return v
        s, e = resolve(s, "start"), resolve(e, "end")
        span = _signs(_dim(e - s))
        if min(span) < 0 < max(span):
            node.unsupported(f"a slice [{s}, {e}) that may be empty or not depending on the dimensions")
        # (An extent Loom's kernels can bind: no max() of a dimension.)
        extent = 0 if max(span) <= 0 else _dim(e - s) if st == 1 else _dim(tir.floordiv(_dim(e - s) + (st - 1), st))
        if isinstance(extent, int) and isinstance(s, int):
            y = op.slice(y, begin=[s], end=[s + extent * st], axes=[a], strides=[st])
            continue
        begin = ctx.expr(_object_array([s]).reshape(()) if not isinstance(s, int) else np.int64(s))
        index = op.add(op.arange(extent=extent, start=0.0, step=float(st), dtype="int64"), begin)
        y = op.take(y, index, axis=a)
    return y


def _runtime_slice(ctx, node, x, starts, ends, axes, steps):
    """Slice at bounds computed at run time (a loop's x[i:i + 1]): the sliced
    axes' lengths are sizes the data decides (runtime.slice, on the host)."""
    shape, dtype = ctx.type(x)
    count = ctx.shape(starts)[0] if not isinstance(starts, np.ndarray) else starts.size
    axes = list(range(count)) if axes is None else [_axis(a, len(shape)) for a in _ints(axes)]
    steps = [1] * count if steps is None else _ints(steps)
    if 0 in steps:
        node.unsupported(f"steps={steps}")
    dims = list(shape)
    for a in axes:
        dims[a] = common.data_dim(f"{node.proto.output[0]}_{a}")
    args = [ctx.expr(x), ctx.expr(starts, "int64"), ctx.expr(ends, "int64"),
            graph.Constant(np.asarray(axes, np.int64)), graph.Constant(np.asarray(steps, np.int64))]
    return graph.call_packed("runtime.slice", args, ir.TensorType(dims, dtype))


@converter("Slice", fold=_slice_fold)
def _slice(ctx, node, x, starts=None, ends=None, axes=None, steps=None):
    if node.opset >= 10 and (_is_symbolic(starts) or _is_symbolic(ends)):
        _known(node, starts, "start", symbolic=True), _known(node, ends, "end", symbolic=True)
        return _symbolic_slice(ctx, node, x, starts, ends, axes, steps)
    for what, v in (("axis", axes), ("step", steps)):
        _known(node, v, what)
    if node.opset >= 10 and any(v is not None and not isinstance(v, np.ndarray) for v in (starts, ends)):
        return _runtime_slice(ctx, node, x, starts, ends, axes, steps)
    starts, ends, axes, steps = _slice_args(node, ctx.rank(x), starts, ends, axes, steps)
    if any(s == 0 for s in steps):
        node.unsupported(f"steps={steps}")
    shape = ctx.shape(x)
    # loom's slice is NumPy's, which differs from ONNX's in one case: a
    # negative step from before the axis starts at its first element in
    # ONNX (clamped to 0), and gives nothing in NumPy
    starts = [0 if st < 0 and isinstance(shape[a], int) and s < -shape[a] else s
              for s, a, st in zip(starts, axes, steps)]
    return op.slice(ctx.expr(x), begin=starts, end=ends, axes=axes, strides=steps)


def _expand_shape(current, target):
    rank = max(len(target), len(current))
    target = [1] * (rank - len(target)) + list(target)
    padded = [1] * (rank - len(current)) + list(current)
    # ONNX: bidirectional broadcasting (a target's 1 keeps the input's extent)
    return [c if isinstance(t, int) and t == 1 else t for t, c in zip(target, padded)]


@converter("Expand", fold=lambda node, x, shape: x * np.ones(_ints(shape), dtype=x.dtype))
def _expand(ctx, node, x, shape):
    # A symbolic target ([%batch, 1, 32]) goes to broadcast_to as it is.
    out = _expand_shape(ctx.shape(x), _shape_entries(_known(node, shape, "shape", symbolic=True)))
    return op.broadcast_to(ctx.expr(x), shape=out)


@converter("Tile", fold=lambda node, x, repeats: np.tile(x, _ints(repeats)))
def _tile(ctx, node, x, repeats):
    repeats = _ints(_known(node, repeats, "repeats"))
    shape = ctx.static_shape(node, x)
    if len(repeats) != len(shape):
        node.unsupported(f"{len(repeats)} repeats for a rank-{len(shape)} input")
    # (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0 d0, r1 d1)
    spread = [v for d in shape for v in (1, d)]
    wide = [v for r, d in zip(repeats, shape) for v in (r, d)]
    y = op.broadcast_to(op.reshape(ctx.expr(x), shape=spread), shape=wide)
    return op.reshape(y, shape=[r * d for r, d in zip(repeats, shape)])


@converter("Pad")
def _pad(ctx, node, x, pads=None, value=None, axes=None):
    x = ctx.expr(x)
    rank = ctx.rank(x)
    if node.opset < 11:
        pads, value = node.attr("pads"), node.attr("value", 0.0)
    else:
        pads = _ints(_known(node, pads, "pads"))
        value = _item(node, value, "constant value", 0.0)
    if axes is not None:
        axes = [_axis(a, rank) for a in _ints(_known(node, axes, "axes"))]
        full = [0] * (2 * rank)
        for k, a in enumerate(axes):
            full[a], full[a + rank] = pads[k], pads[k + len(axes)]
        pads = full
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        node.unsupported(f"mode={mode!r}")
    before, after = list(pads[:rank]), list(pads[rank:])
    # Negative pads crop.
    if any(p < 0 for p in before + after):
        shape = ctx.static_shape(node, x)
        x = op.slice(x, begin=[max(0, -b) for b in before], end=[d - max(0, -a) for d, a in zip(shape, after)],
                     axes=list(range(rank)))
        before, after = [max(0, b) for b in before], [max(0, a) for a in after]
    if not any(before + after):
        return x
    width = [v for b, a in zip(before, after) for v in (b, a)]
    return op.pad(x, pad_width=width, pad_value=float(value), mode=mode)


@converter("OneHot")
def _one_hot(ctx, node, indices, depth, values):
    depth = int(_item(node, depth, "depth"))
    values = _known(node, values, "values")
    rank = ctx.rank(indices) + 1
    axis = _axis(int(node.attr("axis", -1)), rank)
    index = ctx.expr(indices)
    if not ctx.dtype(index).startswith("int"):
        index = op.cast(index, dtype="int64")
    elif ctx.dtype(index) != "int64":
        index = op.cast(index, dtype="int64")
    # Negative indices count from depth's end.
    index = op.where(op.less(index, ctx.expr(np.asarray(0, np.int64))),
                     op.add(index, ctx.expr(np.asarray(depth, np.int64))), index)
    positions = np.arange(depth, dtype=np.int64).reshape([-1] + [1] * (rank - 1 - axis))
    hot = op.equal(op.expand_dims(index, axis=axis), ctx.expr(positions))
    off, on = values.reshape(-1)[0], values.reshape(-1)[1]
    return op.where(hot, ctx.expr(np.asarray(on, dtype=values.dtype)), ctx.expr(np.asarray(off, dtype=values.dtype)))


def _eye_like(node, shape, dtype):
    to = node.attr("dtype")
    dtype = _dtype(to, f"EyeLike '{node.name}'") if to is not None else dtype
    return np.eye(shape[0], shape[1], k=int(node.attr("k", 0)), dtype=dtype)


@converter("EyeLike", fold=lambda node, x: _eye_like(node, x.shape, x.dtype))
def _eye(ctx, node, x):
    return _eye_like(node, ctx.static_shape(node, x), ctx.dtype(x))


def _trilu_mask(node, shape, k):
    rows, cols = shape[-2], shape[-1]
    ones = np.ones((rows, cols), dtype=bool)
    return np.triu(ones, k) if node.attr("upper", 1) else np.tril(ones, k)


@converter("Trilu", fold=lambda node, x, k=None: np.where(_trilu_mask(node, x.shape, int(_item(node, k, "k", 0))),
                                                            x, np.zeros((), x.dtype)))
def _trilu(ctx, node, x, k=None):
    shape, k = ctx.shape(x), int(_item(node, k, "k", 0))
    if all(isinstance(d, int) for d in shape):
        mask = ctx.expr(_trilu_mask(node, shape, k))
    else:
        # A symbolic matrix (a causal mask over %seq): column - row against k.
        rows, cols = shape[-2:]
        diagonal = op.subtract(op.expand_dims(op.arange(extent=cols), axis=0),
                               op.expand_dims(op.arange(extent=rows), axis=1))
        keep = op.greater_equal if node.attr("upper", 1) else op.less_equal
        mask = keep(diagonal, ctx.expr(np.asarray(k, np.int64)))
    return op.where(mask, ctx.expr(x), ctx.const(0, x))


@converter("DepthToSpace")
def _depth_to_space(ctx, node, x):
    n, c, h, w = ctx.static_shape(node, x)
    b = int(node.attr("blocksize"))
    if node.attr("mode", "DCR") == "DCR":
        y = op.transpose(op.reshape(x, shape=[n, b, b, c // (b * b), h, w]), axes=[0, 3, 4, 1, 5, 2])
    else:
        y = op.transpose(op.reshape(x, shape=[n, c // (b * b), b, b, h, w]), axes=[0, 1, 4, 2, 5, 3])
    return op.reshape(y, shape=[n, c // (b * b), h * b, w * b])


@converter("SpaceToDepth")
def _space_to_depth(ctx, node, x):
    n, c, h, w = ctx.static_shape(node, x)
    b = int(node.attr("blocksize"))
    y = op.transpose(op.reshape(x, shape=[n, c, h // b, b, w // b, b]), axes=[0, 3, 5, 1, 2, 4])
    return op.reshape(y, shape=[n, c * b * b, h // b, w // b])


@converter("ReverseSequence")
def _reverse_sequence(ctx, node, x, lengths):
    shape = ctx.static_shape(node, x)
    batch, time = int(node.attr("batch_axis", 1)), int(node.attr("time_axis", 0))
    rank = len(shape)
    steps = np.arange(shape[time], dtype=np.int64).reshape([-1 if k == time else 1 for k in range(rank)])
    length = op.reshape(op.cast(ctx.expr(lengths), dtype="int64"),
                        shape=[-1 if k == batch else 1 for k in range(rank)])
    t = ctx.expr(steps)
    source = op.where(op.less(t, length), op.subtract(op.subtract(length, ctx.expr(np.asarray(1, np.int64))), t), t)
    return op.gather_elements(ctx.expr(x), op.broadcast_to(source, shape=shape), axis=time)


@converter("CumSum")
def _cumsum(ctx, node, x, axis):
    return op.cumsum(ctx.expr(x), axis=int(_item(node, axis, "axis")), exclusive=bool(node.attr("exclusive", 0)),
                     reverse=bool(node.attr("reverse", 0)))


@converter("TopK")
def _topk(ctx, node, x, k=None):
    axis, largest = int(node.attr("axis", -1)), bool(node.attr("largest", 1))
    if node.opset < 10:
        k = int(node.attr("k"))
    elif isinstance(k, np.ndarray) and not _is_symbolic(k):
        k = int(k.reshape(-1)[0])
    else:  # computed at run time (k = min(K, count) of a detector): a size the data decides
        shape, dtype = ctx.type(x)
        return _outputs(common.topk(ctx.expr(x), ctx.expr(k), shape, dtype, _axis(axis, len(shape)), largest,
                                    node.proto.output[0]), 2)
    return _outputs(op.topk(ctx.expr(x), k=k, axis=axis, largest=largest), 2)


# ---------------------------------------------- shapes the data decides

def _fold_unique(node, x):
    axis = node.attr("axis")
    values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                               axis=None if axis is None else _axis(axis, x.ndim))
    if not node.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.argsort(order)
        values = np.take(values, order, axis=0 if axis is None else _axis(axis, x.ndim))
        first, counts, inverse = first[order], counts[order], rank[inverse.reshape(-1)]
    return values, first.astype(np.int64), inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


@converter("NonZero", opsets=(9, 17), fold=lambda node, x: np.array(np.nonzero(np.atleast_1d(x)), dtype=np.int64))
def _nonzero(ctx, node, x):
    return common.nonzero(ctx.expr(x), len(ctx.shape(x)), node.proto.output[0], ctx)


@converter("Compress", opsets=(9, 17))
def _compress(ctx, node, x, condition):
    axis = node.attr("axis")
    x = ctx.expr(x)
    if axis is None:
        x, axis = op.reshape(x, shape=[-1]), 0
    axis = _axis(int(axis), len(ctx.shape(x)))
    if isinstance(condition, np.ndarray):  # known: the indices are too
        indices = graph.Constant(np.nonzero(condition.reshape(-1))[0].astype(np.int64))
    else:
        indices = op.reshape(common.nonzero(ctx.expr(condition), 1, node.proto.output[0], ctx), shape=[-1])
    return op.take(x, indices, axis=axis)


@converter("Unique", opsets=(11, 17), fold=_fold_unique)
def _unique(ctx, node, x):
    shape = ctx.shape(x)
    axis = node.attr("axis")
    axis = None if axis is None else _axis(int(axis), len(shape))
    call = common.unique(ctx.expr(x), shape, ctx.dtype(x), axis, node.attr("sorted", 1), node.proto.output[0])
    return _outputs(call, 4)


@converter("NonMaxSuppression", opsets=(10, 17))
def _non_max_suppression(ctx, node, boxes, scores, max_per_class=None, iou_threshold=None, score_threshold=None):
    def value(v):  # a one-element tensor, known or not; an empty one is none
        if v is None or (isinstance(v, np.ndarray) and v.size == 0):
            return None
        return v if isinstance(v, np.ndarray) else ctx.expr(v)
    return common.non_max_suppression(
        ctx.expr(boxes, "float32"), ctx.expr(scores, "float32"), value(max_per_class), value(iou_threshold),
        value(score_threshold), node.attr("center_point_box", 0), node.proto.output[0])


@converter("RoiAlign", opsets=(10, 17))
def _roi_align(ctx, node, x, rois, batch_indices):
    mode = node.attr("mode", "avg")
    if mode not in ("avg", "max"):
        node.unsupported(f"mode '{mode}'")
    # Opset 10 has no coordinate_transformation_mode: it samples as "output_half_pixel" does.
    half = node.attr("coordinate_transformation_mode", "half_pixel" if node.opset >= 16 else "output_half_pixel")
    if half not in ("half_pixel", "output_half_pixel"):
        node.unsupported(f"coordinate_transformation_mode '{half}'")
    return common.roi_align(ctx.expr(x, "float32"),
                            ctx.expr(rois, "float32"), ctx.expr(batch_indices, "int64"), ctx.shape(x),
                            ctx.shape(rois), int(node.attr("output_height", 1)), int(node.attr("output_width", 1)),
                            int(node.attr("sampling_ratio", 0)), float(node.attr("spatial_scale", 1.0)),
                            half == "half_pixel", mode == "max")


# -------------------------------------------------------------- resize

def _scaled(node, d, s):
    """floor(d * s): a dimension (an int, or symbolic when s is a whole
    number) resized by the scale s."""
    if isinstance(d, int):
        return int(np.floor(d * s))
    if float(s).is_integer():
        return _dim(d * int(s))
    node.unsupported(f"a scale of {s} on the symbolic dimension {d} (give sizes)")


def _resize(ctx, node, x, scales, sizes, roi, transform, nearest_mode):
    x = ctx.expr(x)
    shape = list(ctx.shape(x))
    mode = node.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        node.unsupported(f"mode={mode!r}")
    if node.attr("antialias", 0):
        node.unsupported("antialias=1")
    if sizes is not None and (not isinstance(sizes, np.ndarray) or sizes.size):
        # known, or computed when the model runs (a mask resized to its box)
        out = [_dim(d) for d in np.asarray(_sizes(ctx, node, sizes, "sizes"), dtype=object).reshape(-1)]
        given_scales = []
    else:
        given_scales = [float(s) for s in np.asarray(scales).reshape(-1)]
        if len(given_scales) != len(shape):
            node.unsupported(f"{len(given_scales)} scales for a rank-{len(shape)} input")
        out = [_scaled(node, d, s) for d, s in zip(shape, given_scales)]
    roi = [] if roi is None or np.asarray(roi).size == 0 else [float(v) for v in np.asarray(roi).reshape(-1)]
    if all(isinstance(d, int) for d in out + shape) and out == shape and \
            all(s == 1.0 for s in given_scales or [1.0]) and transform != "tf_crop_and_resize":
        return x
    return ctx.bind(op.resize(x, sizes=out, scales=given_scales, roi=roi, mode=mode,
                              coordinate_transformation_mode=transform, nearest_mode=nearest_mode,
                              cubic_coeff_a=float(node.attr("cubic_coeff_a", -0.75)),
                              exclude_outside=bool(node.attr("exclude_outside", 0)),
                              extrapolation_value=float(node.attr("extrapolation_value", 0.0))), out)


@converter("Resize", opsets=(10, 17))
def _resize_op(ctx, node, x, *rest):
    if node.opset == 10:  # Resize-10: (X, scales), asymmetric coordinates
        return _resize(ctx, node, x, _known(node, rest[0], "scales"), None, None, "asymmetric", "floor")
    roi, scales, sizes = (list(rest) + [None, None, None])[:3]
    transform = node.attr("coordinate_transformation_mode", "half_pixel")
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch" or node.attr("axes") is not None:
        node.unsupported("axes or keep_aspect_ratio_policy")
    return _resize(ctx, node, x, _known(node, scales, "scales"), sizes,
                   _known(node, roi, "roi"), transform, node.attr("nearest_mode", "round_prefer_floor"))


@converter("Upsample", opsets=(7, 9))
def _upsample(ctx, node, x, scales=None):
    scales = node.attr("scales") if node.opset < 9 else _known(node, scales, "scales")
    return _resize(ctx, node, x, scales, None, None, "asymmetric", "floor")


@converter("GridSample", opsets=(16, 17))
def _grid_sample(ctx, node, x, grid):
    # GridSample-16 (2-D): the modes and padding modes of PyTorch's
    # grid_sample, under the same names.
    mode, padding = node.attr("mode", "bilinear"), node.attr("padding_mode", "zeros")
    if mode not in ("bilinear", "nearest", "bicubic") or padding not in ("zeros", "border", "reflection"):
        node.unsupported(f"mode {mode!r} with padding_mode {padding!r}")
    return op.grid_sample(x, ctx.expr(grid), mode=mode, padding_mode=padding,
                          align_corners=bool(node.attr("align_corners", 0)))


# ----------------------------------------------------------- constants

def _constant_value(node):
    import onnx.numpy_helper
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in node.attrs:
            v = node.attrs[key]
            if key == "value":
                return onnx.numpy_helper.to_array(v)
            return np.asarray(v, dtype=np.float32 if "float" in key else np.int64)
    node.unsupported("a Constant without a numeric value")


@converter("Constant", fold=lambda node: _constant_value(node))
def _constant(ctx, node):
    return _constant_value(node)


def _constant_of_shape(node, shape):
    import onnx.numpy_helper
    value = node.attrs.get("value")
    fill = onnx.numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return np.full(_ints(shape), fill[0], dtype=fill.dtype)


@converter("ConstantOfShape", fold=_constant_of_shape)
def _constant_of_shape_convert(ctx, node, shape):
    shape = _sizes(ctx, node, shape, "shape")
    if not _is_symbolic(shape):
        return _constant_of_shape(node, shape)
    fill = _constant_of_shape(node, np.zeros(0, np.int64)).reshape(())  # the value, 0-d
    return ctx.bind(op.broadcast_to(ctx.expr(fill), shape=_shape_entries(shape)), shape)


def _range(node, start, limit, delta):
    return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)


@converter("Range", fold=_range)
def _range_convert(ctx, node, start, limit, delta):
    delta = _known(node, delta, "delta")
    start, limit = _known(node, start, "start", symbolic=True), _known(node, limit, "limit", symbolic=True)
    if not _is_symbolic(limit) and not _is_symbolic(start):
        return _range(node, start, limit, delta)
    if _is_symbolic(start):
        # From a symbolic start (positions after a cache: %past to %past +
        # %seq): 0, delta, ... over ceil((limit - start) / delta), plus the
        # start, read from the inputs' shapes at run time.
        delta_v = np.asarray(delta).item()
        if not float(delta_v).is_integer() or delta_v <= 0:
            node.unsupported(f"a symbolic start with delta {delta_v} (an integer delta > 0 is)")
        delta_v = int(delta_v)
        span = _dim(_shape_entries(limit)[0] - _shape_entries(start)[0])
        extent = span if delta_v == 1 else _dim(tir.max(tir.floordiv(span + (delta_v - 1), delta_v), 0))
        dtype = str(ctx.dtype(ctx.expr(start)))
        steps = op.arange(extent=extent, start=0.0, step=float(delta_v), dtype=dtype)
        return op.add(steps, ctx.expr(start))
    # Up to a symbolic limit (positions 0 .. %seq - 1): Loom's arange by its
    # length, ceil((limit - start) / delta), which a positive integer step
    # keeps a dimension.
    start_v, delta_v = np.asarray(start).item(), np.asarray(delta).item()
    if not float(start_v).is_integer() or not float(delta_v).is_integer() or delta_v <= 0:
        node.unsupported(f"a symbolic limit with start {start_v} and delta {delta_v} (integers, delta > 0, are)")
    start_v, delta_v = int(start_v), int(delta_v)
    span = _shape_entries(limit)[0] - start_v
    extent = tir.max(tir.floordiv(span + (delta_v - 1), delta_v), 0) if delta_v > 1 or start_v else span
    return op.arange(extent=_dim(extent), start=float(start_v), step=float(delta_v),
                     dtype=str(np.asarray(start).dtype))


def _window_fn(coefficients):
    """HannWindow, HammingWindow, BlackmanWindow: a cosine sum over
    `size` points, periodic (the default) or symmetric."""
    def fold(node, size):
        n = int(np.asarray(size).reshape(-1)[0])
        periodic = node.attr("periodic", 1)
        denominator = n if periodic else n - 1
        k = np.arange(n, dtype=np.float64)
        out = np.zeros(n)
        for m, a in enumerate(coefficients):
            out += a * np.cos(2 * np.pi * m * k / denominator) * (-1) ** m
        return out.astype(_dtype(node.attr("output_datatype", 1), f"{node.op_type} '{node.name}'"))

    def convert(ctx, node, size):
        return fold(node, _known(node, size, "size"))
    return fold, convert


for _name, _coefficients in (("HannWindow", (0.5, 0.5)), ("HammingWindow", (25 / 46, 21 / 46)),
                             ("BlackmanWindow", (0.42, 0.5, 0.08))):
    _fold, _convert = _window_fn(_coefficients)
    converter(_name, opsets=(17, 17), fold=_fold)(_convert)

