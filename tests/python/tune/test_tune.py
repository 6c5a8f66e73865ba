"""loom.tune (docs/tuning.md): tasks, candidates that replay and are
checked against the unscheduled function, measurement that survives a
crash or a hang, the database and builds that use it, the cost model."""
import json
import pathlib
import threading
import time

import numpy as np
import pytest

import loom
import loom.tune
from loom._ffi import call
from loom.tune import measure
from loom.tune.model import CostModel

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONFIG = {"target": {"kind": "llvm", "mcpu": "native", "num-threads": 1}, "pipeline": {"passes": ["default"]}}

# A small model: a dense with bias and ReLU, then a row softmax.
MODEL = """
@main = fn(%x: Tensor[(16, 64), float32], %w: Tensor[(48, 64), float32], %b: Tensor[(48), float32]) {
  %0 = dense(%x, %w);
  %1 = add(%0, %b);
  %2 = relu(%1);
  softmax(%2, axis=1)
}
"""


def model(names=("x", "w", "b")):
    text = MODEL
    for old, new in zip(("x", "w", "b"), names):
        text = text.replace(f"%{old}", f"%{new}")
    return loom.parse(text)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in ((16, 64), (48, 64), (48,))]


def reference(x, w, b):
    h = np.maximum(x @ w.T + b, 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_tasks_are_the_prim_functions_and_names_do_not_change_a_task():
    tasks = loom.tune.tasks(model(), CONFIG)
    assert len(tasks) >= 1
    for t in tasks:
        assert len(t.hash) == 16 and int(t.hash, 16) >= 0
        assert t.calls == 1
        assert "llvm" in t.target
    renamed = loom.tune.tasks(model(("input", "weight", "bias")), CONFIG)
    assert sorted(t.hash for t in renamed) == sorted(t.hash for t in tasks)


def test_candidates_replay_to_the_function_they_were_made_as():
    task = loom.tune.tasks(model(), CONFIG)[0]
    traces = set()
    for seed in [-1] + list(range(12)):
        trace, decisions, features = task.sample(seed)
        func, trace_text, _, _ = call("tune.sample", task.func, task.vector_bits, task.constants,
                                      task.native_intrinsics, seed)
        again, _ = call("tune.replay", task.func, trace_text)
        assert loom.ir.structural_equal(func, again)
        assert len(features) == len(call("tune.feature_names"))
        traces.add(json.dumps(trace))
    assert len(traces) > 2, "the search space has more than AutoSchedule's schedule"


def test_candidates_of_an_integer_layer_keep_its_products_in_pairs_as_auto_schedule_does(tmp_path):
    """Where PairProducts pairs a layer's products (int8 x uint8 summed in
    int32 on the llvm target; in fours on a CPU with vpdpbusd), AutoSchedule
    lays out its panels with each pair (group) side by side; its candidate in tuning (seed -1) is the same
    schedule, and the others may take that layout too."""
    rng = np.random.default_rng(5)
    w = rng.integers(-128, 128, (256, 96)).astype(np.int8)
    x = loom.graph.Var("x", shape=(64, 256), dtype="uint8")
    mod = loom.IRModule({"main": loom.graph.Function([x], loom.op.matmul(x, loom.graph.Constant(w),
                                                                        out_dtype="int32"))})
    # (the llvm target's own kernel: on a CPU with AMX, AMXMatmul would send
    # the product to the tiles' kernel, which is not a task)
    (task,) = loom.tune.tasks(mod, {**CONFIG, "pipeline": {"passes": ["default"], "disabled": ["AMXMatmul"]}})
    assert "dot2_i16" in task.native_intrinsics
    samples = [task.sample(seed) for seed in [-1] + list(range(8))]
    chosen = [dict(decisions) for _, decisions, _ in samples]
    assert chosen[0].get("tile.pair_panels") == 1, chosen[0]
    # Candidates that put the row tiles and the panels outside (seeds 6
    # and 7: once a crash of the sampler) are checked against the task's
    # reference when timed.
    both = [trace for (trace, _, _), d in zip(samples, chosen) if d.get("tile.rows_outer") and d.get("tile.panels_outer")]
    assert both, chosen
    timed = measure.measure_job(_job(task, both[0], repeats=3))
    assert timed.get("median_us", 0) > 0, timed
    # the weight (256, 96) in panels of columns, each pair of rows side by
    # side: (.., r // 2, .., r % 2); in fours where the CPU has vpdpbusd
    # (dot4_u8i8: uint8 x int8 four steps at a time)
    group = 4 if "dot4_u8i8" in task.native_intrinsics else 2
    trace, _, _ = task.sample(-1)
    layouts = [step[2] for step in trace if step[0] == "transform_layout"]
    assert any(m.startswith("1 // ") and m.endswith(f"0 % {group}") for m in layouts), trace
    # and its record, built from a database, gives the exact sums
    db = loom.tune.Database(tmp_path / "int8.jsonl")
    db.add({"task": task.hash, "target": task.target, "trace": trace, "median_us": 1.0, "cpu": call("tune.cpu")})
    a = rng.integers(0, 256, (64, 256)).astype(np.uint8)
    got = loom.build(mod, {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {"database": db.path}}})
    got = got["main"](a).numpy()
    np.testing.assert_array_equal(got, a.astype(np.int64) @ w.astype(np.int64))


