"""The llvm target compiles a module's functions in parallel parts, one per
CPU the process may use (docs/target-llvm.md, "In memory and on disk"):
the parts hold every function once, the machine code does not depend on
how the module was divided, and an error is the first failing function's
in module order."""
import os
import re

import numpy as np
import pytest

import loom
from loom import graph, op
from conftest import llvm_module

CONFIG = {"target": {"kind": "llvm", "num-threads": 1}}


def build_on(cpus, module, config):
    """`module` built while this thread may run only on `cpus` (what the
    build counts its parts by)."""
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        return loom.build(module, config)
    finally:
        os.sched_setaffinity(0, mask)


def model():
    rng = np.random.default_rng(0)
    x = graph.Var("x", shape=(1, 8, 16, 16))
    w1 = graph.Constant(rng.standard_normal((16, 8, 3, 3)).astype("float32"))
    w2 = graph.Constant(rng.standard_normal((16, 16, 1, 1)).astype("float32"))
    y = op.relu(op.conv2d(x, w1, padding=(1, 1)))
    y = op.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    y = op.sigmoid(op.conv2d(y, w2))
    y = op.softmax(op.reshape(y, shape=(1, 16 * 8 * 8)), axis=1)
    return loom.IRModule({"main": graph.Function([x], y)})


def defined(ll):
    """The entry points (`__loom_fn_NAME`) each part of `ll` defines."""
    return [set(re.findall(r"^define .*@(__loom_fn_\w+)\(", p, re.M)) for p in ll.split("; ModuleID")[1:]]


def test_parts_hold_every_function_once_and_compute_what_one_part_does():
    cpus = sorted(os.sched_getaffinity(0))
    one = build_on({cpus[0]}, model(), CONFIG)
    many = build_on(set(cpus), model(), CONFIG)
    x = np.random.default_rng(1).standard_normal((1, 8, 16, 16)).astype("float32")
    # The same machine code whichever part a function is in: equal bits.
    np.testing.assert_array_equal(many["main"](x).numpy(), one["main"](x).numpy())

    [single] = defined(llvm_module(one).inspect_source("ll"))
    assert "__loom_fn_softmax" in single and len(single) >= 5, single
    parts = defined(llvm_module(many).inspect_source("ll"))
    assert sum(len(p) for p in parts) == len(single) and set().union(*parts) == single, parts
    if len(cpus) < 2 or len(parts) == 1:
        pytest.skip("one CPU (by affinity or a cgroup quota): the build has one part")
    assert len(parts) == min(len(cpus), len(single))
    # The assembly covers every part.
    asm = llvm_module(many).inspect_source("asm")
    assert all(re.search(rf"^{name}:", asm, re.M) for name in single)


def test_an_error_is_the_first_failing_function_in_module_order():
    # Sized so that two parts are [@f2, @f4] and [@f1, @f3] (the largest
    # function first, each to the lighter part): the first failure in
    # module order (@f1, a loop bound to a GPU thread) is in the second
    # part, and the first part fails too, later (@f4).
    def function(name, stores, bad):
        body = " ".join(f"%X[{k}] = %X[{k}] * 2.0;" for k in range(stores))
        loop = 'thread("threadIdx.x")' if bad else ""
        return f"""
@{name} = prim_func(%X: Buffer[(64), float32]) {{
  for %t: int64 from 0 extent 4 {loop} {{ {body} }}
}}"""
    module = loom.parse("\n".join(
        [function("f1", 12, True), function("f2", 40, False), function("f3", 30, False), function("f4", 1, True)]))
    for cpus in ({sorted(os.sched_getaffinity(0))[0]}, os.sched_getaffinity(0)):
        with pytest.raises(loom.LoomError, match=r"@f1\b") as error:
            build_on(cpus, module, {"target": {"kind": "llvm"}, "pipeline": {"passes": []}})
        assert "@f4" not in str(error.value)
