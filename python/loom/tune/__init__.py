"""loom.tune (docs/tuning.md): a search over schedules per task, measured
in worker processes (local or on a Dask cluster), guided by a learned
cost model, recorded in a JSON-lines database that builds read with
`pipeline: {tuning: {database: FILE}}`.

    import loom.tune
    result = loom.tune.tune(mod, "configs/host.yaml", trials=64, database="tuned.jsonl", workers="local:2")
"""
import json
import os
import random
import sys
import time

from .. import _core
from .._ffi import call
from .database import FORMAT, Database
from .measure import DaskWorkers, LocalWorkers, workers_from
from .model import CostModel, featurize

__all__ = ["Task", "tasks", "tune", "Database", "FORMAT", "LocalWorkers", "DaskWorkers"]


class _Captured(Exception):
    pass


class _Capture:
    """An instrument that takes the module as AutoSchedule would see it,
    then stops the build."""

    def __init__(self):
        self.module = None

    def before(self, info, module):
        if info.name == "AutoSchedule":
            self.module = module
            raise _Captured()


def _config_text(config):
    """The config as (YAML text, source) for the workers to parse."""
    if isinstance(config, dict):
        return json.dumps(config), "<dict>"
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    raise _core.TypeError("tune takes the config as a YAML path or a dict (the workers parse it again), got "
                          f"{type(config).__name__}")


class Task:
    """A prim function as AutoSchedule sees it, in its task form
    (canonical names): `hash`, `target` (its text), `calls` (call sites in
    the model), `name` (in the model)."""

    def __init__(self, entry):
        self.name = str(entry["name"])
        self.func = entry["func"]
        self.hash = str(entry["hash"])
        self.target = str(entry["target_key"])
        self.vector_bits = int(entry["vector_bits"])
        # which products PairProducts pairs on the target: its candidates lay out pair panels as AutoSchedule does
        self.native_intrinsics = [str(n) for n in entry["native_intrinsics"]]
        self.constants = [str(c) for c in entry["constants"]]
        self.calls = int(entry["calls"])
        from .. import ir
        self.text = str(ir.IRModule({"task": self.func}))

    def __repr__(self):
        return f"<Task {self.name} {self.hash} ({self.calls} call{'s' if self.calls != 1 else ''})>"

    def sample(self, seed):
        """A candidate: (trace, decisions, features); seed -1: AutoSchedule's own schedule."""
        _, trace, decisions, features = call("tune.sample", self.func, self.vector_bits, self.constants,
                                             self.native_intrinsics, seed)
        return json.loads(trace), [(str(n), int(v)) for n, v in decisions], [float(x) for x in features]


def _tunable(func):
    for p in func.params:
        if p.type_key != "tir.Buffer" or any(d.type_key != "tir.IntImm" for d in p.shape):
            return False
    return True


def tasks(mod, config):
    """The tasks of `mod` under `config`: its pipeline runs up to
    AutoSchedule, and each prim function then on a CPU target with buffer
    parameters of constant shapes is a task (one per distinct hash; calls
    add up)."""
    from ..build import _config, build
    capture = _Capture()
    from ..transform import PassContext
    try:
        with PassContext(instruments=[capture]):
            build(mod, _config(config))
    except _Captured:
        pass
    if capture.module is None:
        return []
    found = {}
    for entry in call("tune.tasks", capture.module):
        if not _tunable(entry["func"]):
            continue
        task = Task(entry)
        if task.hash in found:
            found[task.hash].calls += task.calls
        else:
            found[task.hash] = task
    return list(found.values())


def _progress(text, stream):
    if stream is not None:
        stream.write("\r\x1b[K" + text if stream.isatty() else text + "\n")
        stream.flush()


