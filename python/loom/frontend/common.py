"""What the importers share beyond the registry (loom.frontend): the
context a converter gets (values as expressions, their shapes and
dtypes), symbolic shapes as text, and importing a PyTorch module in eval
mode.  The ONNX (loom.frontend.onnx), torch.fx (loom.frontend.fx) and
TorchScript (loom.frontend.torchscript) importers use it; none of them
imports another."""
import contextlib
import warnings

import numpy as np

from .. import _core
from .. import graph, ir, op


def is_symbolic(value):
    """Whether `value` is a shape with symbolic entries (an object array
    of ints and tir expressions)."""
    return isinstance(value, np.ndarray) and value.dtype == object


def shape_text(value):
    return "[" + ", ".join(str(d) for d in np.asarray(value).reshape(-1)) + "]"


class Context:
    """What converters use besides the node: values as expressions, and the
    shape and dtype of any value."""

    def __init__(self):
        self._constants = {}  # id(array) -> (array, Constant): a weight used twice is one constant
        self._symbols = {}  # symbolic dimension (a tir.Var) -> (a value whose shape has it, its axis)
        self.functions = {}  # name -> graph function a converter adds to the module (a loop's body)
        self.nonzero_calls = {}  # a mask -> its runtime.nonzero call (nonzero: one count per mask)
        self.made_by = {}  # a run-time value -> (node, fold, args) of the shape arithmetic that made it
        self._data_dims = {}  # a value -> (its entries as variables, the runtime.dims call binding them)
        self._binders = {}  # such a variable -> that call
        self._module_of = ((), None)  # (names, module): _function_module

    def symbols_now(self):
        """The table of where sizes are read (for symbols())."""
        return self._symbols

    @contextlib.contextmanager
    def symbols(self, table):
        """Reads sizes from `table` (a dict, filled by symbol_sources) for the
        duration: a function of its own (a loop's body) reads them from its
        parameters, not from its caller's values."""
        saved, self._symbols = self._symbols, table
        try:
            yield
        finally:
            self._symbols = saved

    def symbol_sources(self, value):
        """Records where `value`'s symbolic dimensions can be read at run
        time (an input's shape), so that a shape computed from them can
        become a tensor (expr)."""
        for axis, d in enumerate(self.shape(value)):
            if not isinstance(d, int) and d.type_key == "tir.Var":
                self._symbols.setdefault(d, (value, axis))

    def data_dims(self, value, hint):
        """The entries of `value`, an int tensor of at most one axis of
        static length computed when the model runs, as dimensions: fresh
        variables (an array shaped as value) that a runtime.dims call binds
        to its entries (a size cannot be negative: the call says so).  None
        for any other value.  One set of variables per value."""
        if value not in self._data_dims:
            shape, dtype = self.type(value)
            if not dtype.startswith(("int", "uint")) or len(shape) > 1 or \
                    not all(isinstance(d, int) for d in shape):
                return None
            count = int(np.prod(shape))
            dims = [data_dim(f"{hint}_{k}" if count > 1 else hint) for k in range(count)]
            call = graph.call_packed("runtime.dims", [self.expr(value, "int64")],
                                     ir.TensorType(dims + [0], "uint8"))
            self.symbol_sources(call)  # a shape computed from them can become a tensor again
            for d in dims:
                self._binders[d] = call
            entries = np.empty(count, dtype=object)
            entries[:] = dims
            self._data_dims[value] = entries.reshape(shape)
        return self._data_dims[value]

    def bind(self, result, entries):
        """`result`, computed after the runtime.dims calls that bind the
        variables of `entries` (shape entries from data_dims): each as a
        let around it, so that the VM binds them before it allocates."""
        calls = []
        for e in np.asarray(entries, dtype=object).reshape(-1):
            if isinstance(e, (int, np.integer)):
                continue
            for v in dim_variables(e):
                call = self._binders.get(v)
                if call is not None and not any(call.same_as(c) for c in calls):
                    calls.append(call)
        for call in calls:
            result = graph.Let(graph.Var("dims"), call, result)
        return result

    def _dim_tensor(self, d):
        """One shape entry (an int or a tir expression) as a 0-d int64
        tensor: a dimension read from the shape of the value that has it."""
        if isinstance(d, (int, np.integer)) or d.type_key == "tir.IntImm":
            return graph.Constant(np.int64(int(d) if isinstance(d, (int, np.integer)) else d.value))
        if d.type_key == "tir.Var":
            if d not in self._symbols:
                raise _core.TypeError(f"the dimension {d} is read from no input's shape")
            source, axis = self._symbols[d]
            return op.reshape(op.slice(op.shape_of(source), begin=[axis], end=[axis + 1]), shape=[])
        binary = {"tir.Add": op.add, "tir.Sub": op.subtract, "tir.Mul": op.multiply, "tir.FloorDiv": op.floor_divide,
                  "tir.FloorMod": op.floor_mod, "tir.Min": op.minimum, "tir.Max": op.maximum}
        if d.type_key in binary:
            return binary[d.type_key](self._dim_tensor(d.a), self._dim_tensor(d.b))
        raise _core.TypeError(f"the shape entry {d} ({d.type_key}) cannot be computed as a tensor")

    def shape_tensor(self, value):
        """A symbolic shape (an object array) as an int64 tensor computed at
        run time from the inputs' shapes."""
        parts = [self._dim_tensor(d) for d in value.reshape(-1)]
        if value.ndim == 0:
            return parts[0]
        flat = op.concat(*[op.expand_dims(p_, axis=0) for p_ in parts], axis=0) if parts else \
            graph.Constant(np.zeros(0, np.int64))
        return flat if value.ndim == 1 else op.reshape(flat, shape=list(value.shape))

    def expr(self, value, dtype=None):
        """A value as a graph expression: known arrays become constants."""
        if not isinstance(value, np.ndarray):
            if dtype is not None and value is not None and not isinstance(value, (tuple, list)) \
                    and self.dtype(value) != str(dtype):
                return op.cast(value, dtype=str(dtype))
            return value
        if is_symbolic(value):
            try:
                out = self.shape_tensor(value)
            except _core.TypeError as e:
                raise _core.TypeError(f"the shape {shape_text(value)} has a symbolic dimension and is used as a "
                                      f"tensor: {e} (docs/frontends.md, \"Dynamic shapes\")") from None
            return out if dtype is None or str(dtype) == "int64" else op.cast(out, dtype=str(dtype))
        if dtype is not None and str(value.dtype) != str(dtype):
            value = value.astype(dtype)
        cached = self._constants.get(id(value))
        if cached is None:
            # (np.ascontiguousarray would make a 0-d array 1-d)
            cached = self._constants[id(value)] = (value, graph.Constant(np.require(value, requirements="C")))
        return cached[1]

    def const(self, value, like):
        """A scalar or array as a constant of `like`'s dtype."""
        return self.expr(np.asarray(value, dtype=self.dtype(like)))

    def type(self, value):
        """(shape, dtype): dimensions are ints, or tir variables when symbolic."""
        if isinstance(value, np.ndarray):
            return tuple(value.shape), str(value.dtype)
        # cached on the nodes: only new nodes are typed; calls of the functions converters added need them
        t = ir.infer_type(value, self._function_module())
        dims = tuple(int(d.value) if d.type_key == "tir.IntImm" else d for d in t.shape)
        return dims, str(t.dtype)

    def _function_module(self):
        """The functions converters added, as a module (None when none):
        made again only when one is added, not for every value typed."""
        if not self.functions:
            return None
        names = tuple(self.functions)
        if self._module_of[0] != names:
            self._module_of = (names, ir.IRModule(self.functions))
        return self._module_of[1]

    def shape(self, value):
        return self.type(value)[0]

    def static_shape(self, node, value, what="the input"):
        """The shape as Python ints; a TypeError naming the node when a
        dimension is symbolic."""
        shape = self.shape(value)
        if not all(isinstance(d, int) for d in shape):
            node.unsupported(f"{what} of symbolic shape {shape_text(shape)}")
        return list(shape)

    def dtype(self, value):
        return self.type(value)[1]

    def rank(self, value):
        return len(self.shape(value))


