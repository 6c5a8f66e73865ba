"""The runtime's thread pool from Python (docs/python.md, "Threads"):
loom.runtime.set_num_threads sizes it, a library's num-threads sizes it
when it loads, LOOM_NUM_THREADS wins over both, and results do not depend
on the size."""
import os
import subprocess
import sys

import numpy as np
import pytest

import loom
from loom import graph, op
from conftest import ROOT


@pytest.fixture
def restore_pool():
    before = loom.runtime.num_threads()
    yield
    loom.runtime.set_num_threads(before)


def softmax_library(threads=0):
    x = graph.Var("x", shape=(64, 1000))
    mod = loom.IRModule({"main": graph.Function([x], op.softmax(op.relu(x)))})
    return loom.build(mod, {"target": {"kind": "llvm", "num-threads": threads}})


def reference(x):
    e = np.exp(np.maximum(x, 0) - np.maximum(x, 0).max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_pool_takes_the_size_asked_for_and_results_do_not_change(restore_pool):
    lib = softmax_library()
    x = np.random.default_rng(3).standard_normal((64, 1000)).astype(np.float32)
    results = {}
    for threads in (1, 2, 3):
        loom.runtime.set_num_threads(threads)
        assert loom.runtime.num_threads() == threads
        results[threads] = lib["main"](x).numpy()
        np.testing.assert_allclose(results[threads], reference(x), rtol=1e-5, atol=1e-7)
    assert np.array_equal(results[1], results[2]) and np.array_equal(results[2], results[3])


def test_a_library_with_num_threads_sizes_the_pool_when_it_loads(restore_pool):
    loom.runtime.set_num_threads(1)
    softmax_library(threads=2)
    assert loom.runtime.num_threads() == 2
    softmax_library(threads=0)  # 0 leaves the pool as it is
    assert loom.runtime.num_threads() == 2


def test_a_negative_count_is_refused(restore_pool):
    before = loom.runtime.num_threads()
    with pytest.raises(loom.LoomError, match=r"set_num_threads: -1 is not a number of threads"):
        loom.runtime.set_num_threads(-1)
    assert loom.runtime.num_threads() == before


def test_the_environment_wins_over_set_num_threads():
    code = ("import loom; loom.runtime.set_num_threads(3); "
            "print(loom.runtime.num_threads())")
    env = dict(os.environ, LOOM_NUM_THREADS="2", PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
