"""ONNX control flow (docs/frontends.md, "Control flow"): If on a condition
known at import (one branch imported) or computed at run time (the graph
IR's if; branches of different shapes joined by a variable the VM binds),
Loop and Scan with a trip count known at import (unrolled), TopK with a k
computed at run time; against NumPy on random inputs, against PyTorch for
exported modules, and the refusals' messages."""
import io

import numpy as np
import pytest

import loom

from conftest import ROOT, optional_import

onnx = optional_import("onnx")
from onnx import TensorProto, helper  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _build(model, **kw):
    from loom.frontend import onnx as lonnx
    return loom.build(lonnx.from_onnx(model.SerializeToString(), **kw), HOST)


def _outputs(lib, *args):
    out = lib["main"](*args)
    return [out.numpy()] if hasattr(out, "numpy") else [t.numpy() for t in out]


def _branch(name, nodes, outputs):
    return helper.make_graph(nodes, name, [], outputs)


def _value(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


# --------------------------------------------------------------------- If

def test_if_on_a_condition_computed_at_run_time_runs_the_branch_the_data_picks():
    # y = x * 2 if sum(x) > 0 else x - outer, the else branch reading a value of the outer scope
    then_g = _branch("then", [helper.make_node("Mul", ["x", "two"], ["t"])], [_value("t", F, [3, 4])])
    else_g = _branch("else", [helper.make_node("Sub", ["x", "outer"], ["e"])], [_value("e", F, [3, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("Exp", ["x"], ["outer"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = [helper.make_tensor("two", F, [], [2.0]), helper.make_tensor("zero", F, [], [0.0])]
    lib = _build(_model(nodes, [_value("x", F, [3, 4])], [_value("y", F, [3, 4])], inits))
    rng = np.random.default_rng(0)
    for shift in (1.0, -1.0, 1.0):
        x = (rng.standard_normal((3, 4)) + shift).astype(np.float32)
        want = x * 2 if x.sum() > 0 else x - np.exp(x)
        np.testing.assert_allclose(_outputs(lib, x)[0], want, rtol=1e-6)


def test_branches_of_different_shapes_join_in_a_size_the_data_decides():
    # if any(x > 0): the positive elements (Compress) else an empty tensor; then the count and the sum after it
    then_g = _branch("then", [helper.make_node("Greater", ["x", "zero"], ["m"]),
                              helper.make_node("Compress", ["x", "m"], ["t"])], [_value("t", F, [None])])
    else_g = _branch("else", [helper.make_node("Constant", [], ["e"], value=helper.make_tensor("v", F, [0], []))],
                     [_value("e", F, [0])])
    nodes = [helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
             helper.make_node("Greater", ["mx", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Shape", ["y"], ["n"]),
             helper.make_node("Mul", ["y", "y"], ["sq"])]
    inits = [helper.make_tensor("zero", F, [], [0.0])]
    lib = _build(_model(nodes, [_value("x", F, [8])], [_value("n", I64, [1]), _value("sq", F, [None])], inits))
    rng = np.random.default_rng(1)
    for x in (rng.standard_normal(8), -np.abs(rng.standard_normal(8)), np.abs(rng.standard_normal(8))):
        x = x.astype(np.float32)
        n, sq = _outputs(lib, x)
        kept = x[x > 0]
        assert list(n) == [len(kept)]
        np.testing.assert_allclose(sq, kept * kept, rtol=1e-6)


def test_branches_whose_sizes_the_data_decides_differently_are_joined():
    # then: the positive elements; else: those below -1: two counts, one variable after the if
    then_g = _branch("then", [helper.make_node("Greater", ["x", "zero"], ["m"]),
                              helper.make_node("Compress", ["x", "m"], ["t"])], [_value("t", F, [None])])
    else_g = _branch("else", [helper.make_node("Less", ["x", "minus_one"], ["m2"]),
                              helper.make_node("Compress", ["x", "m2"], ["e"])], [_value("e", F, [None])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Add", ["y", "y"], ["z"])]
    inits = [helper.make_tensor("zero", F, [], [0.0]), helper.make_tensor("minus_one", F, [], [-1.0])]
    lib = _build(_model(nodes, [_value("x", F, [9])], [_value("z", F, [None])], inits))
    rng = np.random.default_rng(10)
    for shift in (1.0, -1.0, 0.5, -0.5):
        x = (rng.standard_normal(9) + shift).astype(np.float32)
        kept = x[x > 0] if x.sum() > 0 else x[x < -1]
        np.testing.assert_array_equal(_outputs(lib, x)[0], kept * 2)


def test_if_with_several_outputs_and_a_condition_of_one_element():
    then_g = _branch("then", [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])],
                     [_value("a", F, [4]), _value("b", F, [4])])
    else_g = _branch("else", [helper.make_node("Abs", ["x"], ["a2"]), helper.make_node("Identity", ["x"], ["b2"])],
                     [_value("a2", F, [4]), _value("b2", F, [4])])
    nodes = [helper.make_node("Slice", ["x", "s0", "s1"], ["first"]),
             helper.make_node("Less", ["first", "zero"], ["c"]),  # shape [1]
             helper.make_node("If", ["c"], ["p", "q"], then_branch=then_g, else_branch=else_g)]
    inits = [helper.make_tensor("zero", F, [], [0.0]), helper.make_tensor("s0", I64, [1], [0]),
             helper.make_tensor("s1", I64, [1], [1])]
    lib = _build(_model(nodes, [_value("x", F, [4])], [_value("p", F, [4]), _value("q", F, [4])], inits))
    for x in (np.array([-1, 2, -3, 4], np.float32), np.array([1, -2, 3, -4], np.float32)):
        p, q = _outputs(lib, x)
        if x[0] < 0:
            np.testing.assert_array_equal(p, np.maximum(x, 0)), np.testing.assert_array_equal(q, -x)
        else:
            np.testing.assert_array_equal(p, np.abs(x)), np.testing.assert_array_equal(q, x)


def test_an_if_on_a_condition_known_at_import_imports_only_the_branch_taken():
    from loom.frontend import onnx as lonnx
    # rank == 2 (from Shape, known): the else branch uses an operator with no converter, never imported
    then_g = _branch("then", [helper.make_node("Shape", ["x"], ["t"])], [_value("t", I64, [2])])
    else_g = _branch("else", [helper.make_node("Relu", ["x"], ["e0"]), helper.make_node("Shape", ["e0"], ["e"])],
                     [_value("e", I64, [2])])
    nodes = [helper.make_node("Shape", ["x"], ["shp"]), helper.make_node("Size", ["shp"], ["rank"]),
             helper.make_node("Equal", ["rank", "two"], ["c"]),
             helper.make_node("If", ["c"], ["s"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Reshape", ["x", "s"], ["y"])]  # a Reshape whose target must be known
    model = _model(nodes, [_value("x", F, [2, 3])], [_value("y", F, [2, 3])],
                   [helper.make_tensor("two", I64, [], [2])])
    text = str(lonnx.from_onnx(model.SerializeToString()))
    assert " if " not in text and "if (" not in text
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_outputs(_build(model), x)[0], x)


def test_branches_that_disagree_in_rank_are_refused_naming_the_output():
    then_g = _branch("then", [helper.make_node("Identity", ["x"], ["t"])], [_value("t", F, [2, 2])])
    else_g = _branch("else", [helper.make_node("Flatten", ["x"], ["e"], axis=0)], [_value("e", F, [1, 4])])
    then_g2 = _branch("then", [helper.make_node("Identity", ["x"], ["t"])], [_value("t", F, [2, 2])])
    else_g2 = _branch("else", [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)], [_value("e", F, [])])
    for t, e, words in ((then_g, else_g, None), (then_g2, else_g2, "agree in element type and rank")):
        nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                 helper.make_node("Greater", ["s", "s"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=t, else_branch=e, name="pick")]
        model = _model(nodes, [_value("x", F, [2, 2])], [_value("y", F, None)])
        if words is None:  # same rank, different dimensions: joined
            x = np.ones((2, 2), np.float32)
            assert _outputs(_build(model), x)[0].shape == (1, 4)  # s > s is false
            continue
        with pytest.raises(loom.TypeError, match=r"If 'pick': output 0 \('y'\) is float32\[2, 2\] in the then "
                                                 r"branch and float32\[\] in the else branch; .*" + words):
            _build(model)


def test_an_operator_without_a_converter_inside_a_branch_is_reported_before_any_work():
    then_g = _branch("then", [helper.make_node("Bernoulli", ["x"], ["t"])], [_value("t", F, [])])
    else_g = _branch("else", [helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)], [_value("e", F, [])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "s"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    with pytest.raises(loom.LoomError, match="Bernoulli"):
        _build(_model(nodes, [_value("x", F, [2, 2])], [_value("y", F, [])]))


# ------------------------------------------------------------ Loop, Scan

def _accumulating_loop(trip_count_node, cond_nodes=(), cond_input=""):
    """acc_{i+1} = acc_i * 0.5 + x * i; scan output: acc_{i+1} each iteration;
    the body's condition: cond_nodes (else true)."""
    body_nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"]),
                  helper.make_node("Mul", ["acc_in", "half"], ["decayed"]),
                  helper.make_node("Add", ["decayed", "xi"], ["acc_out"]),
                  helper.make_node("Identity", ["acc_out"], ["scan_out"])] + list(cond_nodes)
    if not cond_nodes:
        body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    body = helper.make_graph(body_nodes, "body",
                             [_value("i", I64, []), _value("cond_in", TensorProto.BOOL, []),
                              _value("acc_in", F, [3])],
                             [_value("cond_out", TensorProto.BOOL, []), _value("acc_out", F, [3]),
                              _value("scan_out", F, [3])])
    nodes = list(trip_count_node) + [
        helper.make_node("Loop", ["M", cond_input, "acc0"], ["acc", "scans"], body=body, name="loop")]
    return nodes


def _loop_reference(x, acc0, steps):
    acc, scans = acc0.copy(), []
    for i in range(steps):
        acc = acc * 0.5 + x * i
        scans.append(acc)
    return acc, np.stack(scans) if scans else np.zeros((0, 3), np.float32)


def test_a_loop_of_a_trip_count_known_at_import_unrolls():
    # M from the input's shape (5): a trip count folded at import
    nodes = _accumulating_loop([helper.make_node("Shape", ["xs"], ["shp"]),
                                helper.make_node("Gather", ["shp", "zero_i"], ["M"], axis=0)])
    inits = [helper.make_tensor("half", F, [], [0.5]), helper.make_tensor("zero_i", I64, [], [0])]
    inputs = [_value("x", F, [3]), _value("acc0", F, [3]), _value("xs", F, [5, 1])]
    lib = _build(_model(nodes, inputs, [_value("acc", F, [3]), _value("scans", F, [5, 3])], inits))
    rng = np.random.default_rng(2)
    x, acc0 = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    acc, scans = _outputs(lib, x, acc0, np.zeros((5, 1), np.float32))
    want_acc, want_scans = _loop_reference(x, acc0, 5)
    np.testing.assert_allclose(acc, want_acc, rtol=1e-5)
    np.testing.assert_allclose(scans, want_scans, rtol=1e-5)


def test_a_loop_whose_body_stops_it_on_a_known_condition_and_a_loop_of_no_iteration():
    # cond_out = i + 1 < 3 with M = 10: three iterations
    stop = [helper.make_node("Add", ["i", "one_i"], ["next"]),
            helper.make_node("Less", ["next", "three"], ["cond_out"])]
    inits = [helper.make_tensor("half", F, [], [0.5]), helper.make_tensor("one_i", I64, [], [1]),
             helper.make_tensor("three", I64, [], [3]), helper.make_tensor("M", I64, [], [10]),
             helper.make_tensor("go", TensorProto.BOOL, [], [True])]
    inputs = [_value("x", F, [3]), _value("acc0", F, [3])]
    x, acc0 = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    lib = _build(_model(_accumulating_loop([], stop, "go"), inputs, [_value("acc", F, [3]), _value("scans", F, None)],
                        inits))
    acc, scans = _outputs(lib, x, acc0)
    want_acc, want_scans = _loop_reference(x, acc0, 3)
    np.testing.assert_allclose(acc, want_acc), np.testing.assert_allclose(scans, want_scans)
    # M = 0: the carried value as given, the scan output empty
    inits[3] = helper.make_tensor("M", I64, [], [0])
    lib = _build(_model(_accumulating_loop([], stop, "go"), inputs, [_value("acc", F, [3]), _value("scans", F, None)],
                        inits))
    acc, scans = _outputs(lib, x, acc0)
    np.testing.assert_array_equal(acc, acc0)
    assert scans.shape == (0, 3)


def test_a_loop_whose_trip_count_is_computed_at_run_time_runs_in_the_vm():
    # M an input: a graph function calling itself in tail position, the scan output growing
    inits = [helper.make_tensor("half", F, [], [0.5])]
    inputs = [_value("x", F, [3]), _value("acc0", F, [3]), _value("M", I64, [])]
    lib = _build(_model(_accumulating_loop([]), inputs, [_value("acc", F, [3]), _value("scans", F, None)], inits))
    rng = np.random.default_rng(7)
    x, acc0 = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    for steps in (0, 1, 6, 300):
        acc, scans = _outputs(lib, x, acc0, np.array(steps, np.int64))
        want_acc, want_scans = _loop_reference(x, acc0, steps)
        np.testing.assert_allclose(acc, want_acc, rtol=1e-4)
        np.testing.assert_allclose(scans, want_scans, rtol=1e-4)


def test_a_loop_whose_body_decides_when_to_stop_and_reads_outer_values():
    # while sum(acc) < limit (an input) and i < 10000: acc = acc * 0.5 + x * i, x read from the outer scope
    stop = [helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["cond_out"])]
    inits = [helper.make_tensor("half", F, [], [0.5]), helper.make_tensor("M", I64, [], [10000])]
    inputs = [_value("x", F, [3]), _value("acc0", F, [3]), _value("limit", F, []),
              _value("go", TensorProto.BOOL, [])]
    lib = _build(_model(_accumulating_loop([], stop, "go"), inputs, [_value("acc", F, [3]), _value("scans", F, None)],
                        inits))
    x, acc0 = np.array([0.5, 1.0, 1.5], np.float32), np.zeros(3, np.float32)
    for limit, go in ((50.0, True), (7.0, True), (1e4, True), (50.0, False)):
        acc, scans = _outputs(lib, x, acc0, np.array(limit, np.float32), np.array(go))
        want, steps = acc0.copy(), []
        while go:
            want = want * 0.5 + x * len(steps)
            steps.append(want)
            go = want.sum() < limit and len(steps) < 10000
        np.testing.assert_allclose(acc, want, rtol=1e-4)
        assert scans.shape == (len(steps), 3)
        if steps:
            np.testing.assert_allclose(scans, np.stack(steps), rtol=1e-4)


def test_a_loop_whose_carried_value_grows_and_a_long_loop(tmp_path):
    # v = concat(v, [i]) for i < M: the carried value's length changes every iteration
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Unsqueeze", ["fi", "zero_axis"], ["col"]),
         helper.make_node("Concat", ["v_in", "col"], ["v_out"], axis=0),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [_value("i", I64, []), _value("c_in", TensorProto.BOOL, []), _value("v_in", F, [None])],
        [_value("c_out", TensorProto.BOOL, []), _value("v_out", F, [None])])
    node = helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)
    lib = _build(_model([node], [_value("M", I64, []), _value("v0", F, [2])], [_value("v", F, None)],
                        [helper.make_tensor("zero_axis", I64, [1], [0])]))
    lib.export_library(str(tmp_path / "grow.so"))  # the executable keeps its tail calls
    lib = loom.runtime.load_module(str(tmp_path / "grow.so"))
    v0 = np.array([7, 8], np.float32)
    for steps in (0, 3, 20000):  # 20000 calls in tail position: no stack grows
        v, = _outputs(lib, np.array(steps, np.int64), v0)
        np.testing.assert_array_equal(v, np.concatenate([v0, np.arange(steps, dtype=np.float32)]))


def test_a_loop_body_reading_a_symbolic_size_of_the_outer_scope():
    # acc += x + ones(shape(x)) for M iterations, x of symbolic length: the body reads x's size as its own
    body = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shp"]),
         helper.make_node("ConstantOfShape", ["shp"], ["ones"], value=helper.make_tensor("one", F, [1], [1.0])),
         helper.make_node("Add", ["x", "ones"], ["step"]), helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [_value("i", I64, []), _value("c_in", TensorProto.BOOL, []), _value("acc_in", F, ["n"])],
        [_value("c_out", TensorProto.BOOL, []), _value("acc_out", F, ["n"])])
    node = helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)
    lib = _build(_model([node], [_value("M", I64, []), _value("x", F, ["n"]), _value("acc0", F, ["n"])],
                        [_value("acc", F, ["n"])]))
    rng = np.random.default_rng(11)
    for n, steps in ((3, 4), (5, 100), (1, 0)):
        x, acc0 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        got, = _outputs(lib, np.array(steps, np.int64), x, acc0)
        np.testing.assert_allclose(got, acc0 + steps * (x + 1), rtol=1e-5)


def test_scan_forward_and_backward_along_axes_against_numpy():
    # state = state + x_t; outputs: the running state (forward, stacked on axis 0) and x_t * 2 (reversed, axis 1)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Mul", ["x_t", "two"], ["y_t"]),
         helper.make_node("Identity", ["s_out"], ["run_t"])],
        "body", [_value("s_in", F, [2]), _value("x_t", F, [2])],
        [_value("s_out", F, [2]), _value("run_t", F, [2]), _value("y_t", F, [2])])
    node = helper.make_node("Scan", ["s0", "xs"], ["s", "runs", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[0, 1],
                            scan_output_directions=[0, 1])
    lib = _build(_model([node], [_value("s0", F, [2]), _value("xs", F, [2, 5])],
                        [_value("s", F, [2]), _value("runs", F, [5, 2]), _value("ys", F, [2, 5])],
                        [helper.make_tensor("two", F, [], [2.0])]))
    rng = np.random.default_rng(3)
    s0, xs = rng.standard_normal(2).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    s, runs, ys = _outputs(lib, s0, xs)
    steps = [xs[:, t] for t in reversed(range(5))]  # scanned backwards along axis 1
    want_runs = np.stack([s0 + sum(steps[:k + 1]) for k in range(5)])
    np.testing.assert_allclose(s, s0 + xs.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(runs, want_runs, rtol=1e-5)
    np.testing.assert_allclose(ys, np.stack([x * 2 for x in steps][::-1], axis=1), rtol=1e-6)


# ------------------------------------------------------------------- TopK

def test_topk_with_k_computed_at_run_time():
    # k = min(3, count of positive scores): a detector's "keep the best k of what survived"
    nodes = [helper.make_node("Greater", ["x", "zero"], ["m"]), helper.make_node("Compress", ["x", "m"], ["pos"]),
             helper.make_node("Shape", ["pos"], ["n"]), helper.make_node("Min", ["n", "three"], ["k"]),
             helper.make_node("TopK", ["pos", "k"], ["v", "i"])]
    inits = [helper.make_tensor("zero", F, [], [0.0]), helper.make_tensor("three", I64, [1], [3])]
    lib = _build(_model(nodes, [_value("x", F, [7])], [_value("v", F, None), _value("i", I64, None)], inits))
    rng = np.random.default_rng(4)
    for x in (rng.standard_normal(7), np.array([1, -1, 2, 2, -3, -1, -1]), -np.ones(7)):
        x = x.astype(np.float32)
        pos = x[x > 0]
        order = sorted(range(len(pos)), key=lambda j: (-pos[j], j))[:3]
        v, i = _outputs(lib, x)
        np.testing.assert_array_equal(i, order)
        np.testing.assert_array_equal(v, pos[order])


def test_topk_k_from_an_input_along_an_inner_axis_smallest_first():
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)
    lib = _build(_model([node], [_value("x", F, [2, 6, 3]), _value("k", I64, [1])],
                        [_value("v", F, None), _value("i", I64, None)]))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    for k in (0, 2, 6):
        v, i = _outputs(lib, x, np.array([k], np.int64))
        want = np.argsort(x, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(i, want)
        np.testing.assert_array_equal(v, np.take_along_axis(x, want, axis=1))
    with pytest.raises(loom.LoomError, match="runtime.topk: k is 7, but axis 1 has 6 elements"):
        lib["main"](x, np.array([7], np.int64))


# -------------------------------------------------------- exported modules

torch = optional_import("torch")


class _Gate(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            y = torch.relu(x) * 2
        else:
            y = x[x < -0.5]
        return y.sum(0, keepdim=True) + y.shape[0]


def _export(module, examples, names):
    """The ONNX bytes torch.onnx.export (TorchScript's exporter) writes."""
    buffer = io.BytesIO()
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(module, examples, buffer, opset_version=13, input_names=names, **kw)
    return buffer.getvalue()


def test_a_scripted_module_with_a_data_dependent_if_against_pytorch():
    from loom.frontend import onnx as lonnx
    module = torch.jit.script(_Gate())
    example = torch.randn(6)
    lib = loom.build(lonnx.from_onnx(_export(module, (example,), ["x"])), HOST)
    rng = np.random.default_rng(6)
    for x in (np.abs(rng.standard_normal(6)), -np.abs(rng.standard_normal(6)) - 0.1, rng.standard_normal(6)):
        x = x.astype(np.float32)
        want = module(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(_outputs(lib, x)[0], want, rtol=1e-5, atol=1e-6)


class _Halve(torch.nn.Module):
    """A while loop on the data and a for loop over a size: ONNX Loops whose
    condition and trip count are computed at run time."""

    def forward(self, x, n: int):
        steps = torch.zeros(1)
        while bool(x.abs().sum() > 1.0):
            x = x * 0.5
            steps = steps + 1
        total = torch.zeros_like(x)
        for i in range(n):
            total = total + x * float(i)
        return x, steps, total


def test_a_scripted_module_with_loops_against_pytorch():
    from loom.frontend import onnx as lonnx
    module = torch.jit.script(_Halve())
    lib = loom.build(lonnx.from_onnx(_export(module, (torch.randn(4), 3), ["x", "n"])), HOST)
    rng = np.random.default_rng(8)
    for scale, n in ((0.1, 0), (3.0, 5), (100.0, 2)):
        x = (rng.standard_normal(4) * scale).astype(np.float32)
        want = [t.numpy() for t in module(torch.from_numpy(x), n)]
        got = _outputs(lib, x, np.array(n, np.int64))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


# --------------------------------------------------- graph functions, the VM

def test_a_call_binds_the_callees_shape_variables_and_a_recursion_too_deep_is_an_error():
    from loom import graph, ir, op, tir
    n = tir.Var("n")
    x = graph.Var("x", shape=(n,), dtype="float32")
    double = ir.GlobalVar("double")
    a, b = graph.Var("a", shape=(3,), dtype="float32"), graph.Var("b", shape=(5,), dtype="float32")
    on_a, on_b = graph.Call(double, [a]), graph.Call(double, [b])
    module = ir.IRModule({"double": graph.Function([x], op.concat(x, op.add(x, x), axis=0)),  # (%n + %n)
                          "main": graph.Function([a, b], graph.Tuple([on_a, on_b]))})
    for call, length in ((on_a, 6), (on_b, 10)):  # n bound per call, the result's size computed
        assert [int(d.value) for d in ir.infer_type(call, module).shape] == [length]
    lib = loom.build(module, HOST)
    got = lib["main"](np.arange(3, dtype=np.float32), np.ones(5, np.float32))
    np.testing.assert_array_equal(got[0].numpy(), [0, 1, 2, 0, 2, 4])
    np.testing.assert_array_equal(got[1].numpy(), [1] * 5 + [2] * 5)
    # depth(i) = if i > 0 then depth(i - 1) + 1 else 0: the call is not in tail position, so each nests
    i = graph.Var("i", shape=(), dtype="int64")
    depth = ir.GlobalVar("depth")
    one = graph.Constant(np.int64(1))
    body = graph.If(op.greater(i, graph.Constant(np.int64(0))),
                    op.add(graph.Call(depth, [op.subtract(i, one)]), one), graph.Constant(np.int64(0)))
    j = graph.Var("j", shape=(), dtype="int64")
    module = ir.IRModule({"depth": graph.Function([i], body, ret_type=ir.TensorType([], "int64")),
                          "main": graph.Function([j], graph.Call(depth, [j]))})
    lib = loom.build(module, HOST)
    assert lib["main"](np.array(100, np.int64)).numpy() == 100
    with pytest.raises(loom.LoomError, match=r"@depth: graph function calls nest deeper than 256 \(a recursion that "
                                             r"does not end, or one whose call is not in tail position\)"):
        lib["main"](np.array(100000, np.int64))


class _Nested(torch.nn.Module):
    """Loops in a loop, an if in a loop: functions calling functions."""

    def forward(self, x, n: int):
        out = torch.zeros_like(x)
        for i in range(n):
            for j in range(i):
                out = out + x * float(j)
            if bool(out.sum() > 10.0):
                out = out * 0.5
        return out


def test_nested_loops_and_an_if_in_a_loop_against_pytorch(tmp_path):
    from loom.frontend import onnx as lonnx
    module = torch.jit.script(_Nested())
    lib = loom.build(lonnx.from_onnx(_export(module, (torch.randn(3), 2), ["x", "n"])), HOST)
    lib.export_library(str(tmp_path / "nested.so"))  # the tail calls survive saving and loading
    lib = loom.runtime.load_module(str(tmp_path / "nested.so"))
    rng = np.random.default_rng(9)
    for n in (0, 1, 4, 9):
        x = rng.standard_normal(3).astype(np.float32)
        want = module(torch.from_numpy(x), n).numpy()
        np.testing.assert_allclose(_outputs(lib, x, np.array(n, np.int64))[0], want, rtol=1e-5, atol=1e-6)
