"""The schedule API from Python (docs/python.md, "Schedules"): a matmul
built with loom.tir, scheduled by hand, run against NumPy."""
import pathlib

import numpy as np
import pytest

import loom
from loom import graph, ir, tir

ROOT = pathlib.Path(__file__).resolve().parents[3]


def matmul(m, k, n):
    A, B, C = tir.Buffer("A", (m, k)), tir.Buffer("B", (k, n)), tir.Buffer("C", (m, n))
    i, j, r = tir.Var("i"), tir.Var("j"), tir.Var("r")
    update = tir.BufferStore(C, C[i, j] + A[i, r] * B[r, j], [i, j])
    body = tir.For(i, 0, m, tir.For(j, 0, n, tir.SeqStmt([
        tir.BufferStore(C, 0.0, [i, j]), tir.For(r, 0, k, update)])))
    return tir.PrimFunc([A, B, C], body)


def run(func, m, k, n, rng):
    x, w = graph.Var("x", shape=(m, k)), graph.Var("w", shape=(k, n))
    main = graph.Function([x, w], graph.call_dps("mm", [x, w], ir.TensorType((m, n))))
    lib = loom.build(loom.IRModule({"mm": func, "main": main}), {"target": {"kind": "llvm"}})
    a, b = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
    np.testing.assert_allclose(lib["main"](a, b).numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_hand_schedule_from_python_keeps_the_numbers():
    rng = np.random.default_rng(5)
    m, k, n = 19, 23, 40
    sch = tir.Schedule(matmul(m, k, n))
    assert sch.loops() == ["i", "j", "r"]
    jo, ji = sch.split("j", 8)
    assert (jo, ji) == ("j_o", "j_i")
    assert sch.decompose_reduction("i") == [["i_init", "j_o_init", "j_i_init"], ["i", "j_o", "j_i"]]
    sch.reorder(["i", "j_o", "r", "j_i"])
    sch.vectorize("j_i")
    sch.vectorize("j_i_init")
    sch.parallel("i")
    packed = sch.cache_read("B", lambda r, j: (j // 8, r, j % 8))
    assert packed in sch.func.script() and "vectorized" in sch.func.script()
    run(sch.func, m, k, n, rng)


def test_schedule_errors_name_the_primitive_and_leave_the_schedule():
    sch = tir.Schedule(matmul(4, 4, 4))
    before = sch.func
    with pytest.raises(loom.ScheduleError, match="split: no loop %q"):
        sch.split("q", 2)
    with pytest.raises(loom.ScheduleError, match="parallel"):
        sch.parallel("r")  # C[i, j] is written at indices that do not use r
    assert sch.func.same_as(before)
    with pytest.raises(loom.TypeError, match="takes a tir.PrimFunc, got object graph.Var"):
        tir.Schedule(graph.Var("x"))
    with pytest.raises(ZeroDivisionError):
        sch.cache_read("B", lambda r, j: (1 / 0,))


def test_partition_gives_whole_blocks_and_a_tail():
    # A symbolic row count: blocks of 4 rows without a guard, then the rest.
    rng = np.random.default_rng(9)
    k, n = 7, 12
    m = tir.Var("m")
    sch = tir.Schedule(matmul(m, k, n))
    assert sch.partition("i", 4) == ["i_o", "i_i", "i_t"]
    loops = sch.loops()
    assert loops[:4] == ["i_o", "i_i", "j", "r"] and loops[4:] == ["i_t", "j_t", "r_t"]
    text = sch.func.script()
    assert "if" not in text  # no guard in either nest
    sch.unroll("i_i")
    sch.parallel("j_t")
    for rows in (1, 3, 4, 5, 11):
        x, w = graph.Var("x", shape=(m, k)), graph.Var("w", shape=(k, n))
        main = graph.Function([x, w], graph.call_dps("mm", [x, w], ir.TensorType((m, n))))
        lib = loom.build(loom.IRModule({"mm": sch.func, "main": main}), {"target": {"kind": "llvm"}})
        a, b = rng.standard_normal((rows, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
        np.testing.assert_allclose(lib["main"](a, b).numpy(), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(loom.ScheduleError, match="partition: the factor must be positive, got 0"):
        sch.partition("j", 0)
