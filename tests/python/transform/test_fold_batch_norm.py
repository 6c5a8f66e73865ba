"""FoldBatchNorm (docs/passes.md): inference batch norms become a
per-channel scale and shift, folded into a preceding convolution's
constant weight and bias; results agree with NumPy on random inputs."""
import numpy as np
import pytest

import loom
from loom import graph, op, transform

from conftest import ROOT

HOST = str(ROOT / "configs" / "host.yaml")
rng = np.random.default_rng(9)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def stats(c):
    return f32(c), f32(c), f32(c), (rng.random(c) + 0.5).astype(np.float32)


def bn_ref(x, gamma, beta, mean, var, axis=1, eps=1e-5):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda a: a.astype(np.float64).reshape(shape)  # noqa: E731
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(gamma) + r(beta)


def conv_ref(x, w):
    """3x3 convolution, padding 1, NCHW/OIHW, in float64."""
    n, c, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out


def folded(body, params):
    mod = loom.IRModule({"main": graph.Function(params, body)})
    return mod, transform.get_pass("FoldBatchNorm")(transform.get_pass("InferType")(mod)).script(show_meta=True)


def bn(x, s, **attrs):
    return op.batch_norm(x, *[graph.Constant(a) for a in s], **attrs)


@pytest.mark.parametrize("with_bias", [False, True])
def test_a_batch_norm_after_a_convolution_goes_into_its_weight_and_bias(with_bias):
    x, w, b, s = f32(2, 4, 6, 6), f32(8, 4, 3, 3), f32(8, 1, 1), stats(8)
    xv = graph.Var("x", shape=x.shape)
    y = op.conv2d(xv, graph.Constant(w), padding=[1, 1])
    if with_bias:
        y = op.add(y, graph.Constant(b))
    mod, text = folded(op.relu(bn(y, s, epsilon=1e-3)), [xv])
    assert "batch_norm" not in text and "multiply" not in text and text.count("add(") == 1, text
    want = conv_ref(x, w) + (b.astype(np.float64) if with_bias else 0)
    want = np.maximum(bn_ref(want, *s, eps=1e-3), 0)
    got = loom.build(mod, HOST)["main"](x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_channels_last_convolutions_fold_too():
    x, w, s = f32(1, 5, 5, 3), f32(6, 3, 3, 3), stats(6)
    xv = graph.Var("x", shape=x.shape)
    y = op.conv2d(xv, graph.Constant(w.transpose(0, 2, 3, 1).copy()), padding=[1, 1], data_layout="NHWC",
                  kernel_layout="OHWI")
    mod, text = folded(bn(y, s, axis=3), [xv])
    assert "batch_norm" not in text and "multiply" not in text, text
    want = bn_ref(conv_ref(x.transpose(0, 3, 1, 2), w).transpose(0, 2, 3, 1), *s, axis=3)
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x).numpy(), want, rtol=1e-4, atol=1e-4)


def test_elsewhere_a_batch_norm_becomes_a_scale_and_shift():
    # On an input, and after a convolution whose result is also used
    # elsewhere (folding would change the other use).
    x, w, s, t = f32(2, 4, 6, 6), f32(4, 4, 3, 3), stats(4), stats(4)
    xv = graph.Var("x", shape=x.shape)
    c = op.conv2d(xv, graph.Constant(w), padding=[1, 1])
    mod, text = folded(op.add(bn(xv, s), op.add(bn(c, t), c)), [xv])
    assert "batch_norm" not in text and text.count("multiply(") == 2, text
    cw = conv_ref(x, w)
    want = bn_ref(x, *s) + bn_ref(cw, *t) + cw
    np.testing.assert_allclose(loom.build(mod, HOST)["main"](x).numpy(), want, rtol=1e-4, atol=1e-4)


def test_statistics_that_are_not_constants_are_left_alone():
    xv, gv = graph.Var("x", shape=(1, 3, 4, 4)), graph.Var("g", shape=(3,))
    _, _, m, v = stats(3)
    body = op.batch_norm(xv, gv, graph.Constant(m), graph.Constant(m), graph.Constant(v))
    _, text = folded(body, [xv, gv])
    assert "batch_norm(%x, %g" in text, text