def without_none(outputs, importer):
    """A module's flattened outputs without its None ones (wav2vec 2.0's
    (features, lengths) without lengths): dropped, as torch.onnx.export
    drops them, with a warning naming their positions."""
    dropped = [k for k, o in enumerate(outputs) if o is None]
    if not dropped or len(dropped) == len(outputs):
        return outputs
    warnings.warn(f"{importer}: the module's outputs {dropped} are None; the function returns the others",
                  stacklevel=4)
    return [o for o in outputs if o is not None]


@contextlib.contextmanager
def evaluating(module, switch, importer):
    """Runs the import with `module` in eval mode when `switch`, restoring
    its own mode after; a module in training mode otherwise gets a warning
    (dropout refuses, batch norm normalises with the batch's statistics,
    as PyTorch's forward does there)."""
    import torch
    if not isinstance(module, torch.nn.Module) or not module.training:
        yield
        return
    if not switch:
        warnings.warn(f"{importer}: the module is in training mode and is imported as it computes there (dropout is "
                      "refused, batch norm uses the batch's statistics); call module.eval() first, or pass "
                      "eval=True to import it in eval mode", stacklevel=4)
        yield
        return
    states = {m: m.training for m in module.modules()}
    module.eval()
    try:
        yield
    finally:
        for m, training in states.items():
            m.training = training


