"""Values the data decides used as sizes (docs/frontends.md, "Sizes
computed from the data"): ConstantOfShape and Resize at sizes computed
when the model runs (runtime.dims binds them), the shape arithmetic that
made such a size followed back to the dimensions it copies, sizes that
ONNX requires equal checked when the model runs (runtime.bind_shape),
and loops whose bodies need them; against NumPy and PyTorch on inputs
that give other sizes than the example's, and errors that name the size."""
import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import

onnx = optional_import("onnx")
from onnx import TensorProto as T, helper as h  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


def _build(nodes, inputs, outputs, inits=(), opset=13):
    from loom.frontend import onnx as lonnx
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    module = lonnx.from_onnx(model.SerializeToString())
    return module, loom.build(module, HOST)


def _ints(name, values):
    return h.make_tensor(name, T.INT64, [len(values)], values)


def _box_sizes():
    """The nodes computing int64 sizes (2,) = ceil(box[2:4] - box[0:2])
    from a float box (4,) (the height and width of a box, as Mask R-CNN's
    paste computes them), with their constants."""
    nodes = [h.make_node("Slice", ["box", "s0", "s2", "ax0"], ["lo"]),
             h.make_node("Slice", ["box", "s2", "s4", "ax0"], ["hi"]),
             h.make_node("Sub", ["hi", "lo"], ["extent"]),
             h.make_node("Ceil", ["extent"], ["extent_up"]),
             h.make_node("Cast", ["extent_up"], ["hw"], to=T.INT64)]
    inits = [_ints("s0", [0]), _ints("s2", [2]), _ints("s4", [4]), _ints("ax0", [0])]
    return nodes, inits


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_resize_to_a_size_the_data_decides_matches_pytorch(mode):
    torch = optional_import("torch")
    nodes, inits = _box_sizes()
    nodes += [h.make_node("Concat", ["ones", "hw"], ["sizes"], axis=0),
              h.make_node("Resize", ["mask", "", "", "sizes"], ["out"], mode=mode,
                          **({"nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"}
                             if mode == "nearest" else {}))]
    inits += [_ints("ones", [1, 2])]
    module, lib = _build(nodes, [h.make_tensor_value_info("mask", T.FLOAT, [1, 2, 28, 28]),
                                 h.make_tensor_value_info("box", T.FLOAT, [4])],
                         [h.make_tensor_value_info("out", T.FLOAT, None)], inits)
    assert "runtime.dims" in str(module)
    rng = np.random.default_rng(0)
    mask = rng.standard_normal((1, 2, 28, 28)).astype(np.float32)
    for box in ([0, 0, 10.2, 17], [3, 5, 40, 9], [1, 1, 2, 2], [0, 0, 28, 28]):
        box = np.array(box, np.float32)
        size = tuple(int(v) for v in np.ceil(box[2:] - box[:2]))
        kind = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}[mode]
        ref = torch.nn.functional.interpolate(torch.from_numpy(mask), size=size, mode=kind,
                                              **({} if mode == "nearest" else {"align_corners": False})).numpy()
        got = lib["main"](mask, box).numpy()
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_a_negative_size_is_an_error_naming_it():
    nodes, inits = _box_sizes()
    nodes += [h.make_node("ConstantOfShape", ["hw"], ["out"],
                          value=h.make_tensor("v", T.FLOAT, [1], [2.5]))]
    _, lib = _build(nodes, [h.make_tensor_value_info("box", T.FLOAT, [4])],
                    [h.make_tensor_value_info("out", T.FLOAT, None)], inits)
    np.testing.assert_array_equal(lib["main"](np.array([0, 0, 2, 3], np.float32)).numpy(), np.full((2, 3), 2.5))
    with pytest.raises(loom.LoomError, match=r"runtime\.dims: size 1 is -3, and a size cannot be negative"):
        lib["main"](np.array([0, 5, 2, 2], np.float32))


