"""Measurement (docs/tuning.md, "Measurement"): a candidate -- a task's
function and a trace -- replayed, built for the task's config, checked
against the unscheduled function on random inputs, then timed.  It runs
in a child process (a crash or a hang costs that candidate only), which
a local pool or a Dask worker keeps for many candidates."""
import contextlib
import json
import os
import queue
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

_TOLERANCE = 1e-4  # relative to the output's largest magnitude, per reduction term's rounding (rfactor)


class _Stop(Exception):
    pass


def _build(func, config_text, source):
    import loom
    return loom.build(loom.ir.IRModule({"task": func}), loom.Config.parse(config_text, source))


def _random_inputs(func, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        if p.type_key != "tir.Buffer":
            raise ValueError("a task takes buffers only")
        shape = [d.value for d in p.shape]
        dtype = str(p.dtype)
        if dtype.startswith("float"):
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:
            out.append(rng.integers(-8, 8, shape).astype(dtype))
    return out


_REFERENCE = {}  # (task hash, config) -> (inputs, outputs of the unscheduled function)


def _reference(job, func):
    import loom
    from loom._ffi import call
    key = (job["hash"], job["config"])
    if key not in _REFERENCE:
        plain, _ = call("tune.replay", func, "[]")
        lib = _build(plain, job["config"], job["source"])
        inputs = _random_inputs(func, 0)
        args = [loom.nd.array(a.copy()) for a in inputs]
        lib["task"](*args)
        _REFERENCE.clear()  # one task at a time
        _REFERENCE[key] = (inputs, [a.numpy() for a in args])
    return _REFERENCE[key]


def measure_job(job, lock=None):
    """One candidate: {"median_us", "runs"} or {"error"}, with "cpu" and
    "features".  `lock` (a _FileLock shared by the processes of one
    machine): building and checking hold it shared, timing exclusively, so
    no build runs beside a timing (on a machine whose cores share a core's
    units or its caches, one doubled the times measured)."""
    import numpy as np
    import loom
    from loom._ffi import call
    lock = lock or _NoLock()
    out = {"cpu": call("tune.cpu")}
    try:
        with lock.shared():
            func = loom.parse(job["task"]).functions["task"]
            inputs, expected = _reference(job, func)
            try:
                cand, features = call("tune.replay", func, json.dumps(job["trace"]))
            except loom.ScheduleError as e:
                return {**out, "error": f"the trace does not replay: {e}"}
            out["features"] = list(features)
            lib = _build(cand, job["config"], job["source"])
            layouts = dict(cand.attrs["param_layouts"].items()) if "param_layouts" in cand.attrs else {}
            args = []
            for k, a in enumerate(inputs):
                layout = layouts.get(str(k))
                args.append(call("tune.relayout", loom.nd.array(a), layout) if layout else loom.nd.array(a.copy()))
            f = lib["task"]
            f(*args)
            for k, (got, want) in enumerate(zip(args, expected)):
                if str(k) in layouts:
                    continue
                got = got.numpy()
                scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
                if got.shape != want.shape or not np.allclose(got, want, rtol=_TOLERANCE, atol=_TOLERANCE * scale):
                    err = float(np.abs(got.astype(np.float64) - want).max()) if got.shape == want.shape else "shape"
                    return {**out, "error": f"wrong results: parameter {k} differs from the unscheduled function's "
                                             f"(max error {err})"}
        with lock.exclusive():
            for _ in range(job.get("warmup", 2)):
                f(*args)
            t = time.perf_counter()
            f(*args)
            one = max(time.perf_counter() - t, 1e-7)
            number = max(1, int(job.get("min_repeat_ms", 2.0) / 1e3 / one))
            times = []
            for _ in range(job.get("repeats", 7)):
                t = time.perf_counter()
                for _ in range(number):
                    f(*args)
                times.append((time.perf_counter() - t) / number)
        return {**out, "median_us": statistics.median(times) * 1e6, "runs": number * len(times)}
    except Exception as e:  # noqa: BLE001 -- a candidate's failure is its record
        return {**out, "error": f"{type(e).__name__}: {e}".strip()[:2000]}


class _NoLock:
    @contextlib.contextmanager
    def shared(self):
        yield

    exclusive = shared


def _send(stream, obj):
    data = json.dumps(obj).encode()
    stream.write(len(data).to_bytes(8, "little") + data)
    stream.flush()


def _read_exactly(fd, n, deadline=None):
    data = b""
    while len(data) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError()
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError()
        data += chunk
    return data


def _receive(fd, deadline=None):
    size = int.from_bytes(_read_exactly(fd, 8, deadline), "little")
    return json.loads(_read_exactly(fd, size, deadline))


class _FileLock:
    """flock on a file all the processes of one machine open."""

    def __init__(self, path):
        self._path = path

    @contextlib.contextmanager
    def _held(self, mode):
        import fcntl
        with open(self._path, "a") as f:
            fcntl.flock(f, mode)
            yield  # closing the file releases the lock

    def shared(self):
        import fcntl
        return self._held(fcntl.LOCK_SH)

    def exclusive(self):
        import fcntl
        return self._held(fcntl.LOCK_EX)


def child_main(lock_path=None):
    """The measuring process: jobs on stdin, results on (the original)
    stdout; anything printed goes to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    lock = _FileLock(lock_path) if lock_path else None
    while True:
        try:
            job = _receive(0)
        except EOFError:
            return
        _send(out, measure_job(job, lock))


class _Child:
    """A child process that measures one candidate at a time; a crash or a
    timeout kills it and the next candidate starts a new one.  (A
    subprocess running loom.tune._child, not multiprocessing: the
    caller's script is not imported again.)"""

    def __init__(self, lock_path=None, module="loom.tune._child"):
        self._lock_path = lock_path
        self._module = module  # what the process runs: measurements, or loom.rpc._builder's builds
        self._proc = None

    def _start(self):
        args = [sys.executable, "-m", self._module] + ([self._lock_path] if self._lock_path else [])
        env = dict(os.environ)
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = package + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, job, timeout):
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        try:
            _send(self._proc.stdin, job)
            return _receive(self._proc.stdout.fileno(), time.monotonic() + timeout)
        except TimeoutError:
            self.close()
            return {"error": f"timeout: no result in {timeout:g} s"}
        except (EOFError, OSError, ValueError):
            self._proc.wait(5)
            code = self._proc.returncode
            self.close()
            why = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            return {"error": f"the {'measuring' if self._module == 'loom.tune._child' else 'building'} process "
                             f"died ({why})"}

    def close(self):
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(5)
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._proc = None


class LocalWorkers:
    """N child processes on this machine; builds run in parallel, a timing
    runs alone (no other timing, no build: a lock), so it has the cores to
    itself."""

    def __init__(self, count, timeout=60.0):
        if count < 1:
            raise ValueError(f"local workers: at least 1, got {count}")
        fd, self._lock_path = tempfile.mkstemp(prefix="loom-tune-", suffix=".lock")
        os.close(fd)
        self._children = [_Child(self._lock_path) for _ in range(count)]
        self.timeout = timeout
        self.count = count

    def map(self, jobs):
        """Results in the order of `jobs`, each with "worker"."""
        results = [None] * len(jobs)
        todo = queue.Queue()
        for k, job in enumerate(jobs):
            todo.put(k)

        def drive(index, child):
            while True:
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                results[k] = {**child.run(jobs[k], self.timeout), "worker": f"local:{index}@{socket.gethostname()}"}

        threads = [threading.Thread(target=drive, args=(i, c)) for i, c in enumerate(self._children)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def close(self):
        for c in self._children:
            c.close()
        if os.path.exists(self._lock_path):
            os.unlink(self._lock_path)


_DASK_CHILD = None


def dask_measure(job, timeout):
    """Runs on a Dask worker: the worker keeps a child process that
    measures, so a candidate that crashes leaves the worker alive; the
    workers of one machine share a lock (see LocalWorkers)."""
    global _DASK_CHILD
    from distributed import get_worker
    if _DASK_CHILD is None:
        # One lock per machine and user: the workers of one machine time in turn.
        _DASK_CHILD = _Child(os.path.join(tempfile.gettempdir(), f"loom-tune-{os.getuid()}.lock"))
    result = _DASK_CHILD.run(job, timeout)
    return {**result, "worker": get_worker().address}


class DaskWorkers:
    """Candidates measured on a Dask cluster's workers (a Client, or the
    scheduler's address).  Dask resubmits the work of a worker that dies."""

    def __init__(self, client, timeout=60.0):
        from distributed import Client
        self._own = not isinstance(client, Client)
        self.client = Client(client, timeout="20s") if self._own else client
        self.timeout = timeout
        self.count = max(1, len(self.client.scheduler_info().get("workers", {})))

    def map(self, jobs):
        futures = [self.client.submit(dask_measure, job, self.timeout, pure=False) for job in jobs]
        results = []
        for fut in futures:
            try:
                results.append(fut.result())
            except Exception as e:  # noqa: BLE001 -- KilledWorker after retries: the candidate's record
                results.append({"error": f"{type(e).__name__}: {e}", "worker": "dask"})
        return results

    def close(self):
        if self._own:
            self.client.close()


def workers_from(spec, timeout=60.0):
    """local:N, dask://HOST:PORT, or a distributed.Client."""
    if spec is None:
        return LocalWorkers(1, timeout)
    if isinstance(spec, str):
        if spec.startswith("local:"):
            try:
                n = int(spec[len("local:"):])
            except ValueError:
                raise ValueError(f"workers '{spec}': local:N takes a number of processes") from None
            return LocalWorkers(n, timeout)
        if spec.startswith("dask://"):
            return DaskWorkers("tcp://" + spec[len("dask://"):], timeout)
        if spec.startswith("tcp://"):
            return DaskWorkers(spec, timeout)
        raise ValueError(f"workers '{spec}': expected local:N or dask://HOST:PORT")
    return DaskWorkers(spec, timeout)