# ------------------------------------------------ 3-D windows as 2-D ones

def _static(dims, what):
    if not all(isinstance(d, int) for d in dims):
        raise _core.TypeError(f"{what} of symbolic shape {shape_text(dims)}: a 3-D window needs its channels, depth, "
                              "height and width static")
    return dims


def conv3d(ctx, x, w, strides, pads, dilations, groups, out_dtype=""):
    """A 3-D convolution, x N C D H W and w O C/groups KD KH KW (pads ONNX's
    order: the three begins, then the three ends), as one conv2d over
    every output depth's window of input planes (docs/frontends.md, "3-D
    convolutions"): the KD planes a window reads (after padding the
    depth, at its stride and dilation) are stacked as channels, C * KD of
    them with the depth tap innermost, so that the weights reshaped to O
    (C/groups * KD) KH KW are the same numbers, each group's channels
    still adjacent; the output depths become the batch.  The stack is KD
    times the input; in exchange the work is one conv2d, with the
    channels of a 2-D one, that every 2-D pass and schedule takes."""
    n = ctx.shape(x)[0]
    c, d, h, wd = _static(list(ctx.shape(x)[1:]), "a 3-D convolution's input")
    o, cg, kd, kh, kw = _static(list(ctx.shape(w)), "a 3-D convolution's weights")
    batch = n if isinstance(n, int) else -1
    if pads[0] or pads[3]:
        x = op.pad(x, pad_width=[0, 0, 0, 0, pads[0], pads[3], 0, 0, 0, 0])
        d += pads[0] + pads[3]
    span = dilations[0] * (kd - 1) + 1
    if d < span:
        raise _core.TypeError(f"a 3-D convolution's depth window ({span} deep) does not fit the padded input ({d})")
    depth = (d - span) // strides[0] + 1
    if kd == 1 and strides[0] == 1:
        planes = op.transpose(x, axes=[0, 2, 1, 3, 4])  # N D C H W
    else:
        taps = [op.expand_dims(op.slice(x, begin=[t * dilations[0]], end=[t * dilations[0] + strides[0] * (depth - 1) + 1],
                                        strides=[strides[0]], axes=[2]), axis=2) for t in range(kd)]
        stacked = taps[0] if kd == 1 else op.concat(*taps, axis=2)  # N C KD D' H W
        planes = op.transpose(stacked, axes=[0, 3, 1, 2, 4, 5])     # N D' C KD H W
    planes = op.reshape(planes, shape=[-1 if batch == -1 else batch * depth, c * kd, h, wd])
    w2 = [o, cg * kd, kh, kw]
    w = w.reshape(w2) if isinstance(w, np.ndarray) else op.reshape(w, shape=w2)
    y = op.conv2d(planes, ctx.expr(w), strides=list(strides[1:]), padding=[pads[1], pads[2], pads[4], pads[5]],
                  dilation=list(dilations[1:]), groups=int(groups), out_dtype=out_dtype)
    oh, ow = ctx.shape(y)[2:]
    return op.transpose(op.reshape(y, shape=[batch, depth, o, oh, ow]), axes=[0, 2, 1, 3, 4])


