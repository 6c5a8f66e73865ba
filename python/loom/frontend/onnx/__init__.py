"""The ONNX importer (docs/frontends.md): `from_onnx(model_or_path)`.

Each ONNX operator has one small converter in the registry below,
registered with `@converter(op_type, opsets=(first, last))`.  A converter
gets the context, the node and the node's inputs as values: a NumPy array
when the importer knows the value (initializers, constants and anything
computed from them only: the shape arithmetic of exported models), a Loom
graph expression otherwise, None for an omitted optional input.  The shape
of a tensor with a symbolic dimension (a dynamic batch) is known too: a
NumPy array of dtype object whose entries are ints or tir expressions over
the dimension's variable ("symbolic shape"); the folds of the operators in
SYMBOLIC_FOLDS compute with it, and Reshape takes it as a target.  It
returns a value or a tuple of values.  `fold=` computes the node with NumPy
when all inputs are known.

    python3 -m loom.frontend.onnx --table   # the supported operators, as Markdown
"""
import numpy as np

from .. import _core
from .. import graph, ir, op, tir
from . import Registry, UnsupportedOperatorError, naming  # noqa: F401 (re-exported)

REGISTRY = Registry("ONNX")
OPSETS = (11, 17)  # the default domain's opsets the importer is tested with


def converter(op_type, opsets=(1, 17), fold=None, replace=False):
    """Registers the decorated function as the converter of `op_type` for
    the default domain's opsets `opsets` (inclusive)."""
    def register(fn):
        REGISTRY.register(op_type, fn, opsets, fold=fold, replace=replace)
        return fn
    return register


def supported_operators():
    """[(op type, first opset, last opset)] of every converter."""
    return REGISTRY.operators()


# ---------------------------------------------------------------- the model

_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
           11: "float64", 12: "uint32", 13: "uint64"}


def _dtype(onnx_type, what):
    try:
        return _DTYPES[onnx_type]
    except KeyError:
        import onnx
        name = onnx.TensorProto.DataType.Name(onnx_type) if onnx_type in onnx.TensorProto.DataType.values() else \
            str(onnx_type)
        raise _core.TypeError(f"{what} has ONNX element type {name}, which Loom has no kernels for") from None


class Node:
    """One ONNX node as a converter sees it."""

    def __init__(self, proto, opset):
        import onnx
        self.proto = proto
        self.op_type = proto.op_type
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.opset = opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}

    def attr(self, name, default=None):
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            value = value.decode()
        return value

    def unsupported(self, what):
        raise _core.TypeError(f"{self.op_type} '{self.name}': {what} is not supported (docs/frontends.md)")


class Context:
    """What converters use besides the node: values as expressions, and the
    shape and dtype of any value."""

    def __init__(self):
        self._constants = {}  # id(array) -> (array, Constant): a weight used twice is one constant

    def expr(self, value, dtype=None):
        """A value as a graph expression: known arrays become constants."""
        if not isinstance(value, np.ndarray):
            return value
        if _is_symbolic(value):
            raise _core.TypeError(f"the shape {_shape_text(value)} has a symbolic dimension and is used as a "
                                  "tensor, which is not supported (docs/frontends.md, \"Dynamic shapes\")")
        if dtype is not None and str(value.dtype) != str(dtype):
            value = value.astype(dtype)
        cached = self._constants.get(id(value))
        if cached is None:
            cached = self._constants[id(value)] = (value, graph.Constant(np.ascontiguousarray(value)))
        return cached[1]

    def type(self, value):
        """(shape, dtype): dimensions are ints, or tir variables when symbolic."""
        if isinstance(value, np.ndarray):
            return tuple(value.shape), str(value.dtype)
        t = ir.infer_type(value)  # cached on the nodes: only new nodes are typed
        dims = tuple(int(d.value) if d.type_key == "tir.IntImm" else d for d in t.shape)
        return dims, str(t.dtype)

    def shape(self, value):
        return self.type(value)[0]

    def dtype(self, value):
        return self.type(value)[1]

    def rank(self, value):
        return len(self.shape(value))