def _job(task, trace, **extra):
    return {"task": task.text, "hash": task.hash, "config": json.dumps(CONFIG), "source": "<test>", "trace": trace,
            **extra}


def test_a_candidate_is_timed_only_when_its_results_match():
    task = loom.tune.tasks(model(), CONFIG)[0]
    trace, _, _ = task.sample(-1)
    good = measure.measure_job(_job(task, trace, repeats=3))
    assert good["median_us"] > 0 and good["runs"] >= 3, good
    assert good["cpu"] == call("tune.cpu")
    # A job whose function computes something else than its task's
    # reference (the reference is the task's unscheduled function) is
    # refused, whatever its time.
    other = loom.parse(task.text.replace("max(", "min(", 1))  # ReLU made min(x, 0)
    assert str(other) != task.text
    wrong = measure.measure_job({**_job(task, trace), "task": str(other)})
    assert "wrong results" in wrong["error"] and "median_us" not in wrong
    # A trace that does not replay is a record with its reason.
    stale = measure.measure_job(_job(task, [["split", "nope", 4]]))
    assert "does not replay" in stale["error"] and "no loop %nope" in stale["error"]


def test_a_crashed_or_hung_candidate_is_a_record_and_the_next_one_runs():
    task = loom.tune.tasks(model(), CONFIG)[0]
    trace, _, _ = task.sample(-1)
    child = measure._Child()
    try:
        # Killed mid-measurement (as a crash would end it).
        timer = threading.Timer(0.5, lambda: child._proc.kill())
        timer.start()
        died = child.run(_job(task, trace, repeats=1000000), timeout=60)
        timer.cancel()
        assert "died" in died["error"] and "signal 9" in died["error"], died
        # A candidate that runs past the limit.
        hung = child.run(_job(task, trace, repeats=1000000), timeout=1.0)
        assert hung["error"].startswith("timeout"), hung
        # The next candidate gets a new process.
        ok = child.run(_job(task, trace, repeats=3), timeout=60)
        assert ok["median_us"] > 0, ok
    finally:
        child.close()