def conv_transpose3d(ctx, x, w, strides, pads, output_padding, dilations, groups):
    """A 3-D transposed convolution, x N C D H W and w C O/groups KD KH KW
    (pads ONNX's order), as one conv2d_transpose over (H, W): along the
    depth a transposed convolution is the input with stride - 1 zeros
    between planes, padded by dilation * (KD - 1) - pad (plus the output
    padding at the end), correlated with the depth taps reversed; those
    taps are stacked as channels as in conv3d, each output depth's window
    of planes one batch entry (docs/frontends.md, "3-D convolutions")."""
    n = ctx.shape(x)[0]
    c, d, h, wd = _static(list(ctx.shape(x)[1:]), "a 3-D transposed convolution's input")
    ci, og, kd, kh, kw = _static(list(ctx.shape(w)), "a 3-D transposed convolution's weights")
    batch = n if isinstance(n, int) else -1
    sd, dd = strides[0], dilations[0]
    if sd > 1:  # stride - 1 zero planes after each plane, the last one's dropped
        x = op.pad(op.expand_dims(x, axis=3), pad_width=[0, 0, 0, 0, 0, 0, 0, sd - 1, 0, 0, 0, 0])
        x = op.slice(op.reshape(x, shape=[batch, c, d * sd, h, wd]), begin=[0], end=[(d - 1) * sd + 1], axes=[2])
        d = (d - 1) * sd + 1
    front, back = dd * (kd - 1) - pads[0], dd * (kd - 1) - pads[3] + output_padding[0]
    if front < 0 or back < 0:  # padding past the taps' reach: planes cropped
        x = op.slice(x, begin=[max(-front, 0)], end=[d - max(-back, 0)], axes=[2])
        d -= max(-front, 0) + max(-back, 0)
    if front > 0 or back > 0:
        x = op.pad(x, pad_width=[0, 0, 0, 0, max(front, 0), max(back, 0), 0, 0, 0, 0])
        d += max(front, 0) + max(back, 0)
    depth = d - dd * (kd - 1)
    if depth < 1:
        raise _core.TypeError(f"a 3-D transposed convolution gives a depth of {depth}")
    taps = [op.expand_dims(op.slice(x, begin=[t * dd], end=[t * dd + depth], axes=[2]), axis=2) for t in range(kd)]
    stacked = taps[0] if kd == 1 else op.concat(*taps, axis=2)   # N C KD D' H W
    planes = op.reshape(op.transpose(stacked, axes=[0, 3, 1, 2, 4, 5]),
                        shape=[-1 if batch == -1 else batch * depth, c * kd, h, wd])
    # Channel (c, t) reads tap KD - 1 - t of c's weights.
    if isinstance(w, np.ndarray):
        w2 = ctx.expr(np.ascontiguousarray(w[:, :, ::-1].transpose(0, 2, 1, 3, 4)).reshape(ci * kd, og, kh, kw))
    else:
        reversed_taps = [op.slice(w, begin=[t], end=[t + 1], axes=[2]) for t in reversed(range(kd))]
        flipped = reversed_taps[0] if kd == 1 else op.concat(*reversed_taps, axis=2)
        w2 = op.reshape(op.transpose(flipped, axes=[0, 2, 1, 3, 4]), shape=[ci * kd, og, kh, kw])
    y = op.conv2d_transpose(planes, w2, strides=list(strides[1:]), padding=[pads[1], pads[2], pads[4], pads[5]],
                            dilation=list(dilations[1:]), output_padding=list(output_padding[1:]), groups=int(groups))
    o, oh, ow = ctx.shape(y)[1:]
    return op.transpose(op.reshape(y, shape=[batch, depth, o, oh, ow]), axes=[0, 2, 1, 3, 4])


