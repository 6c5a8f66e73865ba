"""Bad input from Python (docs/python.md, "Errors"): each case must raise
the named exception with its message; none may crash the interpreter.
Builders, passes, contexts, schedules, runtime calls and conversions."""
import numpy as np
import pytest

import loom
from loom import graph, ir, op, tir, transform

A = tir.Buffer("A", (8,))
I = tir.Var("i")
x = graph.Var("x", shape=(2, 3))
empty = loom.IRModule({})


def json_with(edit):
    """A module's JSON (@main = fn(%x) { relu(%x) }) after `edit(nodes)`
    changed its node list: the held-out inputs that once crashed script()
    and the well-formedness check."""
    import json
    x_ = graph.Var("x", shape=(3,))
    doc = json.loads(ir.save_json(loom.IRModule({"main": graph.Function([x_], op.relu(x_))})))
    edit({n["type"] + str(k): n for k, n in enumerate(doc["nodes"])}, doc["nodes"])
    return json.dumps(doc)


def _param_not_a_var(named, nodes):
    function = next(n for n in nodes if n["type"] == "graph.Function")
    params = nodes[function["fields"]["params"]["ref"]]
    params["items"] = [{"ref": next(k for k, n in enumerate(nodes) if n["type"] == "tir.IntImm")}]


def _function_not_a_function(named, nodes):
    module = next(n for n in nodes if n["type"] == "ir.IRModule")
    functions = nodes[module["fields"]["functions"]["ref"]]
    functions["items"]["main"] = {"ref": next(k for k, n in enumerate(nodes) if n["type"] == "ir.TensorType")}


def _call_arg_not_an_expr(named, nodes):
    call = next(n for n in nodes if n["type"] == "graph.Call")
    nodes[call["fields"]["args"]["ref"]]["items"] = [{"ref": next(k for k, n in enumerate(nodes)
                                                                  if n["type"] == "ir.TensorType")}]


def instrument(**methods):
    return type("Instrument", (), methods)()