def test_a_size_built_from_a_dimension_keeps_that_dimension():
    # zeros of (the data's count, y's width) joined to y: the width is y's
    # own dimension, not a second one to check
    nodes = [h.make_node("ReduceSum", ["flags"], ["count_f"], keepdims=1),
             h.make_node("Cast", ["count_f"], ["count"], to=T.INT64),
             h.make_node("Shape", ["y"], ["y_shape"]),
             h.make_node("Gather", ["y_shape", "one"], ["width"], axis=0),
             h.make_node("Unsqueeze", ["width", "ax0"], ["width_1"]),
             h.make_node("Concat", ["count", "width_1"], ["shape"], axis=0),
             h.make_node("ConstantOfShape", ["shape"], ["zeros"]),
             h.make_node("Concat", ["zeros", "y"], ["out"], axis=0)]
    inits = [h.make_tensor("one", T.INT64, [], [1]), _ints("ax0", [0])]
    module, lib = _build(nodes, [h.make_tensor_value_info("flags", T.FLOAT, [5]),
                                 h.make_tensor_value_info("y", T.FLOAT, [3, "w"])],
                         [h.make_tensor_value_info("out", T.FLOAT, None)], inits)
    assert "runtime.bind_shape" not in str(module)
    rng = np.random.default_rng(1)
    for flags, width in (([1, 0, 1, 1, 0], 4), ([0, 0, 0, 0, 0], 7), ([1, 1, 1, 1, 1], 1)):
        y = rng.standard_normal((3, width)).astype(np.float32)
        got = lib["main"](np.array(flags, np.float32), y).numpy()
        np.testing.assert_array_equal(got, np.concatenate([np.zeros((sum(flags), width), np.float32), y]))


@pytest.mark.parametrize("op_type", ["Add", "Concat", "Where"])
def test_sizes_that_must_be_equal_are_checked_when_the_model_runs(op_type):
    # two inputs whose lengths have different names: equal when the model runs, or an error naming both
    inputs = [h.make_tensor_value_info("a", T.FLOAT, ["n", 2]), h.make_tensor_value_info("b", T.FLOAT, ["m", 2])]
    if op_type == "Add":
        nodes, ref = [h.make_node("Add", ["a", "b"], ["out"])], lambda a, b: a + b
    elif op_type == "Concat":
        inputs[1] = h.make_tensor_value_info("b", T.FLOAT, [2, "m"])
        nodes = [h.make_node("Transpose", ["b"], ["bt"], perm=[1, 0]),
                 h.make_node("Concat", ["a", "bt"], ["out"], axis=1)]
        ref = lambda a, b: np.concatenate([a, b.T], axis=1)  # noqa: E731
    else:
        nodes = [h.make_node("Greater", ["a", "b"], ["c"]), h.make_node("Where", ["c", "a", "b"], ["out"])]
        ref = np.maximum
    _, lib = _build(nodes, inputs, [h.make_tensor_value_info("out", T.FLOAT, None)])
    rng = np.random.default_rng(2)
    for n in (1, 4):
        a = rng.standard_normal((n, 2)).astype(np.float32)
        b = rng.standard_normal((n, 2) if op_type != "Concat" else (2, n)).astype(np.float32)
        np.testing.assert_allclose(lib["main"](a, b).numpy(), ref(a, b), rtol=1e-6)
    a = rng.standard_normal((3, 2)).astype(np.float32)
    b = rng.standard_normal((4, 2) if op_type != "Concat" else (2, 4)).astype(np.float32)
    with pytest.raises(loom.LoomError, match=r"bind_shape.*(dimension 0 is 4, but %n is 3|dimension 0 is 3, but %m "
                                             r"is 4)"):
        lib["main"](a, b)


def _loop(body_nodes, body_inputs, body_outputs, body_inits=()):
    body = h.make_graph(body_nodes, "body", body_inputs, body_outputs, list(body_inits))
    return h.make_node("Loop", ["trip", "", "total0"], ["total"], body=body)