def window_tap(x, i, j, strides, dilations, windows):
    """Entry (i, j) of every window of a padded N C H W input, the windows
    `windows` (rows, columns) at `strides` with taps `dilations` apart:
    one strided slice, N C rows columns."""
    begin = [i * dilations[0], j * dilations[1]]
    end = [begin[0] + strides[0] * (windows[0] - 1) + 1, begin[1] + strides[1] * (windows[1] - 1) + 1]
    return op.slice(x, begin=begin, end=end, strides=list(strides), axes=[2, 3])


def max_pool2d_indices(ctx, x, values, kernel, strides, pads, dilations, column_major=False):
    """Where each window of a 2-D max pool found its maximum (x N C H W,
    pads top, left, bottom, right; `values` the pool's result, whose
    shape says how many windows): the position h * W + w in its plane,
    int64, the first maximum in the window's row-major order, as PyTorch's
    max_pool2d_with_indices gives (the last NaN, where there is one;
    column_major: w * H + h, ONNX's storage_order 1).  One strided
    slice of the input padded with -inf per tap, kept where it beats the
    taps before it."""
    c, h, w = _static(list(ctx.shape(x)[1:]), "a max pool's input with indices")
    oh, ow = ctx.shape(values)[2:]
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    bottom = max((oh - 1) * sh + dh * (kh - 1) + 1 - h - pads[0], 0)
    right = max((ow - 1) * sw + dw * (kw - 1) + 1 - w - pads[1], 0)
    padded = op.pad(x, pad_width=[0, 0, 0, 0, pads[0], bottom, pads[1], right], pad_value=float("-inf"))
    rows, cols = np.arange(oh)[:, None] * sh - pads[0], np.arange(ow)[None, :] * sw - pads[1]
    best = where = None
    for i in range(kh):
        for j in range(kw):
            tap = window_tap(padded, i, j, strides, dilations, (oh, ow))
            r, q = rows + i * dh, cols + j * dw
            at = ctx.expr((q * h + r if column_major else r * w + q).astype(np.int64))
            if best is None:
                best, where = tap, op.broadcast_to(at, shape=list(ctx.shape(tap)))
                continue
            wins = op.logical_or(op.greater(tap, best), op.isnan(tap))
            best, where = op.where(wins, tap, best), op.where(wins, at, where)
    return where


def pool3d(ctx, loom_pool, x, kernel, strides, pads, dilations, ceil_mode, **extra):
    """A 3-D max or average pool (pads ONNX's order) as a 2-D pool over
    (H, W) then one over (D, 1): exact, since a window is the product of
    its axes' windows (and an average's divisor the product of theirs)."""
    n = ctx.shape(x)[0]
    c, d, h, w = _static(list(ctx.shape(x)[1:]), "a 3-D pool's input")
    batch = n if isinstance(n, int) else -1
    hw = loom_pool(op.reshape(x, shape=[batch, c * d, h, w]), pool_size=list(kernel[1:]), strides=list(strides[1:]),
                   padding=[pads[1], pads[2], pads[4], pads[5]], dilation=list(dilations[1:]), ceil_mode=ceil_mode,
                   **extra)
    h2, w2 = ctx.shape(hw)[2:]
    depth = loom_pool(op.reshape(hw, shape=[-1 if batch == -1 else batch * c, 1, d, h2 * w2]),
                      pool_size=[kernel[0], 1], strides=[strides[0], 1], padding=[pads[0], 0, pads[3], 0],
                      dilation=[dilations[0], 1], ceil_mode=ceil_mode, **extra)
    return op.reshape(depth, shape=[batch, c, ctx.shape(depth)[2], h2, w2])