def _load(model_or_path):
    import onnx
    import onnx.numpy_helper
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    path = str(model_or_path)
    try:
        return onnx.load(path)
    except OSError as e:
        raise _core.LoomError(f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # protobuf's DecodeError and its kin
        raise _core.ParseError(f"{path}: not an ONNX model ({type(e).__name__}: {e})") from None


def _opset(model):
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return 1


def _check_supported(model, opset):
    nodes = []
    for n in model.graph.node:
        domain = n.domain if n.domain not in ("", "ai.onnx") else ""
        nodes.append(((domain, n.op_type) if domain else n.op_type, n.name or (n.output[0] if n.output else "")))
    REGISTRY.check(nodes, opset)


def _input_var(value_info, shapes, symbols):
    name = value_info.name
    tensor = value_info.type.tensor_type
    dtype = _dtype(tensor.elem_type, f"input '{name}'")
    given = (shapes or {}).get(name)
    if given is not None:
        dims = list(given)
    elif tensor.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
    else:
        raise _core.TypeError(f"input '{name}' has no shape in the model; give it with shapes={{'{name}': (...)}}")
    out = []
    for k, d in enumerate(dims):
        if isinstance(d, str):
            out.append(symbols.setdefault(d, tir.Var(d)))
        elif d is None or (isinstance(d, int) and d <= 0 and given is None):
            raise _core.TypeError(f"input '{name}': dimension {k} is unknown; give it with "
                                  f"shapes={{'{name}': (...)}}")
        else:
            out.append(int(d))
    return graph.Var(name, shape=tuple(out), dtype=dtype)


def from_onnx(model_or_path, shapes=None, *, params="constants"):
    """Imports an ONNX model (a ModelProto or a path) as an IRModule whose
    @main takes the model's inputs.  `shapes` fixes input shapes ({name:
    shape}; a str dimension is symbolic).  params="constants" (default)
    makes initializers constants; params="inputs" makes them parameters
    after the inputs and returns (module, {name: array})."""
    import onnx
    import onnx.numpy_helper
    if params not in ("constants", "inputs"):
        raise _core.TypeError(f"from_onnx: params must be 'constants' or 'inputs', got {params!r}")
    model = _load(model_or_path)
    opset = _opset(model)
    _check_supported(model, opset)  # one error for everything unsupported, before any work
    g = model.graph
    values, weights, params_out, symbols = {}, {}, [], {}
    for init in g.initializer:
        array = onnx.numpy_helper.to_array(init)
        _dtype(init.data_type, f"initializer '{init.name}'")
        weights[init.name] = array
    inputs = [_input_var(vi, shapes, symbols) for vi in g.input if vi.name not in weights]
    for name, array in weights.items():
        if params == "inputs":
            var = graph.Var(name, shape=array.shape, dtype=str(array.dtype))
            params_out.append(var)
            values[name] = var
        else:
            values[name] = array
    for var in inputs:
        values[var.name] = var
    ctx = Context()
    for proto in g.node:
        node = Node(proto, opset)
        args = [values[name] if name else None for name in proto.input]
        for name, a in zip(proto.input, args):
            if name and a is None:
                raise _core.LookupError(f"{node.op_type} '{node.name}': input '{name}' is not defined before it")
        convert, fold = REGISTRY.find(node.op_type, opset)
        with naming(f"{node.op_type} '{node.name}'"):
            known = fold is not None and all(a is None or isinstance(a, np.ndarray) for a in args)
            if known and any(_is_symbolic(a) for a in args) and node.op_type not in SYMBOLIC_FOLDS:
                known = False  # the converter decides (Reshape takes a symbolic target)
            out = fold(node, *args) if known else convert(ctx, node, *args)
            outs = out if isinstance(out, tuple) else (out,)
            # A fold's 0-d results come as scalars (np.int64, or an entry of
            # a symbolic shape): known values too.
            outs = tuple(_known_array(o) if known or isinstance(o, (np.generic, np.ndarray)) else o for o in outs)
            for o in outs:
                if not isinstance(o, np.ndarray) and o is not None:
                    ctx.type(o)  # types each new node now: errors name the node
        for name, o in zip(proto.output, outs):
            if name:
                values[name] = o
    results = [ctx.expr(values[o.name]) for o in g.output]
    body = results[0] if len(results) == 1 else graph.Tuple(results)
    module = ir.IRModule({"main": graph.Function(inputs + params_out, body)})
    if params == "inputs":
        return module, {name: weights[name] for name in weights}
    return module


# ------------------------------------------------------------ helpers

def _ints(value):
    return [int(v) for v in np.asarray(value).reshape(-1)]


def _known(node, value, what, symbolic=False):
    """`value`, which must be known (and, unless `symbolic`, free of
    symbolic dimensions)."""
    if value is not None and not isinstance(value, np.ndarray):
        node.unsupported(f"a {what} computed at run time")
    if value is not None and not symbolic and _is_symbolic(value):
        node.unsupported(f"a {what} with a symbolic dimension ({_shape_text(value)})")
    return value


# ------------------------------------------------------- symbolic shapes

# The operators whose fold computes with a symbolic shape as it does with
# integers: indexing, joining and integer arithmetic.  Any other operator
# given a symbolic shape goes to its converter, which refuses it unless it
# takes one (Reshape).
SYMBOLIC_FOLDS = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Identity", "Add", "Sub", "Mul", "Div",
                  "Cast"}