def test_a_loop_body_sizes_a_tensor_by_a_slice_it_makes_later():
    # each iteration: s = x[i : i + 2] (bounds known when it runs), ones of
    # s's shape joined before s, summed: the ones need s's size before s
    # comes in the code, inside the loop's branch
    body_nodes = [h.make_node("Unsqueeze", ["i", "ax0"], ["start"]),
                  h.make_node("Add", ["start", "two"], ["end"]),
                  h.make_node("Slice", ["x", "start", "end"], ["s"]),
                  h.make_node("Shape", ["s"], ["s_shape"]),
                  h.make_node("ConstantOfShape", ["s_shape"], ["ones"],
                              value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
                  h.make_node("Concat", ["ones", "s"], ["joined"], axis=0),
                  h.make_node("ReduceSum", ["joined"], ["step"], keepdims=0),
                  h.make_node("Add", ["total_in", "step"], ["total_out"]),
                  h.make_node("Identity", ["cond_in"], ["cond_out"])]
    body_inits = [_ints("ax0", [0]), _ints("two", [2])]
    loop = _loop(body_nodes, [h.make_tensor_value_info("i", T.INT64, []),
                              h.make_tensor_value_info("cond_in", T.BOOL, []),
                              h.make_tensor_value_info("total_in", T.FLOAT, [])],
                 [h.make_tensor_value_info("cond_out", T.BOOL, []),
                  h.make_tensor_value_info("total_out", T.FLOAT, [])], body_inits)
    _, lib = _build([loop], [h.make_tensor_value_info("trip", T.INT64, []),
                             h.make_tensor_value_info("total0", T.FLOAT, []),
                             h.make_tensor_value_info("x", T.FLOAT, ["n"])],
                    [h.make_tensor_value_info("total", T.FLOAT, [])])
    rng = np.random.default_rng(3)
    for trip, n in ((0, 3), (4, 5), (7, 5)):  # past the end, the slices are shorter, then empty
        x = rng.standard_normal(n).astype(np.float32)
        want = sum(len(x[i:i + 2]) + x[i:i + 2].sum() for i in range(trip))
        got = lib["main"](np.array(trip, np.int64), np.array(0, np.float32), x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_loop_reads_an_outer_value_whose_size_is_a_minimum():
    # the body reads x[:3] (length min(n, 3): a size the VM cannot bind
    # from the argument alone), including when it is empty
    body_nodes = [h.make_node("ReduceSum", ["head"], ["step"], keepdims=0),
                  h.make_node("Add", ["total_in", "step"], ["total_out"]),
                  h.make_node("Identity", ["cond_in"], ["cond_out"])]
    loop = _loop(body_nodes, [h.make_tensor_value_info("i", T.INT64, []),
                              h.make_tensor_value_info("cond_in", T.BOOL, []),
                              h.make_tensor_value_info("total_in", T.FLOAT, [])],
                 [h.make_tensor_value_info("cond_out", T.BOOL, []),
                  h.make_tensor_value_info("total_out", T.FLOAT, [])])
    nodes = [h.make_node("Slice", ["x", "s0", "s3"], ["head"]), loop]
    _, lib = _build(nodes, [h.make_tensor_value_info("trip", T.INT64, []),
                            h.make_tensor_value_info("total0", T.FLOAT, []),
                            h.make_tensor_value_info("x", T.FLOAT, ["n"])],
                    [h.make_tensor_value_info("total", T.FLOAT, [])], [_ints("s0", [0]), _ints("s3", [3])])
    rng = np.random.default_rng(4)
    for n in (0, 2, 3, 6):
        x = rng.standard_normal(n).astype(np.float32)
        got = lib["main"](np.array(5, np.int64), np.array(1, np.float32), x).numpy()
        np.testing.assert_allclose(got, 1 + 5 * x[:3].sum(), rtol=1e-5, atol=1e-6)


def test_a_size_computed_from_negative_values_or_a_division_is_the_sizes_own():
    # width = box[2] - box[0] with box[0] negative (a box past the image's
    # edge), height = 10 + (box[3] - box[1]) / 2 in ONNX's truncating
    # division: what the VM binds is each size, not the values it is
    # computed from
    def at(k):
        return [h.make_node("Gather", ["box", f"i{k}"], [f"b{k}"], axis=0)]
    nodes = at(0) + at(1) + at(2) + at(3) + [
        h.make_node("Sub", ["b2", "b0"], ["width"]),
        h.make_node("Sub", ["b3", "b1"], ["rise"]),
        h.make_node("Div", ["rise", "two"], ["half"]),
        h.make_node("Add", ["half", "ten"], ["height"]),
        h.make_node("Unsqueeze", ["height", "ax0"], ["height_1"]),
        h.make_node("Unsqueeze", ["width", "ax0"], ["width_1"]),
        h.make_node("Concat", ["height_1", "width_1"], ["shape"], axis=0),
        h.make_node("ConstantOfShape", ["shape"], ["out"], value=h.make_tensor("v", T.FLOAT, [1], [1.0]))]
    inits = [h.make_tensor(f"i{k}", T.INT64, [], [k]) for k in range(4)] + \
        [h.make_tensor("two", T.INT64, [], [2]), h.make_tensor("ten", T.INT64, [], [10]), _ints("ax0", [0])]
    _, lib = _build(nodes, [h.make_tensor_value_info("box", T.INT64, [4])],
                    [h.make_tensor_value_info("out", T.FLOAT, None)], inits)
    for box in ([-3, 4, 10, 3], [0, 0, 7, 9], [-8, -2, -1, -5]):
        height = 10 + int((box[3] - box[1]) / 2)  # truncated toward zero
        got = lib["main"](np.array(box, np.int64)).numpy()
        assert got.shape == (height, box[2] - box[0])