# ------------------------------------------------- shapes the data decides
# Results whose shape depends on the data (docs/runtime.md, "Shapes the
# data decides"): call_packed of a runtime function whose result type has
# a variable no parameter binds, which the VM binds from what it returns.

def dim_variables(d):
    """The tir variables of a shape entry (a tir expression of integer
    arithmetic), in order, with repeats."""
    if d.type_key == "tir.Var":
        return [d]
    if d.type_key == "tir.IntImm":
        return []
    return dim_variables(d.a) + dim_variables(d.b)


def same_dim(a, b):
    """Whether two dimensions (ints or tir expressions) are the same for
    every value of their variables (two different variables are not:
    structural equality would match them as bindings)."""
    if isinstance(a, (int, np.integer)) or isinstance(b, (int, np.integer)):
        return isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and a == b
    from .. import tir
    difference = tir.simplify(tir.sub(a, b))
    return difference.type_key == "tir.IntImm" and difference.value == 0


def _shared_dim(dims):
    """The dimension that `dims`, which must be equal, are made: None when
    they already are, or when two are different constants (the
    operator's own error says so); else the first constant, or the first
    lone variable, or the first."""
    if all(same_dim(d, dims[0]) for d in dims) or len({d for d in dims if isinstance(d, int)}) > 1:
        return None
    ref = next((d for d in dims if isinstance(d, int)), None)
    return ref if ref is not None else next((d for d in dims if d.type_key == "tir.Var"), dims[0])


def _made_equal(ctx, values, shapes, columns):
    """values with the dimensions of each column (a list of (value index,
    axis) that must be equal) made its _shared_dim: a value whose shape
    changes is cast to it by runtime.bind_shape (the VM checks the new
    dimensions when the model runs)."""
    wanted = [list(s) for s in shapes]
    for column in columns:
        ref = _shared_dim([shapes[k][a] for k, a in column]) if column else None
        if ref is not None:
            for k, a in column:
                if not same_dim(wanted[k][a], ref):
                    wanted[k][a] = ref
    out = list(values)
    for k, v in enumerate(values):
        if any(w is not d for w, d in zip(wanted[k], shapes[k])):
            out[k] = graph.call_packed("runtime.bind_shape", [v], ir.TensorType(wanted[k], ctx.dtype(v)))
    return out


def agree(ctx, values, skip_axis):
    """`values` (expressions of one rank) whose dimensions must be equal on
    every axis but skip_axis (a concat's), as ONNX requires.  Where two
    differ and are not both constants (a size a loop keeps, and the same
    size computed another way: min(%h + %a - %b, 320) and 320), those
    that differ from the first constant (or lone variable) are cast to it
    by runtime.bind_shape, which the VM checks when the model runs: an
    error naming both sizes when they do differ, never a wrong result."""
    shapes = [list(ctx.shape(v)) for v in values]
    if any(len(s) != len(shapes[0]) for s in shapes):
        return values
    return _made_equal(ctx, values, shapes, [[(k, axis) for k in range(len(values))]
                                             for axis in range(len(shapes[0])) if axis != skip_axis])


def broadcastable(ctx, values):
    """`values` of an element-wise operator, as agree() makes them, for
    NumPy's broadcasting: on each axis (from the last) the dimensions that
    are not the constant 1 must be equal.  Two sizes that only the data
    decides (a loop's carried length and a slice's) are taken to be equal,
    and checked when the model runs; one of them being 1 there is that
    check's error, not a broadcast."""
    shapes = [list(ctx.shape(v)) for v in values]
    columns = [[(k, len(s) - back) for k, s in enumerate(shapes)
                if len(s) >= back and not (isinstance(s[-back], int) and s[-back] == 1)]
               for back in range(1, max(len(s) for s in shapes) + 1)]
    return _made_equal(ctx, values, shapes, columns)