def _is_symbolic(value):
    return isinstance(value, np.ndarray) and value.dtype == object


def _dim(v):
    """One entry of a shape: an int, or a simplified tir expression."""
    if isinstance(v, (int, np.integer)):
        return int(v)
    v = tir.simplify(v)
    return int(v.value) if v.type_key == "tir.IntImm" else v


def _normalised(value):
    """A symbolic shape with every entry simplified, or an int64 array when
    no entry is symbolic any more."""
    if not _is_symbolic(value):
        return value
    dims = [_dim(v) for v in value.reshape(-1)]
    if all(isinstance(d, int) for d in dims):
        return np.asarray(dims, dtype=np.int64).reshape(value.shape)
    return _object_array(dims).reshape(value.shape)


def _object_array(items):
    """A 1-D array of dtype object holding `items` as they are (NumPy would
    try to broadcast tir expressions)."""
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _known_array(value):
    """A known value (a fold's result) as an array: a symbolic shape's entry
    becomes a 0-d symbolic shape."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return _normalised(value)
    if isinstance(value, (int, float, bool, np.generic)):
        return np.asarray(value)
    return _normalised(_object_array([value]).reshape(()))


def _shape_text(value):
    return "[" + ", ".join(str(d) for d in np.asarray(value).reshape(-1)) + "]"


def _axis(axis, rank):
    return axis + rank if axis < 0 else axis


def _window(ctx, node, x, kernel):
    """strides, padding (top, left, bottom, right) and dilations of a
    convolution or pooling node, auto_pad resolved on the static shape."""
    strides = list(node.attr("strides", [1, 1]))
    dilations = list(node.attr("dilations", [1, 1]))
    pads = list(node.attr("pads", [0, 0, 0, 0]))
    if len(kernel) != 2:
        node.unsupported(f"a {len(kernel)}-D window")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = ctx.shape(x)[2:]
        pads = [0, 0, 0, 0]
        for k in range(2):
            size = spatial[k]
            if not isinstance(size, int):
                node.unsupported("auto_pad with a symbolic spatial size")
            out = -(-size // strides[k])
            total = max((out - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - size, 0)
            small, big = total // 2, total - total // 2
            pads[k], pads[k + 2] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    elif auto_pad != "NOTSET":
        node.unsupported(f"auto_pad={auto_pad}")
    return strides, pads, dilations


# ---------------------------------------------------- elementwise operators

def _unary(op_type, loom_op, numpy_fn):
    converter(op_type, fold=lambda node, x: numpy_fn(x).astype(x.dtype))(
        lambda ctx, node, x: getattr(op, loom_op)(x))


def _erf(x):
    from math import erf
    return np.vectorize(erf)(x)


for _name, _loom, _fn in [("Relu", "relu", lambda x: np.maximum(x, 0)), ("Neg", "neg", np.negative),
                          ("Abs", "abs", np.abs), ("Exp", "exp", np.exp), ("Log", "log", np.log),
                          ("Sqrt", "sqrt", np.sqrt), ("Tanh", "tanh", np.tanh),
                          ("Sigmoid", "sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("Erf", "erf", _erf)]:
    _unary(_name, _loom, _fn)


def _binary(op_type, loom_op, numpy_fn):
    def convert(ctx, node, a, b):
        like = b if isinstance(a, np.ndarray) else a
        dtype = ctx.dtype(like)
        return getattr(op, loom_op)(ctx.expr(a, dtype), ctx.expr(b, dtype))
    converter(op_type, fold=lambda node, a, b: np.asarray(numpy_fn(a, b)).astype(np.result_type(a, b)))(convert)


for _name, _loom, _fn in [("Add", "add", np.add), ("Sub", "subtract", np.subtract),
                          ("Mul", "multiply", np.multiply), ("Max", "maximum", np.maximum),
                          ("Min", "minimum", np.minimum)]:
    _binary(_name, _loom, _fn)


def _divide(a, b):
    integer = _is_symbolic(a) or _is_symbolic(b) or np.issubdtype(np.result_type(a, b), np.integer)
    return np.floor_divide(a, b) if integer else np.divide(a, b)


_binary("Div", "divide", _divide)


@converter("Pow", fold=lambda node, a, b: np.power(a, b).astype(a.dtype))
def _pow(ctx, node, a, b):
    if isinstance(b, np.ndarray) and b.size == 1 and float(b.reshape(-1)[0]) == 2.0:
        return op.multiply(a, a)  # x ** 2: exact and cheaper
    return op.power(a, ctx.expr(b, ctx.dtype(a)))


@converter("Reciprocal", fold=lambda node, x: (1 / x).astype(x.dtype))
def _reciprocal(ctx, node, x):
    return op.divide(ctx.expr(np.ones((), dtype=ctx.dtype(x))), x)


def _compare(op_type, loom_op, numpy_fn):
    def convert(ctx, node, a, b):
        dtype = ctx.dtype(b if isinstance(a, np.ndarray) else a)
        return getattr(op, loom_op)(ctx.expr(a, dtype), ctx.expr(b, dtype))
    converter(op_type, fold=lambda node, a, b: numpy_fn(a, b))(convert)


for _name, _loom, _fn in [("Equal", "equal", np.equal), ("Less", "less", np.less),
                          ("Greater", "greater", np.greater)]:
    _compare(_name, _loom, _fn)


@converter("Where", fold=lambda node, c, x, y: np.where(c, x, y))
def _where(ctx, node, c, x, y):
    dtype = ctx.dtype(y if isinstance(x, np.ndarray) else x)
    return op.where(ctx.expr(c), ctx.expr(x, dtype), ctx.expr(y, dtype))


@converter("Clip")
def _clip(ctx, node, x, low=None, high=None):
    if node.opset < 11:
        low, high = node.attr("min"), node.attr("max")
    else:
        low = None if low is None else float(_known(node, low, "minimum").reshape(-1)[0])
        high = None if high is None else float(_known(node, high, "maximum").reshape(-1)[0])
    big = float(np.finfo(np.float32).max)
    return op.clip(x, a_min=-big if low is None else low, a_max=big if high is None else high)


def _cast_fold(node, x):
    dtype = _dtype(node.attr("to"), f"Cast '{node.name}'")
    if _is_symbolic(x):
        if not dtype.startswith(("int", "uint")):
            node.unsupported(f"casting the symbolic shape {_shape_text(x)} to {dtype}")
        return x
    return x.astype(dtype)


@converter("Cast", fold=_cast_fold)
def _cast(ctx, node, x):
    return op.cast(x, dtype=_dtype(node.attr("to"), f"Cast '{node.name}'"))


@converter("Identity", fold=lambda node, x: x)
def _identity(ctx, node, x):
    return x


def _constant_value(node):
    import onnx
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


# ------------------------------------------------------ linear algebra

@converter("MatMul", fold=lambda node, a, b: np.matmul(a, b))
def _matmul(ctx, node, a, b):
    if isinstance(b, np.ndarray) and b.ndim == 2 and ctx.rank(a) >= 2:
        return op.dense(a, ctx.expr(np.ascontiguousarray(b.T)))  # (..., K) x (N, K): a linear layer
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return op.matmul(ctx.expr(a), ctx.expr(b))
    return op.matmul(a, b)


@converter("Gemm")
def _gemm(ctx, node, a, b, c=None):
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    if node.attr("transA", 0):
        a = op.transpose(ctx.expr(a), axes=[1, 0])
    trans_b = bool(node.attr("transB", 0))
    if isinstance(b, np.ndarray):
        w = b if trans_b else b.T  # dense wants (N, K)
        w = np.ascontiguousarray(w * alpha if alpha != 1.0 else w).astype(b.dtype)
        y = op.dense(ctx.expr(a), ctx.expr(w))
    else:
        y = op.matmul(ctx.expr(a), b, transpose_b=trans_b)
        if alpha != 1.0:
            y = op.multiply(y, ctx.expr(np.asarray(alpha, dtype=ctx.dtype(b))))
    if c is not None:
        if isinstance(c, np.ndarray):
            c = ctx.expr((c * beta).astype(c.dtype) if beta != 1.0 else c)
        elif beta != 1.0:
            c = op.multiply(c, ctx.expr(np.asarray(beta, dtype=ctx.dtype(c))))
        y = op.add(y, c)
    return y


# ------------------------------------------------- convolution and pooling

@converter("Conv")
def _conv(ctx, node, x, w, bias=None):
    w_shape = ctx.shape(w)
    kernel = list(node.attr("kernel_shape", w_shape[2:]))
    strides, pads, dilations = _window(ctx, node, x, kernel)
    y = op.conv2d(ctx.expr(x), ctx.expr(w), strides=strides, padding=pads, dilation=dilations,
                  groups=int(node.attr("group", 1)))
    if bias is not None:
        bias = bias.reshape(-1, 1, 1) if isinstance(bias, np.ndarray) else op.reshape(bias, shape=[-1, 1, 1])
        y = op.add(y, ctx.expr(bias))
    return y


def _pool_attrs(ctx, node, x):
    kernel = list(node.attr("kernel_shape"))
    if node.attr("ceil_mode", 0):
        node.unsupported("ceil_mode=1")
    strides, pads, dilations = _window(ctx, node, x, kernel)
    if dilations != [1, 1]:
        node.unsupported(f"dilations={dilations}")
    return dict(pool_size=kernel, strides=strides, padding=pads)


@converter("MaxPool")
def _max_pool(ctx, node, x):
    if len(node.proto.output) > 1 and node.proto.output[1]:
        node.unsupported("the Indices output")
    return op.max_pool2d(x, **_pool_attrs(ctx, node, x))


@converter("AveragePool")
def _avg_pool(ctx, node, x):
    return op.avg_pool2d(x, count_include_pad=bool(node.attr("count_include_pad", 0)), **_pool_attrs(ctx, node, x))


@converter("GlobalAveragePool")
def _global_avg_pool(ctx, node, x):
    if ctx.rank(x) != 4:
        node.unsupported(f"a rank-{ctx.rank(x)} input")
    return op.global_avg_pool2d(x)


@converter("BatchNormalization")
def _batch_norm(ctx, node, x, scale, bias, mean, var):
    if node.attr("training_mode", 0):
        node.unsupported("training_mode=1")
    return op.batch_norm(x, ctx.expr(scale), ctx.expr(bias), ctx.expr(mean), ctx.expr(var),
                         epsilon=float(node.attr("epsilon", 1e-5)))


# ------------------------------------------------------- normalisation

@converter("Softmax")
def _softmax(ctx, node, x):
    rank = ctx.rank(x)
    if node.opset >= 13:
        return op.softmax(x, axis=int(node.attr("axis", -1)))
    axis = _axis(int(node.attr("axis", 1)), rank)
    if axis == rank - 1:
        return op.softmax(x, axis=-1)
    shape = ctx.shape(x)  # opsets before 13: softmax over the flattened trailing axes
    if not all(isinstance(d, int) for d in shape):
        node.unsupported("a symbolic shape with axis before the last")
    flat = op.reshape(x, shape=[int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    return op.reshape(op.softmax(flat, axis=-1), shape=list(shape))


@converter("LayerNormalization", opsets=(17, 17))
def _layer_norm(ctx, node, x, scale, bias=None):
    if _axis(int(node.attr("axis", -1)), ctx.rank(x)) != ctx.rank(x) - 1:
        node.unsupported("normalising over more than the last axis")
    if bias is None:
        bias = np.zeros(ctx.shape(scale), dtype=ctx.dtype(scale))
    return op.layer_norm(x, ctx.expr(scale), ctx.expr(bias), epsilon=float(node.attr("epsilon", 1e-5)))


def _reduce(op_type, loom_op, numpy_fn, opsets=(1, 17)):
    """A reduction whose axes are an attribute (every opset here but
    ReduceSum from 13, where they are an input)."""
    def axes_of(node, rank):
        axes = node.attr("axes")
        return list(range(rank)) if axes is None else [_axis(a, rank) for a in axes]

    def fold(node, x):
        return numpy_fn(x, axis=tuple(axes_of(node, x.ndim)), keepdims=bool(node.attr("keepdims", 1)))

    def convert(ctx, node, x):
        return getattr(op, loom_op)(x, axis=axes_of(node, ctx.rank(x)), keepdims=bool(node.attr("keepdims", 1)))
    converter(op_type, opsets=opsets, fold=fold)(convert)


for _name, _loom, _fn in [("ReduceMean", "mean", np.mean), ("ReduceMax", "max", np.max),
                          ("ReduceMin", "min", np.min)]:
    _reduce(_name, _loom, _fn)
_reduce("ReduceSum", "sum", np.sum, opsets=(1, 12))


def _sum_axes(node, axes, rank):
    return list(range(rank)) if axes is None else [_axis(a, rank) for a in _ints(axes)]


@converter("ReduceSum", opsets=(13, 17),
           fold=lambda node, x, axes=None: np.sum(x, axis=tuple(_sum_axes(node, axes, x.ndim)),
                                                  keepdims=bool(node.attr("keepdims", 1))))
def _reduce_sum(ctx, node, x, axes=None):
    axes = _sum_axes(node, _known(node, axes, "axes"), ctx.rank(x))
    return op.sum(x, axis=axes, keepdims=bool(node.attr("keepdims", 1)))


# ------------------------------------------------------------ shapes

@converter("Shape")
def _shape(ctx, node, x):
    shape = ctx.shape(x)
    start, end = node.attr("start", 0), node.attr("end", len(shape))
    return _normalised(_object_array(shape)[start:end])


def _reshape_target(node, shape, target):
    target = [_dim(t) for t in np.asarray(target).reshape(-1)]
    if not node.attr("allowzero", 0):
        target = [shape[k] if isinstance(t, int) and t == 0 else t for k, t in enumerate(target)]
    return target


@converter("Reshape", fold=lambda node, x, s: x.reshape(_reshape_target(node, x.shape, s)))
def _reshape(ctx, node, x, target):
    target = _reshape_target(node, ctx.shape(x), _known(node, target, "target shape", symbolic=True))
    symbolic = [k for k, t in enumerate(target) if not isinstance(t, int)]
    if symbolic:
        # Loom's reshape takes integers: the one symbolic entry becomes the
        # -1 that the element count determines (the same value).
        if len(symbolic) > 1 or any(isinstance(t, int) and t == -1 for t in target):
            node.unsupported(f"a reshape to {_shape_text(target)}, with more than one dimension not known "
                             "until run time")
        target[symbolic[0]] = -1
    return op.reshape(x, shape=target)


@converter("Flatten", fold=lambda node, x: x.reshape(int(np.prod(x.shape[:_axis(node.attr("axis", 1), x.ndim)])), -1))
def _flatten(ctx, node, x):
    shape = ctx.shape(x)
    axis = _axis(int(node.attr("axis", 1)), len(shape))
    if axis == 1:
        return op.flatten(x)
    if not all(isinstance(d, int) for d in shape):
        node.unsupported(f"axis={axis} with a symbolic shape")
    return op.reshape(x, shape=[int(np.prod(shape[:axis])), -1])


@converter("Transpose", fold=lambda node, x: np.transpose(x, node.attr("perm")))
def _transpose(ctx, node, x):
    perm = node.attr("perm")
    return op.transpose(x, axes=list(perm) if perm is not None else list(range(ctx.rank(x)))[::-1])


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
    return op.squeeze(x, axis=_squeeze_axes(node, _known(node, axes, "axes"), ctx.shape(x)))


@converter("Concat", fold=lambda node, *xs: np.concatenate(xs, axis=node.attr("axis")))
def _concat(ctx, node, *xs):
    like = next(x for x in xs if not isinstance(x, np.ndarray))
    dtype = ctx.dtype(like)
    return op.concat(*[ctx.expr(x, dtype) for x in xs], axis=int(node.attr("axis")))


def _gather_fold(node, data, indices):
    return np.take(data, indices, axis=node.attr("axis", 0))


@converter("Gather", fold=_gather_fold)
def _gather(ctx, node, data, indices):
    indices = _known(node, indices, "index")
    shape = ctx.shape(data)
    axis = _axis(int(node.attr("axis", 0)), len(shape))
    extent = shape[axis]
    flat = [i + extent if i < 0 else i for i in _ints(indices)] if isinstance(extent, int) else _ints(indices)
    if indices.ndim == 0:
        picked = op.slice(data, begin=[flat[0]], end=[flat[0] + 1], axes=[axis])
        return op.squeeze(picked, axis=[axis])
    if indices.ndim == 1 and flat == list(range(flat[0], flat[0] + len(flat))):
        return op.slice(data, begin=[flat[0]], end=[flat[0] + len(flat)], axes=[axis])
    node.unsupported("gathering a tensor at indices that are not a contiguous range")


def _slice_args(node, rank, starts, ends, axes, steps):
    if node.opset < 10:
        starts, ends, axes = node.attr("starts"), node.attr("ends"), node.attr("axes")
        steps = None
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else [_axis(a, rank) for a in _ints(axes)]
    steps = [1] * len(starts) if steps is None else _ints(steps)
    big = np.iinfo(np.int64).max // 2  # ONNX writes INT64_MAX for "to the end"
    ends = [min(e, big) if e > 0 else max(e, -big) for e in ends]
    return starts, ends, axes, steps


def _slice_fold(node, x, starts=None, ends=None, axes=None, steps=None):
    starts, ends, axes, steps = _slice_args(node, x.ndim, starts, ends, axes, steps)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return x[tuple(index)]


@converter("Slice", fold=_slice_fold)
def _slice(ctx, node, x, starts=None, ends=None, axes=None, steps=None):
    for what, v in (("start", starts), ("end", ends), ("axis", axes), ("step", steps)):
        _known(node, v, what)
    starts, ends, axes, steps = _slice_args(node, ctx.rank(x), starts, ends, axes, steps)
    if any(s <= 0 for s in steps):
        node.unsupported(f"steps={steps}")
    return op.slice(x, begin=starts, end=ends, axes=axes, strides=steps)


@converter("Expand", fold=lambda node, x, shape: x * np.ones(_ints(shape), dtype=x.dtype))
def _expand(ctx, node, x, shape):
    target = _ints(_known(node, shape, "shape"))
    current = ctx.shape(x)
    rank = max(len(target), len(current))
    target = [1] * (rank - len(target)) + target
    padded = [1] * (rank - len(current)) + list(current)
    out = [c if t == 1 else t for t, c in zip(target, padded)]  # ONNX: bidirectional broadcasting
    if not all(isinstance(d, int) for d in out):
        node.unsupported("expanding to a symbolic shape")
    return op.broadcast_to(ctx.expr(x), shape=out)


def _constant_of_shape(node, shape):
    import onnx
    import onnx.numpy_helper
    value = node.attrs.get("value")
    fill = onnx.numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return np.full(_ints(shape), fill[0], dtype=fill.dtype)


@converter("ConstantOfShape", fold=_constant_of_shape)
def _constant_of_shape_convert(ctx, node, shape):
    return _constant_of_shape(node, _known(node, shape, "shape"))


@converter("Range", fold=lambda node, start, limit, delta: np.arange(start, limit, delta, dtype=start.dtype))
def _range(ctx, node, start, limit, delta):
    node.unsupported("a range computed at run time")


@converter("Dropout")
def _dropout(ctx, node, x, ratio=None, training=None):
    if len(node.proto.output) > 1 and node.proto.output[1]:
        node.unsupported("the mask output")
    return x  # inference: the identity


def _table():
    rows = ["| ONNX operator | opsets |", "|---|---|"]
    for op_type, first, last in supported_operators():
        rows.append(f"| {op_type} | {first}-{last} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--table"]:
        print(_table())
    else:
        sys.exit("usage: python3 -m loom.frontend.onnx --table")