def test_tune_records_a_database_that_builds_apply(tmp_path, capfd):
    db = tmp_path / "tuned.jsonl"
    results = loom.tune.tune(model(), CONFIG, trials=8, database=db, workers="local:2", progress=False)
    assert sum(r["trials"] for r in results) == 8
    records = [json.loads(line) for line in db.read_text().splitlines()]
    cpu = call("tune.cpu")
    for r in records:
        assert r["format"] == loom.tune.FORMAT and r["cpu"] == cpu and r["worker"].startswith("local:")
        assert ("median_us" in r) != ("error" in r)
    times = {}  # (task, trace) -> its times
    for r in records:
        times.setdefault((r["task"], json.dumps(r["trace"])), []).append(r.get("median_us"))
    # Each trial a new trace; then the best three and AutoSchedule's
    # measured twice more (verify).
    assert len(times) == 8
    for res in results:
        task = next(t for t in loom.tune.tasks(model(), CONFIG) if t.hash == res["hash"])
        again = [k for k, v in times.items() if k[0] == res["hash"] and len(v) == 3]
        assert (res["hash"], json.dumps(task.sample(-1)[0])) in again
        first = sorted((v[0], k) for k, v in times.items() if k[0] == res["hash"] and v[0] is not None)
        assert {k for _, k in first[:3]} <= set(again) and len(again) <= 4
        assert res["baseline_us"] == np.median(times[res["hash"], json.dumps(task.sample(-1)[0])])
        assert res["best_us"] == min(np.median(v) for k, v in times.items() if k[0] == res["hash"] and None not in v)
        assert res["curve"] == sorted(res["curve"], reverse=True)

    # A second search goes on from the database: no trace of the search
    # measured twice.
    again = loom.tune.tune(model(), CONFIG, trials=4, database=db, workers="local:1", progress=False, verify=0)
    more = [json.loads(line) for line in db.read_text().splitlines()][len(records):]
    assert len(more) == sum(r["trials"] for r in again) <= 4
    assert not {(r["task"], json.dumps(r["trace"])) for r in more} & set(times)
    records += more

    seen = {}

    class Capture:
        def after(self, info, mod):
            if info.name == "AutoSchedule":
                seen.update({k: f.attrs for k, f in mod.functions.items() if f.type_key == "tir.PrimFunc"})

    tuned_config = {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {"database": str(db)}}}
    with loom.transform.PassContext(instruments=[Capture()]):
        lib = loom.build(model(), tuned_config)
    assert seen and all(str(a["scheduled"]).startswith(f"tuning database {db}:") for a in seen.values()), seen
    x, w, b = inputs()
    np.testing.assert_allclose(lib["main"](x, w, b).numpy(), reference(x, w, b), rtol=1e-4, atol=1e-5)
    # The fastest trace of each task (by the median of its times) is the
    # one applied, named by its first record.
    for name, attrs in seen.items():
        line = int(str(attrs["scheduled"]).rsplit(":", 1)[1])
        record = records[line - 1]
        ranked = loom.tune.Database(db).ranked(record["task"], record["target"], cpu)
        assert ranked[0][1] == record

    # Records of another CPU are not this machine's: AutoSchedule schedules.
    other = tmp_path / "other_cpu.jsonl"
    other.write_text("".join(json.dumps({**r, "cpu": "Some Other CPU avx2"}) + "\n" for r in records))
    seen.clear()
    with loom.transform.PassContext(instruments=[Capture()]):
        loom.build(model(), {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {"database": str(other)}}})
    assert seen and not any("scheduled" in a for a in seen.values()), seen
    # ... unless the config names that CPU (tuning.cpu: a device's, measured
    # through an RPC device pool).
    seen.clear()
    with loom.transform.PassContext(instruments=[Capture()]):
        loom.build(model(), {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {
            "database": str(other), "cpu": "Some Other CPU avx2"}}})
    assert seen and all(str(a["scheduled"]).startswith(f"tuning database {other}:") for a in seen.values()), seen


def test_malformed_and_stale_records_are_reported_and_skipped(tmp_path, capfd):
    task = loom.tune.tasks(model(), CONFIG)[0]
    trace, _, _ = task.sample(-1)
    good = {"format": 1, "task": task.hash, "target": task.target, "cpu": call("tune.cpu"), "trace": trace,
            "median_us": 50.0, "worker": "test"}
    stale = {**good, "trace": [["split", "no_such_loop", 4]], "median_us": 1.0}
    # Tuned where the weight was a constant (laid out at compile time);
    # here it is an input.
    relaid = {**good, "trace": [["transform_layout", "v1", "1, 0"]], "median_us": 0.5}
    db = tmp_path / "db.jsonl"
    db.write_text("not json\n" + json.dumps({**good, "format": 99}) + "\n" + json.dumps(stale) + "\n"
                  + json.dumps({**good, "median_us": -3}) + "\n" + json.dumps(good) + "\n" + json.dumps(relaid) + "\n")
    seen = {}

    class Capture:
        def after(self, info, mod):
            if info.name == "AutoSchedule":
                seen.update({k: f.attrs for k, f in mod.functions.items() if f.type_key == "tir.PrimFunc"})

    with loom.transform.PassContext(instruments=[Capture()]):
        lib = loom.build(model(), {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {"database": str(db)}}})
    err = capfd.readouterr().err
    assert f"{db}:1:1: invalid literal" in err and "the record is skipped" in err, err  # FILE:LINE:COL
    assert f"{db}:2: format 99 is not this Loom's record format (1)" in err, err
    assert f"{db}:4: median_us must be a positive time" in err, err
    assert f"{db}:3: the record of task {task.hash} does not apply" in err and "no loop %no_such_loop" in err, err
    assert f"{db}:6: the record of task {task.hash} does not apply" in err, err
    assert "it lays out input 1 (1, 0), which a caller" in err and "passes as a variable, not a constant" in err, err
    applied = [a for a in seen.values() if "scheduled" in a]
    assert len(applied) == 1 and str(applied[0]["scheduled"]) == f"tuning database {db}:5"
    x, w, b = inputs(1)
    np.testing.assert_allclose(lib["main"](x, w, b).numpy(), reference(x, w, b), rtol=1e-4, atol=1e-5)
    # The Python reader skips the same lines.
    loaded = loom.tune.Database(db)
    assert len(loaded.records) == 3 and len(loaded.warnings) == 3