def dft_matrix(samples, length, bins, components, inverse=False, window=None):
    """The (2 * bins, samples * components) matrix `dense` multiplies with,
    in float64: the transform of length `length` of a signal's first
    `samples` values (the rest are zeros, which add nothing).  Column
    n*components + s reads sample n's real (s=0) or imaginary (s=1) part;
    row 2k + r makes bin k's real (r=0) or imaginary (r=1) part.  Forward,
    X[k] = sum_n x[n] exp(-2 pi i k n / length); inverse, the exponent's
    sign is + and the sum is divided by `length`.  `window` (`samples`
    values) scales the samples first."""
    n = np.arange(samples, dtype=np.int64)[:, None]
    k = np.arange(bins, dtype=np.int64)[None, :]
    angle = 2 * np.pi * ((n * k) % length) / length  # k n reduced first: the angle stays in [0, 2 pi)
    cos, sin = np.cos(angle), np.sin(angle)
    sign = 1.0 if inverse else -1.0
    # (a + ib)(cos + i sign sin) = (a cos - sign b sin) + i (sign a sin + b cos)
    w = np.zeros((samples, components, bins, 2))
    w[:, 0, :, 0] = cos
    w[:, 0, :, 1] = sign * sin
    if components == 2:
        w[:, 1, :, 0] = -sign * sin
        w[:, 1, :, 1] = cos
    if window is not None:
        w *= np.asarray(window, dtype=np.float64).reshape(samples, 1, 1, 1)
    if inverse:
        w /= length
    return np.ascontiguousarray(w.reshape(samples * components, bins * 2).T)


def frames_of(ctx, x, axis, length, size, step):
    """x's frames of `size` samples every `step` along `axis` (of static
    `length`): one take, the axis becoming (frames, size)."""
    count = (length - size) // step + 1
    at = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    return op.take(x, ctx.expr(at), axis=axis)


def transformed(ctx, x, matrix, lead, bins):
    """x (lead..., samples[, components]) times a dft_matrix: (lead...,
    bins, 2), the transform's real and imaginary parts."""
    lead = list(lead)
    flat = op.reshape(x, shape=(lead or [1]) + [matrix.shape[1]])
    return op.reshape(op.dense(flat, ctx.expr(matrix)), shape=lead + [bins, 2])


