"""ONNX converters: RNN, GRU and LSTM, unrolled over their (static)
sequence length.  The input projection of every step is one dense over the
whole sequence; each step adds its recurrent projection and applies the
gates.  Forward, reverse and bidirectional; both layouts; clip, the
activations ONNX names, GRU's linear_before_reset, LSTM's peepholes and
input_forget.  Sequence lengths shorter than the sequence are refused."""
import numpy as np

from ... import op
from . import _known, converter


def _part(ctx, v, axis, start, stop):
    """v[..., start:stop, ...] along `axis`, NumPy for a known array."""
    if isinstance(v, np.ndarray):
        index = [slice(None)] * v.ndim
        index[axis] = slice(start, stop)
        return v[tuple(index)]
    return op.slice(v, begin=[start], end=[stop], axes=[axis])


def _squeeze0(ctx, v):
    return v[0] if isinstance(v, np.ndarray) else op.squeeze(v, axis=[0])


def _linear(ctx, x, w, dtype):
    """x (..., K) times w (N, K) transposed: dense for a known weight."""
    if isinstance(w, np.ndarray):
        return op.dense(x, ctx.expr(w, dtype))
    return op.matmul(x, w, transpose_b=True)


def _activation(ctx, name, alpha, beta, like):
    def c(v):
        return ctx.const(v, like)
    table = {
        "Tanh": op.tanh, "Sigmoid": op.sigmoid, "Relu": op.relu, "Softsign": lambda x: op.divide(x, op.add(op.abs(x), c(1))),
        "Softplus": lambda x: op.log(op.add(op.exp(x), c(1))),
        "Affine": lambda x: op.add(op.multiply(x, c(alpha)), c(beta)),
        "LeakyRelu": lambda x: op.where(op.less(x, c(0)), op.multiply(x, c(alpha)), x),
        "ThresholdedRelu": lambda x: op.where(op.greater(x, c(alpha)), x, c(0)),
        "ScaledTanh": lambda x: op.multiply(c(alpha), op.tanh(op.multiply(x, c(beta)))),
        "HardSigmoid": lambda x: op.clip(op.add(op.multiply(x, c(alpha)), c(beta)), a_min=0.0, a_max=1.0),
        "Elu": lambda x: op.where(op.less(x, c(0)), op.multiply(c(alpha), op.subtract(op.exp(x), c(1))), x),
    }
    return table.get(name)


_DEFAULT_ALPHA = {"Affine": 1.0, "LeakyRelu": 0.01, "ThresholdedRelu": 1.0, "ScaledTanh": 1.0, "HardSigmoid": 0.2,
                  "Elu": 1.0}
_DEFAULT_BETA = {"Affine": 0.0, "ScaledTanh": 1.0, "HardSigmoid": 0.5}


