"""The default device schedule's shared-memory kernels on PoCL (docs/devices.md,
"The default device schedule"): contractions (matmul, batched matmul,
dense, conv2d) in shared-memory tiles, bit-identical to the thread-per-output
schedule and close to NumPy, at sizes that are not multiples of the tile;
reductions with fewer rows than reduced elements across a block's threads
(softmax, layer_norm, sum, max, min, mean, an integer sum), against NumPy;
the kernels' OpenCL C has __local arrays and barriers where it should."""
import numpy as np
import pytest

import loom

OPENCL = {"target": {"kind": "opencl", "host": {"kind": "llvm"}}, "pipeline": {"passes": ["device"]}}
# tile_threads below 64: no tiles, a thread per output (the serial order).
NO_TILES = dict(OPENCL, pipeline={"passes": ["device"], "config": {"DefaultDeviceSchedule.tile_threads": 32}})


def build(src, config=OPENCL):
    return loom.build(loom.parse(src, "schedule.loom"), config)


def source(lib):
    return lib.imports[0].imports[0].inspect_source("opencl")


def fn(params, result, body):
    args = ", ".join(f"%{n}: Tensor[{s}, {t}]" for n, s, t in params)
    return f"@main = fn({args}) -> Tensor[{result}] {{\n  {body}\n}}\n"


def f32(shape):
    return f"({', '.join(map(str, shape))})" if len(shape) != 1 else f"({shape[0]})"


CONTRACTIONS = {
    # name: (inputs' shapes, the expression, NumPy)
    "matmul": ([(50, 70), (70, 37)], "matmul(%a, %b)", lambda a, b: a @ b),
    "batch_matmul": ([(3, 40, 24), (3, 24, 33)], "matmul(%a, %b)", lambda a, b: a @ b),
    "dense": ([(20, 70), (33, 70)], "dense(%a, %b)", lambda a, b: a @ b.T),
    "conv2d_stride2": ([(2, 5, 13, 11), (19, 5, 3, 3)], "conv2d(%a, %b, strides=[2, 2], padding=[1, 1, 1, 1])", None),
}


def conv2d(x, k, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(x, k.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", windows, k)


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_contractions_take_shared_tiles(name, rng):
    shapes, expr, reference = CONTRACTIONS[name]
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    expected = reference(*inputs) if reference else conv2d(*inputs, 2, 1)
    params = [(n, f32(s), "float32") for n, s in zip("ab", shapes)]
    src = fn(params, f"{f32(expected.shape)}, float32", expr)
    tiled, serial = build(src), build(src, NO_TILES)
    assert "__local float" in source(tiled) and "barrier(" in source(tiled)
    assert "__local" not in source(serial)
    y = tiled["main"](*inputs).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    # Each output sums in the same order as with a thread per output.
    np.testing.assert_array_equal(y, serial["main"](*inputs).numpy())


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


ROWS = {
    # name: (input shape, the expression, NumPy)
    "softmax": ((6, 1000), "softmax(%a, axis=-1)", softmax),
    "sum_all": ((1000, 37), "sum(%a)", lambda a: a.astype(np.float64).sum()),
    "max_rows": ((3, 517), "max(%a, axis=[1])", lambda a: a.max(axis=1)),
    "min_middle": ((2, 300, 3), "min(%a, axis=[1])", lambda a: a.min(axis=1)),
    "mean_rows": ((4, 257), "mean(%a, axis=[1])", lambda a: a.astype(np.float64).mean(axis=1)),
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_reductions_with_few_rows_run_across_threads(name, rng):
    shape, expr, reference = ROWS[name]
    a = rng.standard_normal(shape).astype(np.float32)
    expected = np.asarray(reference(a))
    lib = build(fn([("a", f32(shape), "float32")], f"{f32(expected.shape) if expected.shape else '()'}, float32", expr))
    assert "__local float" in source(lib) and "barrier(" in source(lib)
    y = lib["main"](a).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    if name.startswith(("max", "min")):
        np.testing.assert_array_equal(y, expected)  # exact


def test_layer_norm_rows(rng):
    x = rng.standard_normal((4, 1024)).astype(np.float32)
    g, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    lib = build(fn([("x", "(4, 1024)", "float32"), ("g", "(1024)", "float32"), ("b", "(1024)", "float32")],
                   "(4, 1024), float32", "layer_norm(%x, %g, %b, epsilon=0.00001)"))
    assert "__local float" in source(lib)
    np.testing.assert_allclose(lib["main"](x, g, b).numpy(), layer_norm(x, g, b), rtol=1e-4, atol=1e-4)


def test_an_integer_sum_across_threads_is_exact(rng):
    a = rng.integers(-1000, 1000, (2, 5000)).astype(np.int32)
    lib = build(fn([("a", "(2, 5000)", "int32")], "(2), int32", "sum(%a, axis=[1])"))
    assert "__local int" in source(lib)
    np.testing.assert_array_equal(lib["main"](a).numpy(), a.sum(axis=1))


def test_many_rows_keep_a_thread_per_row(rng):
    # 4096 rows of 8: a thread per row, no shared memory.
    a = rng.standard_normal((4096, 8)).astype(np.float32)
    lib = build(fn([("a", "(4096, 8)", "float32")], "(4096), float32", "sum(%a, axis=[1])"))
    assert "__local" not in source(lib)
    np.testing.assert_allclose(lib["main"](a).numpy(), a.sum(axis=1), rtol=1e-5, atol=1e-5)
