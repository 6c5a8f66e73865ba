"""ONNX converters: convolution and pooling (1-D, 2-D and 3-D),
normalisation, softmax and its kin, linear algebra, dropout and the two
losses."""
import numpy as np

from ... import op
from .. import numpy_matmul
from ..common import conv3d, conv_transpose3d, max_pool2d_indices, pool3d, shape_text
from . import _axis, _known, converter


# ------------------------------------------------------------ windows

def _window(ctx, node, x, kernel):
    """strides, pads (begins then ends, ONNX's order) and dilations of a
    convolution or pool over len(kernel) spatial axes, auto_pad resolved
    on the static shape."""
    n = len(kernel)
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    pads = list(node.attr("pads", [0] * (2 * n)))
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = ctx.static_shape(node, x)[2:]
        pads = [0] * (2 * n)
        for k in range(n):
            out = -(-spatial[k] // strides[k])
            total = max((out - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - spatial[k], 0)
            small, big = total // 2, total - total // 2
            pads[k], pads[k + n] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    elif auto_pad != "NOTSET":
        node.unsupported(f"auto_pad={auto_pad}")
    if len(strides) != n or len(dilations) != n or len(pads) != 2 * n:
        node.unsupported(f"strides {strides}, dilations {dilations} or pads {pads} for a {n}-D window")
    return strides, pads, dilations


def _as_2d(ctx, x):
    """A 1-D (N, C, L) tensor as (N, C, 1, L)."""
    n, c, length = ctx.shape(x)
    return op.reshape(x, shape=[n if isinstance(n, int) else -1, c, 1, length])


def _from_2d(y, ctx):
    n, c, _, length = ctx.shape(y)
    return op.reshape(y, shape=[n if isinstance(n, int) else -1, c, length])


def _spatial_rank(ctx, node, x):
    rank = ctx.rank(x) - 2
    if rank < 1:
        node.unsupported(f"an input of rank {rank + 2}")
    return rank


# -------------------------------------------------------- convolution

@converter("Conv")
def _conv(ctx, node, x, w, bias=None):
    return conv(ctx, node, x, w, bias)


def conv(ctx, node, x, w, bias=None, out_dtype=""):
    """The convolution a Conv node's attributes describe (ConvInteger's
    and QLinearConv's too: integer operands keep their dtypes and sum in
    out_dtype)."""
    x, w = ctx.expr(x), ctx.expr(w, None if out_dtype else ctx.dtype(x))
    w_shape = ctx.static_shape(node, w, "the weight")
    kernel = list(node.attr("kernel_shape", w_shape[2:]))
    if len(kernel) not in (1, 2, 3):
        node.unsupported(f"a {len(kernel)}-D convolution")
    strides, pads, dilations = _window(ctx, node, x, kernel)
    group = int(node.attr("group", 1))
    if len(kernel) == 3:
        y = conv3d(ctx, x, w, strides, pads, dilations, group, out_dtype=out_dtype)
    elif len(kernel) == 1:
        y = op.conv2d(_as_2d(ctx, x), op.reshape(w, shape=[w_shape[0], w_shape[1], 1, w_shape[2]]),
                      strides=[1, strides[0]], padding=[0, pads[0], 0, pads[1]], dilation=[1, dilations[0]],
                      groups=group, out_dtype=out_dtype)
        y = _from_2d(y, ctx)
    else:
        y = op.conv2d(x, w, strides=strides, padding=[pads[0], pads[1], pads[2], pads[3]], dilation=dilations,
                      groups=group, out_dtype=out_dtype)
    if bias is not None:
        extra = [1] * len(kernel)
        bias = bias.reshape(-1, *extra) if isinstance(bias, np.ndarray) else op.reshape(bias, shape=[-1] + extra)
        y = op.add(y, ctx.expr(bias, ctx.dtype(y)))
    return y


@converter("ConvTranspose")
def _conv_transpose(ctx, node, x, w, bias=None):
    x, w = ctx.expr(x), ctx.expr(w, ctx.dtype(x))
    x_shape = list(ctx.shape(x))  # the batch may be symbolic, not the rest
    if not all(isinstance(d, int) for d in x_shape[1:]):
        node.unsupported(f"an input of symbolic channels or spatial extents {shape_text(x_shape)}")
    w_shape = ctx.static_shape(node, w, "the weight")
    kernel = list(node.attr("kernel_shape", w_shape[2:]))
    n = len(kernel)
    if n not in (1, 2, 3):
        node.unsupported(f"a {n}-D transposed convolution")
    strides = list(node.attr("strides", [1] * n))
    dilations = list(node.attr("dilations", [1] * n))
    out_pad = list(node.attr("output_padding", [0] * n))
    group = int(node.attr("group", 1))
    spatial = x_shape[2:]
    output_shape = node.attr("output_shape")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # The padding that gives this output size (ONNX's formula).
        target = list(output_shape)[-n:] if output_shape is not None else [s * st for s, st in zip(spatial, strides)]
        pads = [0] * (2 * n)
        for k in range(n):
            total = strides[k] * (spatial[k] - 1) + out_pad[k] + ((kernel[k] - 1) * dilations[k] + 1) - target[k]
            if total < 0:  # the output is larger than the input reaches: the extra is output padding
                out_pad[k] -= total
                total = 0
            first = total // 2 if auto_pad != "SAME_LOWER" else total - total // 2
            pads[k], pads[k + n] = first, total - first
    elif auto_pad == "VALID" or auto_pad == "NOTSET":
        pads = list(node.attr("pads", [0] * (2 * n))) if auto_pad == "NOTSET" else [0] * (2 * n)
    else:
        node.unsupported(f"auto_pad={auto_pad}")
    if n == 1:
        y = op.conv2d_transpose(_as_2d(ctx, x), op.reshape(w, shape=[w_shape[0], w_shape[1], 1, w_shape[2]]),
                                strides=[1, strides[0]], padding=[0, pads[0], 0, pads[1]],
                                dilation=[1, dilations[0]], output_padding=[0, out_pad[0]], groups=group)
        y = _from_2d(y, ctx)
    elif n == 3:
        y = conv_transpose3d(ctx, x, w, strides, pads, out_pad, dilations, group)
    else:
        y = op.conv2d_transpose(x, w, strides=strides, padding=[pads[0], pads[1], pads[2], pads[3]],
                                dilation=dilations, output_padding=out_pad, groups=group)
    if bias is not None:
        extra = [1] * n
        bias = bias.reshape(-1, *extra) if isinstance(bias, np.ndarray) else op.reshape(bias, shape=[-1] + extra)
        y = op.add(y, ctx.expr(bias, ctx.dtype(y)))
    return y


# ------------------------------------------------------------ pooling

def _pool(ctx, node, x, loom_pool, **extra):
    """A pool over 1, 2 or 3 spatial axes: 1-D as 2-D over (1, L); 3-D as
    a 2-D pool over (H, W) then one over (D, 1) (common.pool3d)."""
    x = ctx.expr(x)
    kernel = list(node.attr("kernel_shape"))
    strides, pads, dilations = _window(ctx, node, x, kernel)
    ceil_mode = bool(node.attr("ceil_mode", 0))
    n = len(kernel)
    if n == 2:
        return loom_pool(x, pool_size=kernel, strides=strides, padding=[pads[0], pads[1], pads[2], pads[3]],
                         dilation=dilations, ceil_mode=ceil_mode, **extra)
    if n == 1:
        y = loom_pool(_as_2d(ctx, x), pool_size=[1, kernel[0]], strides=[1, strides[0]],
                      padding=[0, pads[0], 0, pads[1]], dilation=[1, dilations[0]], ceil_mode=ceil_mode, **extra)
        return _from_2d(y, ctx)
    if n == 3:
        return pool3d(ctx, loom_pool, x, kernel, strides, pads, dilations, ceil_mode, **extra)
    node.unsupported(f"a {n}-D window")


@converter("MaxPool")
def _max_pool(ctx, node, x):
    values = _pool(ctx, node, x, op.max_pool2d)
    if not node.wants(1):
        return values
    # Indices: each maximum's position in the whole tensor, flattened
    # (its plane's offset plus its place in the plane; storage_order 1:
    # the plane read by columns).
    x = ctx.expr(x)
    kernel = list(node.attr("kernel_shape"))
    shape = ctx.shape(x)
    if len(kernel) != 2:
        node.unsupported(f"the Indices output of a {len(kernel)}-D pool")
    if not all(isinstance(d, int) for d in shape):
        node.unsupported(f"the Indices output of an input of symbolic shape {shape_text(shape)}")
    strides, pads, dilations = _window(ctx, node, x, kernel)
    plane = max_pool2d_indices(ctx, x, values, kernel, strides, [pads[0], pads[1], pads[2], pads[3]], dilations,
                               column_major=bool(node.attr("storage_order", 0)))
    n, c, h, w = shape
    offsets = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    return values, op.add(plane, ctx.expr(offsets))


@converter("MaxUnpool", opsets=(9, 17))
def _max_unpool(ctx, node, x, indices, output_shape=None):
    # Each value written at its index in the whole output, flattened;
    # zeros elsewhere.
    x, indices = ctx.expr(x), ctx.expr(indices)
    shape = ctx.static_shape(node, x)
    kernel = list(node.attr("kernel_shape"))
    n = len(kernel)
    strides = list(node.attr("strides", [1] * n))
    pads = list(node.attr("pads", [0] * (2 * n)))
    out = shape[:2] + [(d - 1) * s - pads[k] - pads[k + n] + kernel[k]
                       for k, (d, s) in enumerate(zip(shape[2:], strides))]
    total, count = int(np.prod(out)), int(np.prod(shape))
    zeros = ctx.expr(np.zeros(total, dtype=ctx.dtype(x)))
    flat = op.scatter_elements(zeros, op.reshape(indices, shape=[count]), op.reshape(x, shape=[count]), axis=0)
    y = op.reshape(flat, shape=out)
    if output_shape is not None:  # the indices are the default shape's; output_shape pads its ends
        wanted = [int(v) for v in _known(node, output_shape, "output_shape")]
        if len(wanted) != len(out) or any(a < b for a, b in zip(wanted, out)):
            node.unsupported(f"output_shape {wanted} smaller than the unpooled shape {out}")
        if wanted != out:
            y = op.pad(y, pad_width=[v for a, b in zip(wanted, out) for v in (0, a - b)])
    return y


@converter("AveragePool")
def _avg_pool(ctx, node, x):
    return _pool(ctx, node, x, op.avg_pool2d, count_include_pad=bool(node.attr("count_include_pad", 0)))


@converter("LpPool")
def _lp_pool(ctx, node, x):
    p = float(node.attr("p", 2))
    x = ctx.expr(x)
    powered = op.power(op.abs(x), ctx.const(p, x))
    window = int(np.prod(node.attr("kernel_shape")))
    summed = op.multiply(_pool(ctx, node, powered, op.avg_pool2d, count_include_pad=True), ctx.const(window, x))
    return op.power(summed, ctx.const(1 / p, x))


def _spatial(ctx, node, x):
    return list(range(2, 2 + _spatial_rank(ctx, node, x)))


@converter("GlobalAveragePool")
def _global_avg_pool(ctx, node, x):
    if ctx.rank(x) == 4:
        return op.global_avg_pool2d(x)
    return op.mean(x, axis=_spatial(ctx, node, x), keepdims=True)


@converter("GlobalMaxPool")
def _global_max_pool(ctx, node, x):
    return op.max(x, axis=_spatial(ctx, node, x), keepdims=True)


@converter("GlobalLpPool")
def _global_lp_pool(ctx, node, x):
    p = float(node.attr("p", 2))
    summed = op.sum(op.power(op.abs(x), ctx.const(p, x)), axis=_spatial(ctx, node, x), keepdims=True)
    return op.power(summed, ctx.const(1 / p, x))


# ------------------------------------------------------- normalisation

@converter("BatchNormalization")
def _batch_norm(ctx, node, x, scale, bias, mean, var, *rest):
    if node.attr("training_mode", 0) or any(node.wants(k) for k in (1, 2, 3, 4)):
        if node.opset < 14 or any(node.wants(k) for k in (3, 4)):
            node.unsupported("training mode before opset 14 (its saved statistics outputs)")
        return _batch_norm_training(ctx, node, x, scale, bias, mean, var)
    dtype = ctx.dtype(x)
    return op.batch_norm(x, ctx.expr(scale, dtype), ctx.expr(bias, dtype), ctx.expr(mean, dtype), ctx.expr(var, dtype),
                         epsilon=float(node.attr("epsilon", 1e-5)))


def _batch_norm_training(ctx, node, x, scale, bias, mean, var):
    """BatchNormalization with training_mode=1 (opsets 14-15): x normalised
    by its own statistics over every axis but the channels' (the variance
    the population's), and the running statistics moved towards them by
    1 - momentum: (Y, running_mean, running_var)."""
    x = ctx.expr(x)
    dtype, rank = ctx.dtype(x), ctx.rank(x)
    axes = [a for a in range(rank) if a != 1]
    y, batch_mean, _ = _normalise(ctx, x, axes, float(node.attr("epsilon", 1e-5)))
    batch_var = op.mean(op.multiply(op.subtract(x, batch_mean), op.subtract(x, batch_mean)), axis=axes)
    batch_mean = op.reshape(batch_mean, shape=[-1])
    extra = [1] * (rank - 2)

    def per_channel(v):
        return op.reshape(ctx.expr(v, dtype), shape=[-1] + extra)
    out = op.add(op.multiply(y, per_channel(scale)), per_channel(bias))
    momentum = float(node.attr("momentum", 0.9))
    running = [op.add(op.multiply(ctx.expr(r, dtype), ctx.const(momentum, x)),
                      op.multiply(b, ctx.const(1 - momentum, x))) for r, b in ((mean, batch_mean), (var, batch_var))]
    return out, running[0], running[1]


def _normalise(ctx, x, axes, epsilon):
    """(x - mean) / sqrt(var + epsilon) over `axes`, with the mean and
    1 / sqrt(var + epsilon) (keepdims)."""
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    var = op.mean(op.multiply(centred, centred), axis=axes, keepdims=True)
    inv = op.rsqrt(op.add(var, ctx.const(epsilon, x)))
    return op.multiply(centred, inv), mean, inv


@converter("InstanceNormalization")
def _instance_norm(ctx, node, x, scale, bias):
    x = ctx.expr(x)
    rank = ctx.rank(x)
    y, _, _ = _normalise(ctx, x, list(range(2, rank)), float(node.attr("epsilon", 1e-5)))
    extra = [1] * (rank - 2)
    dtype = ctx.dtype(x)
    scale = scale.reshape(-1, *extra) if isinstance(scale, np.ndarray) else op.reshape(scale, shape=[-1] + extra)
    bias = bias.reshape(-1, *extra) if isinstance(bias, np.ndarray) else op.reshape(bias, shape=[-1] + extra)
    return op.add(op.multiply(y, ctx.expr(scale, dtype)), ctx.expr(bias, dtype))


@converter("LayerNormalization", opsets=(17, 17))
def _layer_norm(ctx, node, x, scale, bias=None):
    x = ctx.expr(x)
    rank = ctx.rank(x)
    axis = _axis(int(node.attr("axis", -1)), rank)
    epsilon = float(node.attr("epsilon", 1e-5))
    dtype = ctx.dtype(x)
    if node.attr("stash_type", 1) != 1:
        node.unsupported(f"stash_type={node.attr('stash_type')}")
    if axis == rank - 1 and not node.wants(1) and not node.wants(2):
        if bias is None:
            bias = np.zeros(ctx.shape(scale), dtype=ctx.dtype(scale))
        return op.layer_norm(x, ctx.expr(scale, dtype), ctx.expr(bias, dtype), epsilon=epsilon)
    y, mean, inv = _normalise(ctx, x, list(range(axis, rank)), epsilon)
    y = op.multiply(y, ctx.expr(scale, dtype))
    if bias is not None:
        y = op.add(y, ctx.expr(bias, dtype))
    return y, mean, inv


@converter("MeanVarianceNormalization")
def _mvn(ctx, node, x):
    axes = [_axis(a, ctx.rank(x)) for a in node.attr("axes", [0, 2, 3])]
    mean = op.mean(x, axis=axes, keepdims=True)
    centred = op.subtract(x, mean)
    std = op.sqrt(op.mean(op.multiply(centred, centred), axis=axes, keepdims=True))
    return op.divide(centred, op.add(std, ctx.const(1e-9, x)))


@converter("LRN")
def _lrn(ctx, node, x):
    size = int(node.attr("size"))
    alpha, beta, bias = float(node.attr("alpha", 1e-4)), float(node.attr("beta", 0.75)), float(node.attr("bias", 1.0))
    shape = ctx.static_shape(node, x)
    n, c = shape[0], shape[1]
    rest = int(np.prod(shape[2:]))
    squares = op.reshape(op.multiply(x, x), shape=[n, 1, c, rest])
    # The sum over channels c - (size - 1) / 2 .. c + size / 2: a window
    # along the channel axis.
    low, high = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = op.avg_pool2d(squares, pool_size=[size, 1], padding=[low, 0, high, 0], count_include_pad=True)
    summed = op.reshape(window, shape=shape)
    scale = op.add(ctx.const(bias, x), op.multiply(summed, ctx.const(alpha, x)))
    return op.divide(x, op.power(scale, ctx.const(beta, x)))


# ------------------------------------------------ softmax and its kin

def _flattened(ctx, node, x, fn, default_axis):
    """Softmax, LogSoftmax and Hardmax: from opset 13 along one axis,
    before it over the axes from `axis` on, flattened."""
    rank = ctx.rank(x)
    if node.opset >= 13:
        return fn(x, _axis(int(node.attr("axis", -1)), rank))
    axis = _axis(int(node.attr("axis", default_axis)), rank)
    if axis == rank - 1:
        return fn(x, rank - 1)
    shape = ctx.static_shape(node, x)
    flat = op.reshape(x, shape=[int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))])
    return op.reshape(fn(flat, 1), shape=shape)