def _recurrent(ctx, node, kind, x, w, r, b, lengths, h0, c0=None, p=None):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    x = ctx.expr(x)
    dtype = ctx.dtype(x)
    hidden = int(node.attr("hidden_size"))
    direction = node.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        node.unsupported(f"direction={direction!r}")
    directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    layout = int(node.attr("layout", 0))
    if layout == 1:  # (batch, seq, ...) -> (seq, batch, ...)
        x = op.transpose(x, axes=[1, 0, 2])
        h0 = None if h0 is None else op.transpose(ctx.expr(h0, dtype), axes=[1, 0, 2])
        c0 = None if c0 is None else op.transpose(ctx.expr(c0, dtype), axes=[1, 0, 2])
    seq, batch, _ = ctx.static_shape(node, x)
    if lengths is not None:
        lengths = np.asarray(_known(node, lengths, "sequence lengths")).reshape(-1)
        if not (lengths == seq).all():
            node.unsupported(f"sequence lengths {list(lengths)} shorter than the sequence ({seq})")
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    names = list(node.attr("activations", defaults * len(directions)))
    alphas = list(node.attr("activation_alpha", []))
    betas = list(node.attr("activation_beta", []))
    per_direction = len(defaults)
    acts = []
    for k, name in enumerate(names):
        name = name.decode() if isinstance(name, bytes) else name
        canonical = {n.lower(): n for n in _DEFAULT_ALPHA.keys() | {"Tanh", "Sigmoid", "Relu", "Softsign", "Softplus"}}
        name = canonical.get(name.lower(), name)
        alpha = alphas[k] if k < len(alphas) else _DEFAULT_ALPHA.get(name, 0.0)
        beta = betas[k] if k < len(betas) else _DEFAULT_BETA.get(name, 0.0)
        fn = _activation(ctx, name, alpha, beta, x)
        if fn is None:
            node.unsupported(f"the activation {name!r}")
        acts.append(fn)
    clip = node.attr("clip")

    def gate(v, k):
        v = v if clip is None else op.clip(v, a_min=-float(clip), a_max=float(clip))
        return acts[k](v)

    w = w if isinstance(w, np.ndarray) else ctx.expr(w, dtype)
    r = r if isinstance(r, np.ndarray) else ctx.expr(r, dtype)
    ys, hs, cs = [], [], []
    before_reset = kind == "GRU" and bool(node.attr("linear_before_reset", 0))
    for d, name in enumerate(directions):
        wd, rd = _squeeze0(ctx, _part(ctx, w, 0, d, d + 1)), _squeeze0(ctx, _part(ctx, r, 0, d, d + 1))
        projected = _linear(ctx, x, wd, dtype)  # (seq, batch, gates * hidden)
        bias_r = None
        if b is not None:
            bd = _squeeze0(ctx, _part(ctx, b if isinstance(b, np.ndarray) else ctx.expr(b, dtype), 0, d, d + 1))
            bias_w = ctx.expr(_part(ctx, bd, 0, 0, gates * hidden), dtype)
            bias_r = ctx.expr(_part(ctx, bd, 0, gates * hidden, 2 * gates * hidden), dtype)
            # Both biases go into the input projection, except GRU's with
            # linear_before_reset, whose recurrent bias is inside the reset.
            projected = op.add(projected, bias_w if before_reset else op.add(bias_w, bias_r))
        h = ctx.expr(np.zeros((batch, hidden), dtype=dtype)) if h0 is None else \
            _squeeze0(ctx, _part(ctx, ctx.expr(h0, dtype), 0, d, d + 1))
        c = None
        if kind == "LSTM":
            c = ctx.expr(np.zeros((batch, hidden), dtype=dtype)) if c0 is None else \
                _squeeze0(ctx, _part(ctx, ctx.expr(c0, dtype), 0, d, d + 1))
        peep = None
        if kind == "LSTM" and p is not None:
            pd = _squeeze0(ctx, _part(ctx, p if isinstance(p, np.ndarray) else ctx.expr(p, dtype), 0, d, d + 1))
            peep = [ctx.expr(_part(ctx, pd, 0, k * hidden, (k + 1) * hidden), dtype) for k in range(3)]  # i, o, f
        base = d * per_direction  # this direction's activations

        def piece(v, k):
            return op.slice(v, begin=[k * hidden], end=[(k + 1) * hidden], axes=[1])
        outs = {}
        for t in (range(seq) if name == "forward" else range(seq - 1, -1, -1)):
            xt = op.squeeze(op.slice(projected, begin=[t], end=[t + 1], axes=[0]), axis=[0])
            rec = _linear(ctx, h, rd, dtype)
            if kind == "RNN":
                h = gate(op.add(xt, rec), base)
            elif kind == "GRU":
                if before_reset and bias_r is not None:
                    rec = op.add(rec, bias_r)
                z = gate(op.add(piece(xt, 0), piece(rec, 0)), base)
                reset = gate(op.add(piece(xt, 1), piece(rec, 1)), base)
                if before_reset:
                    candidate = gate(op.add(piece(xt, 2), op.multiply(reset, piece(rec, 2))), base + 1)
                else:
                    rh = _linear(ctx, op.multiply(reset, h), _part(ctx, rd, 0, 2 * hidden, 3 * hidden), dtype)
                    candidate = gate(op.add(piece(xt, 2), rh), base + 1)
                h = op.add(op.multiply(op.subtract(ctx.const(1, candidate), z), candidate), op.multiply(z, h))
            else:
                pre = op.add(xt, rec)
                i_pre, o_pre, f_pre, c_pre = (piece(pre, k) for k in range(4))
                if peep is not None:
                    i_pre = op.add(i_pre, op.multiply(peep[0], c))
                    f_pre = op.add(f_pre, op.multiply(peep[2], c))
                i = gate(i_pre, base)
                forget = op.subtract(ctx.const(1, i), i) if node.attr("input_forget", 0) else gate(f_pre, base)
                c = op.add(op.multiply(forget, c), op.multiply(i, gate(c_pre, base + 1)))
                if peep is not None:
                    o_pre = op.add(o_pre, op.multiply(peep[1], c))
                h = op.multiply(gate(o_pre, base), acts[base + 2](c))
            outs[t] = h
        ys.append(op.concat(*[op.expand_dims(outs[t], axis=0) for t in range(seq)], axis=0))  # (seq, batch, hidden)
        hs.append(h)
        cs.append(c)
    y = op.concat(*[op.expand_dims(v, axis=1) for v in ys], axis=1)  # (seq, dirs, batch, hidden)
    y_h = op.concat(*[op.expand_dims(v, axis=0) for v in hs], axis=0)  # (dirs, batch, hidden)
    y_c = op.concat(*[op.expand_dims(v, axis=0) for v in cs], axis=0) if kind == "LSTM" else None
    if layout == 1:
        y = op.transpose(y, axes=[2, 0, 1, 3])
        y_h = op.transpose(y_h, axes=[1, 0, 2])
        y_c = None if y_c is None else op.transpose(y_c, axes=[1, 0, 2])
    return (y, y_h, y_c) if kind == "LSTM" else (y, y_h)


@converter("RNN")
def _rnn(ctx, node, x, w, r, b=None, lengths=None, h0=None):
    return _recurrent(ctx, node, "RNN", x, w, r, b, lengths, h0)


@converter("GRU")
def _gru(ctx, node, x, w, r, b=None, lengths=None, h0=None):
    return _recurrent(ctx, node, "GRU", x, w, r, b, lengths, h0)


@converter("LSTM")
def _lstm(ctx, node, x, w, r, b=None, lengths=None, h0=None, c0=None, p=None):
    return _recurrent(ctx, node, "LSTM", x, w, r, b, lengths, h0, c0, p)