CASES = [
    # builders
    ("load from none", lambda: loom._ffi.call("tir.BufferLoad", None, []), loom.TypeError, "buffer is required, got none"),
    ("store to none", lambda: tir.BufferStore(None, 1.0, [0]), loom.TypeError, "must be a tir.Buffer, got NoneType"),
    ("add none", lambda: loom._ffi.call("tir.Add", None, None), loom.TypeError, "an operand is undefined"),
    ("loop without body", lambda: tir.For(tir.Var("i"), 0, 8, None), loom.TypeError, "body is required"),
    ("unknown loop kind", lambda: tir.For(tir.Var("i"), 0, 8, tir.Evaluate(0), kind="fast"), loom.TypeError,
     "unknown loop kind 'fast'"),
    ("int as a parameter", lambda: tir.PrimFunc([3], tir.Evaluate(0)), loom.TypeError, r"params\[0\] must be"),
    ("str as an input", lambda: op.relu("x"), loom.TypeError, "must be a graph expression, got str"),
    ("None as a body", lambda: graph.Function([], None), loom.TypeError, "got NoneType"),
    ("int as a param", lambda: graph.Function([1], x), loom.TypeError, "expected graph.Var, got int 1"),
    ("list as a module", lambda: loom.IRModule([1]), loom.TypeError, "dict of name: function"),
    ("str dimension", lambda: ir.TensorType(("a",)), loom.TypeError, "a dimension is an int"),
    ("bad dtype", lambda: tir.Var("x", "floaty"), loom.LoomError, "invalid data type 'floaty'"),
    ("negative tuple index", lambda: graph.TupleGetItem(x, -1), loom.TypeError, "index must be >= 0"),
    ("object constant", lambda: graph.Constant(object()), loom.TypeError, "a constant holds numbers"),
    ("ragged constant", lambda: graph.Constant([[1, 2], [3]]), loom.TypeError, "cannot make a tensor"),
    ("None type in a signature", lambda: ir.ExternFunc("asm", "", [None]), loom.TypeError, "must be a ir.Type"),
    ("field of the wrong type", lambda: ir.make("tir.IntImm", value="x"), loom.TypeError, "expected int, got str"),
    ("node without a required field", lambda: ir.make("graph.Let", body=x), loom.TypeError,
     "'graph.Let' needs field 'var' \\(graph.Var\\)"),
    ("abstract type", lambda: ir.make("tir.PrimExpr"), TypeError, "abstract"),
    ("unknown type key", lambda: ir.make("tir.Ad"), loom.LookupError, "tir.Add"),
    ("unknown field", lambda: A.shap, AttributeError, "did you mean 'shape'"),
    ("int overflow", lambda: tir.const(2 ** 70), ValueError, "does not fit in 64 bits"),
    ("unconvertible value", lambda: ir.structural_equal(object(), 1), loom.TypeError, "cannot pass a Python object"),
    ("subscript a var", lambda: tir.Var("i")[0], loom.TypeError, "not subscriptable"),
    # passes and contexts
    ("pass on None", lambda: transform.get_pass("InferType")(None), loom.TypeError, "got none"),
    ("pass on a function", lambda: transform.get_pass("InferType")(graph.Function([], x)), loom.TypeError,
     "got object graph.Function"),
    ("misspelt pass", lambda: transform.get_pass("InferTyp"), loom.LookupError, "did you mean 'InferType'"),
    ("unknown config key", lambda: transform.PassContext(config={"nope.x": 1}), loom.TypeError, "unknown config option"),
    ("None instrument", lambda: transform.PassContext(instruments=[None]), TypeError, "an instrument is an object"),
    ("pass variant not a function", lambda: transform.function_pass(lambda f, m, c: f, variant="tir.Var",
                                                                     register=False), loom.TypeError,
     "applies to a function variant"),
    ("unknown option type", lambda: transform.module_pass(lambda m, c: m, name="BadOptionType",
                                                          options={"k": ("integer", 1)}), loom.LoomError,
     "unknown type 'integer'"),
    ("instrument raising", lambda: transform.get_pass("InferType")(
        empty, transform.PassContext(instruments=[instrument(before=lambda s, i, m: 1 / 0)])), ZeroDivisionError, ""),
    # schedules
    ("schedule of None", lambda: tir.Schedule(None), loom.TypeError, "takes a tir.PrimFunc"),
    ("unknown loop", lambda: tir.Schedule(tir.PrimFunc([A], tir.Evaluate(0))).split("zz", 2), loom.ScheduleError,
     "no loop %zz"),
    ("bad layout", lambda: tir.Schedule(tir.PrimFunc([A], tir.Evaluate(0))).cache_read("A", 3), TypeError,
     "list of axes or a function"),
    # runtime
    ("str as a module", lambda: loom.build("@main = fn() { 1 }", {"target": {"kind": "ref"}}), loom.TypeError,
     "takes an IRModule"),
    ("wrong config type", lambda: loom.build(empty, 3), loom.TypeError, "YAML path, a dict or a loom.Config"),
    ("unknown YAML key", lambda: loom.build(empty, {"target": {"kind": "ref"}, "pipline": {}}), loom.ConfigError,
     "did you mean 'pipeline'"),
    ("missing config file", lambda: loom.build(empty, "/nonexistent.yaml"), loom.LoomError, "/nonexistent.yaml"),
    ("unknown target kind", lambda: loom.build(empty, {"target": {"kind": "llvn"}}), loom.ConfigError,
     "did you mean 'llvm'"),
    ("missing function", lambda: loom.runtime.get_global_func("nope.nothing"), loom.LookupError, "nope.nothing"),
    ("from_dlpack of a list", lambda: loom.nd.from_dlpack([1, 2]), loom.TypeError, "not a DLPack tensor"),
    ("empty with a bad shape", lambda: loom.nd.empty((-1,)), loom.LoomError, ""),
    ("load a missing library", lambda: loom.runtime.load_module("/nonexistent.so"), loom.LoomError, "nonexistent"),
    ("load a missing plugin", lambda: loom.plugins.load("nope"), loom.LoomError, "nope"),
    ("float loop extent", lambda: tir.For(tir.Var("i"), 0, 4.0, tir.Evaluate(0)), loom.TypeError,
     "the float 4.0 where a int64 is expected"),
    ("ill-formed: a variable bound twice", lambda: loom.build(loom.IRModule({"k": tir.PrimFunc([A], tir.For(
        I, 0, 8, tir.For(I, 0, 8, tir.Evaluate(0))))}), {"target": {"kind": "ref"}}), loom.LoomError,
     "(?s)not well formed.*'%i' is bound twice"),
    ("ill-formed: lanes of a store", lambda: loom.build(loom.IRModule({"k": tir.PrimFunc([A], tir.BufferStore(
        A, tir.Broadcast(1.0, 4), [tir.Ramp(0, 1, 2)]))}), {"target": {"kind": "llvm"}}), loom.LoomError,
     "stores a value of 4 lanes at an index of 2 lanes"),
    ("parse garbage", lambda: loom.parse("@main = fn(", "bad.loom"), loom.ParseError, "bad.loom:1:"),
    # nodes read from JSON or made by reflection: every field holds its kind
    ("JSON: a parameter that is not a variable", lambda: ir.load_json(json_with(_param_not_a_var)), loom.ParseError,
     "field 'params' of graph.Function: element 0: expected graph.Var, got object tir.IntImm"),
    ("JSON: a function that is not a function", lambda: ir.load_json(json_with(_function_not_a_function)),
     loom.ParseError, "field 'functions' of ir.IRModule: entry 'main': expected ir.BaseFunc, got object ir.TensorType"),
    ("JSON: an argument that is not an expression", lambda: ir.load_json(json_with(_call_arg_not_an_expr)),
     loom.ParseError, "field 'args' of graph.Call: element 0: expected ir.Expr, got object ir.TensorType"),
    ("make: a tuple of ints", lambda: ir.make("graph.Tuple", fields=[1]), loom.TypeError,
     "field 'fields' of graph.Tuple: element 0: expected ir.Expr, got int 1"),
    ("make: a shape holding a type", lambda: ir.make("ir.TensorType", shape=[ir.TensorType((2,))], dtype="float32"),
     loom.TypeError, "field 'shape' of ir.TensorType: element 0: expected tir.PrimExpr"),
]