@converter("Softmax")
def _softmax(ctx, node, x):
    return _flattened(ctx, node, ctx.expr(x), lambda y, a: op.softmax(y, axis=a), 1)


@converter("LogSoftmax")
def _log_softmax(ctx, node, x):
    return _flattened(ctx, node, ctx.expr(x), lambda y, a: op.log_softmax(y, axis=a), 1)


@converter("Hardmax")
def _hardmax(ctx, node, x):
    def hardmax(y, axis):
        shape = ctx.static_shape(node, y)
        index = op.argmax(y, axis=axis, keepdims=True)
        positions = np.arange(shape[axis], dtype=np.int64).reshape([-1] + [1] * (len(shape) - 1 - axis))
        return op.cast(op.equal(index, ctx.expr(positions)), dtype=ctx.dtype(y))
    return _flattened(ctx, node, ctx.expr(x), hardmax, 1)


# ------------------------------------------------------ linear algebra

@converter("MatMul", fold=lambda node, a, b: np.matmul(a, b))
def _matmul(ctx, node, a, b):
    return numpy_matmul(ctx, a, b, ctx.dtype(a if not isinstance(a, np.ndarray) else b))


@converter("Gemm")
def _gemm(ctx, node, a, b, c=None):
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    dtype = ctx.dtype(a if not isinstance(a, np.ndarray) else b)
    a = ctx.expr(a, dtype)
    if node.attr("transA", 0):
        a = op.transpose(a, axes=[1, 0])
    trans_b = bool(node.attr("transB", 0))
    if isinstance(b, np.ndarray):
        w = b if trans_b else b.T  # dense wants (N, K)
        w = np.ascontiguousarray(w * alpha if alpha != 1.0 else w).astype(dtype)
        y = op.dense(a, ctx.expr(w))
    else:
        y = op.matmul(a, ctx.expr(b, dtype), transpose_b=trans_b)
        if alpha != 1.0:
            y = op.multiply(y, ctx.expr(np.asarray(alpha, dtype=dtype)))
    if c is not None:
        if isinstance(c, np.ndarray):
            c = ctx.expr((c * beta).astype(dtype) if beta != 1.0 else c, dtype)
        else:
            c = ctx.expr(c, dtype)
            if beta != 1.0:
                c = op.multiply(c, ctx.expr(np.asarray(beta, dtype=dtype)))
        y = op.add(y, c)
    return y