def identifier(hint, empty, digit_prefix):
    """`hint` (a node or value name) as a name the IR takes: characters
    other than letters, digits and _ made _, `empty` when nothing is left,
    `digit_prefix` before a leading digit."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(hint)).strip("_") or empty
    return name if not name[0].isdigit() else digit_prefix + name


def data_dim(hint):
    """A fresh dimension only the data decides, named after `hint` (a node
    or value name; characters other than letters, digits and _ dropped)."""
    from .. import tir
    return tir.Var(identifier(hint, "count", "n"))


def _scalar(value, dtype):
    if isinstance(value, (int, float, np.ndarray, np.generic)):
        return graph.Constant(np.asarray(value, dtype=dtype).reshape(()))
    return value


def nonzero(x, rank, hint, ctx=None, key=None):
    """int64 (max(rank, 1), %count): the indices of x's nonzero elements,
    row-major (numpy.nonzero stacked).  With the importer's context, one
    call per x (or per `key`, the value x is computed from): two selections
    by one mask (boxes[keep], scores[keep]) have one count, so what joins
    them type-checks."""
    key = x if key is None else key
    memo = ctx.nonzero_calls if ctx is not None else {}
    if key not in memo:
        memo[key] = graph.call_packed("runtime.nonzero", [x], ir.TensorType([max(rank, 1), data_dim(hint)], "int64"))
    return memo[key]


_UNIQUE_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "bool")


def unique(x, shape, dtype, axis, sorted_, hint, consecutive=False):
    """(values, first indices, inverse indices, counts) as ONNX's Unique:
    x's distinct elements (axis None: flattened) or slices along axis;
    consecutive: its runs of equal neighbours instead (PyTorch's
    unique_consecutive)."""
    if dtype not in _UNIQUE_DTYPES:
        raise _core.TypeError(f"unique of a {dtype} tensor is not supported (it takes {', '.join(_UNIQUE_DTYPES)})")
    k = data_dim(hint)
    if axis is None:
        length = int(np.prod(shape)) if all(isinstance(d, int) for d in shape) else None
        if length is None:
            length = shape[0]
            for d in shape[1:]:
                length = length * d
        values = [k]
    else:
        length = shape[axis]
        values = list(shape)
        values[axis] = k
    out = ir.TupleType([ir.TensorType(values, dtype), ir.TensorType([k], "int64"), ir.TensorType([length], "int64"),
                        ir.TensorType([k], "int64")])
    order = 2 if consecutive else int(bool(sorted_))  # runtime.unique's order
    args = [x, _scalar(-1 if axis is None else axis, "int64"), _scalar(order, "int64")]
    return graph.call_packed("runtime.unique", args, out)


def non_max_suppression(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box, hint):
    """int64 (%count, 3) rows of (batch, class, box index), as ONNX's
    NonMaxSuppression; a missing score threshold is -inf (none)."""
    args = [boxes, scores, _scalar(0 if max_per_class is None else max_per_class, "int64"),
            _scalar(0.0 if iou_threshold is None else iou_threshold, "float32"),
            _scalar(-np.inf if score_threshold is None else score_threshold, "float32"),
            _scalar(int(center_point_box), "int64")]
    return graph.call_packed("runtime.non_max_suppression", args, ir.TensorType([data_dim(hint), 3], "int64"))


def topk(x, k, shape, dtype, axis, largest, hint):
    """(values, int64 indices) of x's k largest (smallest) elements along
    axis, sorted, for a k computed at run time (a 0-d or one-element int64
    tensor, at most the axis's length)."""
    if dtype not in _UNIQUE_DTYPES or dtype == "bool":
        raise _core.TypeError(f"top-k with k computed at run time of a {dtype} tensor is not supported (it takes "
                              f"{', '.join(d for d in _UNIQUE_DTYPES if d != 'bool')})")
    dims = list(shape)
    dims[axis] = data_dim(hint)
    out = ir.TupleType([ir.TensorType(dims, dtype), ir.TensorType(dims, "int64")])
    return graph.call_packed("runtime.topk", [x, k, _scalar(axis, "int64"), _scalar(int(largest), "int64")], out)


def determinant(x, shape, dtype):
    """The determinants of x's (..., n, n) matrices (ONNX's Det,
    torch.linalg.det): runtime.det, on the host."""
    if dtype not in ("float32", "float64"):
        raise _core.TypeError(f"the determinant of a {dtype} tensor is not supported (float32 or float64)")
    if len(shape) < 2 or not same_dim(shape[-1], shape[-2]):
        raise _core.TypeError(f"the determinant needs square matrices (..., n, n), got {shape_text(shape)}")
    return graph.call_packed("runtime.det", [x], ir.TensorType(list(shape[:-2]), dtype))


def roi_align(x, rois, batch_indices, x_shape, rois_shape, out_h, out_w, sampling_ratio, spatial_scale, half_pixel,
              max_mode):
    """float32 (R, C, out_h, out_w) as ONNX's RoiAlign (torchvision's
    roi_align, aligned = half_pixel): rois (R, 4) as (x1, y1, x2, y2) of
    the images batch_indices (R) name, in x's coordinates / spatial_scale."""
    out = ir.TensorType([rois_shape[0], x_shape[1], out_h, out_w], "float32")
    args = [x, rois, batch_indices, _scalar(out_h, "int64"), _scalar(out_w, "int64"),
            _scalar(sampling_ratio, "int64"), _scalar(spatial_scale, "float64"), _scalar(int(half_pixel), "int64"),
            _scalar(int(max_mode), "int64")]
    return graph.call_packed("runtime.roi_align", args, out)