def _fmt_time(seconds):
    seconds = int(max(0, seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def tune(mod, config, trials=64, database=None, workers="local:1", strategy="model", seed=0, timeout=60.0,
         batch=None, progress=True, tasks=None, verify=3, device_key=None):
    """Tunes every task of `mod` (see tasks) for `config`: `trials`
    candidates in all, shared by the tasks, the first of each task
    AutoSchedule's own schedule.  `strategy`: "model" (the cost model
    picks most of each batch) or "random".  `workers`: "local:N",
    "dask://HOST:PORT" or a distributed.Client.  Every measurement is
    appended to `database` (a JSON-lines path; None: kept in memory).
    `tasks`: some of the tasks loom.tune.tasks(mod, config) gives, to tune
    those only.  `verify`: after a task's search, its `verify` fastest
    traces and AutoSchedule's are measured twice more, in turn (0: not).
    Returns one dict per task: name, hash, calls, baseline_us
    (AutoSchedule), best_us, trials, curve (best time after each trial)
    and cpu; with verify, baseline_us and best_us are medians of the
    traces' times.  `device_key`: measure on the loom-rpc-servers of that
    key in the Dask device pool `workers` names (docs/rpc.md, "Device pools
    on Dask"), building here; records carry the servers' CPU and each
    record its server."""
    if strategy not in ("model", "random"):
        raise ValueError(f"strategy must be 'model' or 'random', got {strategy!r}")
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    text, source = _config_text(config)
    if device_key is not None:
        if not isinstance(workers, str) or not workers.startswith(("dask://", "tcp://")):
            raise ValueError(f"device_key '{device_key}' measures through a Dask device pool: workers must be "
                             f"dask://HOST:PORT, got {workers!r}")
        from ..rpc.dask_pool import RemoteWorkers
        pool = RemoteWorkers(workers, device_key, timeout)
    else:
        pool = workers if isinstance(workers, (LocalWorkers, DaskWorkers)) else workers_from(workers, timeout)
    try:
        found = list(tasks) if tasks is not None else _tasks_of(mod, config)
        db = Database(database) if database is not None else _MemoryDatabase()
    except BaseException:
        if pool is not workers:
            pool.close()
        raise
    stream = sys.stderr if progress else None
    rng = random.Random(seed)
    model = CostModel(seed)
    cpu = getattr(pool, "cpu", None) or call("tune.cpu")
    results = []
    start = time.time()
    done_trials = 0
    try:
        per_task = [trials // len(found) + (1 if k < trials % len(found) else 0) for k in range(len(found))] if found else []
        for k, task in enumerate(found):
            budget = per_task[k]
            prior = db.of(task.hash, task.target, cpu)
            measured = {json.dumps(r["trace"]) for r in prior}
            auto_candidate = task.sample(-1)  # AutoSchedule's: the first candidate, the baseline
            auto = auto_candidate[0]
            timed = [r for r in prior if r.get("median_us")]
            baseline = next((r["median_us"] for r in timed if r["trace"] == auto), None)
            best = min((r["median_us"] for r in timed), default=None)
            curve = []

            def measure_all(traces, task=task):
                """Measures and records each trace: [(record, result)]."""
                jobs = [{"task": task.text, "hash": task.hash, "config": text, "source": source, "trace": trace}
                        for trace in traces]
                out = []
                for trace, res in zip(traces, pool.map(jobs)):
                    record = {"task": task.hash, "target": task.target, "cpu": res.get("cpu", cpu), "trace": trace,
                              "worker": res.get("worker", ""), "name": task.name, "loom": _loom_version()}
                    if "server" in res:
                        record["server"] = res["server"]
                    if "median_us" in res:
                        record.update(median_us=res["median_us"], runs=res["runs"])
                    else:
                        record["error"] = res.get("error", "no result")
                    out.append((db.add(record), res))
                return out

            batch_size = batch or max(2 * pool.count, 4)
            first = True
            while len(curve) < budget:
                n = min(batch_size, budget - len(curve))
                chosen = _choose(task, n, measured, rng, model if strategy == "model" else None,
                                 auto_candidate if first else None)
                if not chosen:
                    break  # the task's space is exhausted
                for (trace, decisions, features), (record, res) in zip(
                        chosen, measure_all([trace for trace, _, _ in chosen])):
                    measured.add(json.dumps(trace))
                    t = record.get("median_us") if record["cpu"] == cpu else None
                    if trace == auto:
                        baseline = t
                    if t is not None:
                        best = t if best is None else min(best, t)
                        if baseline:
                            model.add(featurize(res.get("features", features), decisions), t, baseline)
                    curve.append(best)
                done_trials += len(chosen)
                first = False
                model.fit()
                elapsed = time.time() - start
                left = elapsed / done_trials * (trials - done_trials) if done_trials else 0
                _progress(f"[tune] task {k + 1}/{len(found)} {task.name}: trials {len(curve)}/{budget}, best "
                          f"{_us(best)} (AutoSchedule {_us(baseline)}), {done_trials}/{trials} in all, "
                          f"about {_fmt_time(left)} left", stream)
            if verify and curve:
                # The search's best few and AutoSchedule's measured again, in
                # turn, so that the best is not one lucky timing: builds rank
                # a trace by the median of its times.
                top = [r["trace"] for _, r in db.ranked(task.hash, task.target, cpu)[:verify]]
                again = top + ([auto] if auto not in top else [])
                measure_all([trace for _ in range(2) for trace in again])
                ranked = db.ranked(task.hash, task.target, cpu)
                best = ranked[0][0] if ranked else best
                baseline = next((t for t, r in ranked if r["trace"] == auto), baseline)
            results.append({"name": task.name, "hash": task.hash, "calls": task.calls, "baseline_us": baseline,
                            "best_us": best, "trials": len(curve), "curve": curve, "cpu": cpu})
    finally:
        if pool is not workers:
            pool.close()
        if stream is not None and stream.isatty():
            stream.write("\n")
    return results


def _loom_version():
    from .. import __version__
    return __version__


def _us(t):
    return "-" if t is None else f"{t:.1f} us"


def _choose(task, n, measured, rng, model, first):
    """n new candidates: `first` (AutoSchedule's, or None), then from a
    pool of sampled ones, the model's best (with a quarter at random) or
    all at random."""
    out = []
    seen = set(measured)
    if first is not None and json.dumps(first[0]) not in seen:
        out.append(first)
        seen.add(json.dumps(first[0]))
    want = n - len(out)
    pool_size = want * (4 if model is not None and model.trained else 1)
    pool = []
    attempts = 0
    while len(pool) < pool_size and attempts < 20 * max(pool_size, 1):
        attempts += 1
        trace, decisions, features = task.sample(rng.randrange(1 << 62))
        key = json.dumps(trace)
        if key in seen:
            continue
        seen.add(key)
        pool.append((trace, decisions, features))
    if model is not None and model.trained and len(pool) > want:
        explore = max(1, want // 4)
        scores = model.predict([featurize(f, d) for _, d, f in pool])
        order = sorted(range(len(pool)), key=lambda i: scores[i])
        picked = order[:want - explore]
        rest = [i for i in order if i not in picked]
        rng.shuffle(rest)
        picked += rest[:explore]
        pool = [pool[i] for i in picked]
    return out + pool[:want]


_tasks_of = tasks


class _MemoryDatabase(Database):
    def __init__(self):  # noqa: D107 -- no file
        self.path = None
        self.records = []
        self.warnings = []

    def add(self, record):
        record = {"format": FORMAT, **record}
        self.records.append(record)
        return record
