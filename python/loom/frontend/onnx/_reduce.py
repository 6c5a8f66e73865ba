"""ONNX converters: reductions (ReduceSum, ReduceMean, ..., ReduceL2,
ReduceLogSumExp) and ArgMax / ArgMin."""
import numpy as np

from ... import op
from . import _axis, _ints, _known, converter


def _axes(node, rank, axes_input):
    """The reduced axes, sorted, or None for "leave the tensor alone"
    (noop_with_empty_axes with no axes)."""
    if node.op_type == "ReduceSum" and node.opset >= 13:
        axes = None if axes_input is None or np.asarray(axes_input).size == 0 else _ints(axes_input)
    else:
        axes = node.attr("axes")
        axes = None if axes is None or len(axes) == 0 else list(axes)
    if axes is None:
        return None if node.attr("noop_with_empty_axes", 0) else list(range(rank))
    return sorted({_axis(int(a), rank) for a in axes})


# name -> (how it reduces a run-time tensor, how NumPy folds a known one)
def _log_sum_exp(x, axis, keepdims):
    big = op.max(x, axis=axis, keepdims=True)
    summed = op.sum(op.exp(op.subtract(x, big)), axis=axis, keepdims=keepdims)
    return op.add(op.log(summed), big if keepdims else op.squeeze(big, axis=axis))


_REDUCTIONS = {
    "ReduceSum": (lambda ctx, x, a, k: op.sum(x, axis=a, keepdims=k), lambda x, a, k: np.sum(x, axis=a, keepdims=k)),
    "ReduceMean": (lambda ctx, x, a, k: op.mean(x, axis=a, keepdims=k), lambda x, a, k: np.mean(x, axis=a, keepdims=k)),
    "ReduceMax": (lambda ctx, x, a, k: op.max(x, axis=a, keepdims=k), lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    "ReduceMin": (lambda ctx, x, a, k: op.min(x, axis=a, keepdims=k), lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    "ReduceProd": (lambda ctx, x, a, k: op.prod(x, axis=a, keepdims=k), lambda x, a, k: np.prod(x, axis=a, keepdims=k)),
    "ReduceL1": (lambda ctx, x, a, k: op.sum(op.abs(x), axis=a, keepdims=k),
                 lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k)),
    "ReduceL2": (lambda ctx, x, a, k: op.sqrt(op.sum(op.multiply(x, x), axis=a, keepdims=k)),
                 lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k))),
    "ReduceSumSquare": (lambda ctx, x, a, k: op.sum(op.multiply(x, x), axis=a, keepdims=k),
                        lambda x, a, k: np.sum(x * x, axis=a, keepdims=k)),
    "ReduceLogSum": (lambda ctx, x, a, k: op.log(op.sum(x, axis=a, keepdims=k)),
                     lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k))),
    "ReduceLogSumExp": (lambda ctx, x, a, k: _log_sum_exp(x, a, k),
                        lambda x, a, k: np.log(np.sum(np.exp(x), axis=a, keepdims=k))),
}


def _register(op_type, convert, fold):
    def folded(node, x, axes=None):
        reduced = _axes(node, x.ndim, axes)
        if reduced is None:
            return x
        return np.asarray(fold(x, tuple(reduced), bool(node.attr("keepdims", 1)))).astype(x.dtype)

    def converted(ctx, node, x, axes=None):
        reduced = _axes(node, ctx.rank(x), _known(node, axes, "axes"))
        if reduced is None:
            return x
        return convert(ctx, ctx.expr(x), reduced, bool(node.attr("keepdims", 1)))
    converter(op_type, fold=folded)(converted)


for _name, (_convert, _fold) in _REDUCTIONS.items():
    _register(_name, _convert, _fold)


def _arg(op_type, loom_op, numpy_fn):
    def fold(node, x):
        axis = _axis(int(node.attr("axis", 0)), x.ndim)
        if node.attr("select_last_index", 0):
            flipped = np.flip(x, axis)
            out = x.shape[axis] - 1 - numpy_fn(flipped, axis=axis)
        else:
            out = numpy_fn(x, axis=axis)
        return np.expand_dims(out, axis).astype(np.int64) if node.attr("keepdims", 1) else out.astype(np.int64)

    def convert(ctx, node, x):
        return getattr(op, loom_op)(ctx.expr(x), axis=int(node.attr("axis", 0)),
                                    keepdims=bool(node.attr("keepdims", 1)),
                                    select_last_index=bool(node.attr("select_last_index", 0)))
    converter(op_type, fold=fold)(convert)


_arg("ArgMax", "argmax", np.argmax)
_arg("ArgMin", "argmin", np.argmin)