def test_a_missing_database_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(loom.LoomError, match="tuning database '.*missing.jsonl': no such file"):
        loom.build(model(), {**CONFIG, "pipeline": {"passes": ["default"], "tuning": {"database": str(missing)}}})


def test_a_relative_database_path_is_the_config_files_neighbour(tmp_path):
    (tmp_path / "host.yaml").write_text("target:\n  kind: llvm\npipeline:\n  tuning:\n    database: db.jsonl\n")
    with pytest.raises(loom.LoomError, match=f"tuning database '{tmp_path}/db.jsonl': no such file"):
        loom.build(model(), str(tmp_path / "host.yaml"))


def test_the_cost_model_learns_which_candidates_are_fast():
    rng = np.random.default_rng(0)
    model_ = CostModel()
    xs = rng.uniform(0, 1, (40, 5))
    for x in xs:  # time grows with the first feature, the rest is noise
        model_.add(x, time_us=10 * (1 + 4 * x[0]), baseline_us=20)
    model_.fit()
    assert model_.trained
    test = rng.uniform(0, 1, (20, 5))
    predicted = model_.predict(list(test))
    order = np.argsort(predicted)
    assert np.corrcoef(predicted, test[:, 0])[0, 1] > 0.9
    assert test[order[0], 0] < 0.3 and test[order[-1], 0] > 0.7


def test_workers_spec_errors_name_the_forms():
    with pytest.raises(ValueError, match="expected local:N or dask://HOST:PORT"):
        loom.tune.tune(model(), CONFIG, trials=2, workers="bogus", progress=False)
    with pytest.raises(ValueError, match="local:N takes a number"):
        loom.tune.tune(model(), CONFIG, trials=2, workers="local:two", progress=False)
    with pytest.raises(loom.TypeError, match="YAML path or a dict"):
        loom.tune.tune(model(), loom.Config.parse(json.dumps(CONFIG)), trials=2, progress=False)


def test_the_task_form_keeps_the_modulo_operator():
    # `%` is both the sigil of names and the modulo operator in the text
    # format: only names are renamed.
    mod = loom.parse("""
@f = prim_func(%A: Buffer[(8), float32], %B: Buffer[(8), float32]) {
  for %i: int64 from 0 extent 8 {
    %B[%i] = %A[%i % 4] * 2.0;
  }
}
""")
    (task,) = loom.tune.tasks(mod, {"target": {"kind": "llvm"}})
    assert "%v1[%v2] = %v0[%v2 % 4] * 2.0;" in task.text, task.text
    assert task.calls == 0 and task.name == "f"


def test_a_timing_waits_for_builds_and_builds_wait_for_a_timing(tmp_path):
    lock = measure._FileLock(str(tmp_path / "lock"))
    events = []

    def timing():
        with lock.exclusive():
            events.append("timing")

    with lock.shared():
        with lock.shared():  # builds run together
            events.append("build")
        runner = threading.Thread(target=timing)
        runner.start()
        time.sleep(0.3)
        assert events == ["build"], "the timing waits while a build holds the lock"
    runner.join(10)
    assert events == ["build", "timing"]