@converter("Einsum", fold=lambda node, *xs: np.einsum(node.attr("equation"), *xs))
def _einsum(ctx, node, *xs):
    dtype = next(ctx.dtype(x) for x in xs if not isinstance(x, np.ndarray))
    return op.einsum(*[ctx.expr(x, dtype) for x in xs], equation=node.attr("equation"))


# ------------------------------------------------------------- dropout

@converter("Dropout")
def _dropout(ctx, node, x, ratio=None, training=None):
    if node.attr("is_test", 1) == 0 and node.opset < 7:
        node.unsupported("is_test=0 (training)")
    if training is not None and bool(np.asarray(_known(node, training, "training mode")).reshape(-1)[0]):
        rate = np.asarray(0.5) if ratio is None else _known(node, ratio, "ratio")  # (0: the identity)
        if float(rate.reshape(-1)[0]) != 0.0:
            node.unsupported("training_mode=true (random dropout)")  # a ratio of 0 keeps everything: the identity
    if not node.wants(1):
        return x  # inference: the identity
    mask = op.broadcast_to(ctx.expr(np.ones((), dtype=bool)), shape=ctx.static_shape(node, x))
    return x, mask


# -------------------------------------------------------------- losses

def _nll(ctx, node, log_prob, target, weight):
    """NegativeLogLikelihoodLoss on log-probabilities (N, C, d...) and
    integer targets (N, d...): -log_prob at each target, times the class
    weight, 0 where the target is ignore_index, reduced as asked."""
    reduction = node.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        node.unsupported(f"reduction={reduction!r}")
    ignore = node.attr("ignore_index")
    dtype = ctx.dtype(log_prob)
    target = ctx.expr(target)
    picked = op.squeeze(op.gather_elements(log_prob, op.expand_dims(target, axis=1), axis=1), axis=[1])
    loss = op.neg(picked)
    weights = None
    if weight is not None:
        weights = op.take(ctx.expr(weight, dtype), target, axis=0)
    if ignore is not None:
        kept = op.not_equal(target, ctx.expr(np.asarray(ignore, dtype=ctx.dtype(target))))
        mask = op.cast(kept, dtype=dtype)
        weights = mask if weights is None else op.multiply(weights, mask)
    if weights is not None:
        loss = op.multiply(loss, weights)
    if reduction == "none":
        return loss
    total = op.sum(loss)
    if reduction == "sum":
        return total
    if weights is not None:
        return op.divide(total, op.sum(weights))
    count = int(np.prod(ctx.static_shape(node, loss, "the loss")))
    return op.divide(total, ctx.expr(np.asarray(count, dtype=dtype)))


@converter("NegativeLogLikelihoodLoss")
def _nll_loss(ctx, node, log_prob, target, weight=None):
    return _nll(ctx, node, ctx.expr(log_prob), target, weight)


@converter("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy(ctx, node, scores, target, weight=None):
    log_prob = op.log_softmax(ctx.expr(scores), axis=1)
    loss = _nll(ctx, node, log_prob, target, weight)
    return (loss, log_prob) if node.wants(1) else loss