@pytest.mark.parametrize("name,make,error,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises(name, make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_runtime_calls_with_bad_arguments():
    lib = loom.build(loom.IRModule({"main": graph.Function([x], op.relu(x))}), {"target": {"kind": "ref"},
                                                                                "pipeline": {"passes": ["default"]}})
    f = lib["main"]
    good = np.ones((2, 3), np.float32)
    for bad, message in [((), "takes 1"), ((good, good), "takes 1"), ((good.astype(np.float64),), "float32"),
                         ((np.ones((3, 2), np.float32),), r"\(2, 3\)|shape"), ((None,), ""), (("x",), ""),
                         ((np.ones((2, 3), np.float32)[:, ::2],), "")]:
        with pytest.raises(loom.LoomError, match=message):
            f(*bad)
    np.testing.assert_array_equal(f(good).numpy(), good)  # still works after the errors


def test_one_wrong_type_is_one_error_not_one_per_reader():
    a = graph.Var("a", shape=(2, 3), dtype="float32")
    b = graph.Var("b", shape=(2, 3), dtype="int32")
    wrong = op.add(a, b)
    body = graph.Let(graph.Var("v"), wrong, op.relu(op.multiply(wrong, wrong)))
    with pytest.raises(loom.LoomError) as info:
        transform.get_pass("InferType")(loom.IRModule({"main": graph.Function([a, b], body)}))
    message = str(info.value)
    assert "add: operands have dtypes float32 and int32" in message
    assert "untyped value" not in message, message
