"""Device pools on Dask (docs/rpc.md, "Device pools on Dask"): each
loom-rpc-server joins a Dask cluster through a worker that fronts it
(python3 -m loom.rpc.worker), tagged with the Dask resource
"loom-rpc:DEVICE_KEY" (one unit: one task at a time per server), so
Dask's queueing, priorities and handling of lost workers hand the servers
out instead of a tracker of our own.

* lease(): a session on a free server (loom.rpc.pool).
* RemoteWorkers: loom.tune's measurements on the servers of a key, the
  candidates built here (loom.tune.tune(..., device_key=KEY))."""
import os
import queue
import tempfile
import threading
import uuid

from . import RemoteError, RpcError, Session, SessionDied, _key_bytes, connect

# In a fronting worker's process: {"server", "key", "device_key", "cpu"}.
_FRONT = None


def resource(device_key):
    return f"loom-rpc:{device_key}"


def scheduler_address(scheduler):
    if scheduler.startswith("dask://"):
        return "tcp://" + scheduler[len("dask://"):]
    return scheduler


def _client(scheduler):
    from distributed import Client
    if isinstance(scheduler, Client):
        return scheduler, False
    return Client(scheduler_address(scheduler), timeout="20s"), True


def _servers(client, device_key):
    """The workers that front a server of `device_key`."""
    name = resource(device_key)
    return [w for w, info in client.scheduler_info()["workers"].items() if name in (info.get("resources") or {})]


def serve(scheduler, server, key=None, device_key="cpu", name=None):
    """Runs a Dask worker (in this process, until it is stopped) that fronts
    the loom-rpc-server at `server`, after checking that it answers."""
    import asyncio

    from distributed import Worker

    global _FRONT
    secret = _key_bytes(key)
    with connect(server, key=secret) as s:
        info = s.info()
    _FRONT = {"server": server, "key": secret, "device_key": device_key, "cpu": info["cpu"], "session": None,
              "expected": {}}

    async def run():
        async with Worker(scheduler_address(scheduler), nthreads=1, resources={resource(device_key): 1},
                          name=name or f"loom-rpc {server}") as worker:
            print(f"loom.rpc.worker: fronting {server} ({info['cpu']}) as {worker.address} with the resource "
                  f"{resource(device_key)}", flush=True)
            await worker.finished()

    asyncio.run(run())


def _front():
    if _FRONT is None:
        raise RpcError("this Dask worker fronts no loom-rpc-server (start it with python3 -m loom.rpc.worker)")
    return _FRONT


def _hold(queue_name, event_name):
    """Runs on a fronting worker: hands its server to a lease, then keeps
    the resource until the lease ends."""
    from distributed import Event, Queue
    f = _front()
    if f.get("gone"):
        raise RpcError(f"the server {f['server']} is gone (restart its worker with it)")
    Queue(queue_name).put({"server": f["server"], "key": f["key"]})
    Event(event_name).wait()
    return f["server"]


class PooledSession(Session):
    """A Session on a server leased from a device pool; close() hands the
    server back."""

    def close(self):
        try:
            super().close()
        finally:
            lease_ = self.__dict__.pop("_lease", None)
            if lease_ is not None:
                client, event, future, own = lease_
                event.set()
                try:
                    future.result(timeout=30)
                except Exception:  # noqa: BLE001 -- the worker went: nothing to hand back
                    pass
                if own:
                    client.close()


def lease(scheduler, device_key, timeout=None, lease_timeout=None):
    from distributed import Event, Queue
    client, own = _client(scheduler)
    try:
        if not _servers(client, device_key):
            raise RpcError(f"no worker of {scheduler} fronts a server of device key '{device_key}' (start one with "
                           f"python3 -m loom.rpc.worker {scheduler} --server HOST:PORT --device-key {device_key})")
        token = uuid.uuid4().hex
        queue, event = Queue(f"loom-rpc-lease-{token}", client=client), Event(f"loom-rpc-lease-{token}", client=client)
        future = client.submit(_hold, queue.name, event.name, resources={resource(device_key): 1}, pure=False,
                               key=f"loom-rpc-lease-{token}")
        got, waited = None, 0.0
        while got is None:
            try:
                got = queue.get(timeout=1)
            except Exception:  # noqa: BLE001 -- distributed's TimeoutError: not yet
                waited += 1
                if future.status == "error":  # the worker could not hand its server out
                    raise RpcError(f"leasing a server of device key '{device_key}': {future.exception()}") from None
                if lease_timeout is not None and waited >= lease_timeout:
                    event.set()
                    future.cancel()
                    raise RpcError(f"no server of device key '{device_key}' became free within {lease_timeout} s") \
                        from None
        try:
            sess = PooledSession(got["server"], key=got["key"], timeout=timeout)
        except BaseException:
            event.set()  # the server back to the pool
            raise
        sess._lease = (client, event, future, own)
        return sess
    except BaseException:
        if own:
            client.close()
        raise


# --- tuning on a device pool ---

def _session():
    """The fronting worker's session with its server, opened again after a
    failure."""
    f = _front()
    if f["session"] is None:
        f["session"] = connect(f["server"], key=f["key"], timeout=None)
        f["expected"] = {}
    return f["session"]


def _retire():
    """The server is gone: this worker says so, and answers every later
    task with a retry, which the pool's client sends to its other servers.
    (It stays in the cluster: the results it holds, the record of the
    trial that found out among them, would be lost with it and computed
    again elsewhere.)"""
    f = _front()
    if not f.get("gone"):
        f["gone"] = True
        print(f"loom.rpc.worker: the server {f['server']} is gone; this worker takes no more of its device's work "
              f"(restart it with the server)", flush=True)


def _server_cpu():
    return _front()["cpu"]


def _measure(reference, payload, timeout):
    """Runs on a fronting worker: one candidate on its server, checked
    against the unscheduled function's outputs (computed there once per
    task), then timed with the server's evaluator."""
    import numpy as np
    from distributed import get_worker
    f = _front()
    here = get_worker().address
    if f.get("gone"):
        return {"retry": True, "dask_worker": here}  # to another server: this one costs no further trial
    out = {"cpu": f["cpu"], "worker": f"rpc://{f['server']}", "server": f["server"], "dask_worker": here}
    try:
        sess = _session()
    except (RpcError, OSError):
        _retire()  # no trial began: it goes elsewhere
        return {"retry": True, "dask_worker": here}
    try:
        expected = f["expected"].get(reference["name"])
        if expected is None:
            sess.upload(reference["library"], reference["name"])
            arrays = [sess.array(a) for a in reference["inputs"]]
            sess.load_module(reference["name"])["task"](*arrays)
            expected = f["expected"][reference["name"]] = [a.numpy() for a in arrays]
        sess.upload(payload["cand"], "candidate.so")
        mod = sess.load_module("candidate.so")
        # The reference's inputs, but in the candidate's layouts where it relays them out.
        arrays = [sess.array(payload["relaid_inputs"].get(str(k), a)) for k, a in enumerate(reference["inputs"])]
        mod["task"](*arrays)
        for k, (got, want) in enumerate(zip(arrays, expected)):
            if k in payload["relaid"]:
                continue
            got = got.numpy()
            scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
            tol = payload["tolerance"]
            if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol * scale):
                return {**out, "error": f"wrong results: parameter {k} differs from the unscheduled function's"}
        t = mod.time_evaluator("task", number=1, repeat=payload["repeats"],
                               min_repeat_ms=payload["min_repeat_ms"])(*arrays)
        return {**out, "median_us": t.median * 1e6, "runs": t.number * len(t.results)}
    except RemoteError as e:  # the candidate's failure on a working server
        return {**out, "error": f"RemoteError on {f['server']}: {e}"[:2000]}
    except (SessionDied, RpcError, OSError) as e:
        if f["session"] is not None:
            try:
                f["session"]._sock.close()
            except OSError:
                pass
        f["session"] = None
        gone = isinstance(e, (SessionDied, OSError)) or "cannot connect" in str(e)
        if gone:
            try:
                connect(f["server"], key=f["key"], connect_timeout=2).close()
                gone = False  # the session died (a crashing candidate); the server is alive
            except (RpcError, OSError):
                _retire()
        why = "the server is gone; its worker takes no more trials" if gone else "the session ended"
        return {**out, "error": f"{type(e).__name__} on {f['server']}: {e} ({why})"[:2000]}


class RemoteWorkers:
    """loom.tune's pool for device_key: candidates built on this machine,
    each measured on a free server of the key (docs/rpc.md, "Device
    pools on Dask").  `cpu` is the servers' CPU as their INFO says, which
    the records carry."""

    def __init__(self, scheduler, device_key, timeout=60.0, builders=None):
        self.client, self._own = _client(scheduler)
        self.device_key, self.timeout = device_key, timeout
        servers = _servers(self.client, device_key)
        if not servers:
            if self._own:
                self.client.close()
            raise ValueError(f"no worker of {scheduler} fronts a server of device key '{device_key}' (start one "
                             f"with python3 -m loom.rpc.worker)")
        self.count = len(servers)
        self.cpu = self.client.submit(_server_cpu, resources={resource(device_key): 1}, pure=False).result(timeout)
        self._references = {}
        self._gone = set()  # Dask workers whose server is gone
        # Candidates build in local processes, in parallel, while the
        # servers measure (the tuning process alone built one at a time,
        # at half a Dask cluster's rate).
        self.builders = max(1, builders or os.cpu_count() or 1)
        self._children = []

    def _reference(self, job):
        """The task's reference library (its unscheduled function), built
        here once per task and scattered to every worker once, and its
        inputs."""
        import loom
        from loom._ffi import call

        from ..tune.measure import _build, _random_inputs
        key = (job["hash"], job["config"])
        if key not in self._references:
            func = loom.parse(job["task"]).functions["task"]
            plain, _ = call("tune.replay", func, "[]")
            self._references.clear()  # one task at a time
            inputs = _random_inputs(func, 0)
            reference = {"library": _library_bytes(_build(plain, job["config"], job["source"])), "inputs": inputs,
                         "name": f"reference-{job['hash']}.so"}
            self._references[key] = (self.client.scatter(reference, broadcast=True), inputs)
        return self._references[key]

    def _build(self, child, job, reference):
        """The candidate of `job` built in a builder process: (ref, payload)
        to measure, or None; and what the record keeps of here.
        `reference`: the task's (scattered reference, inputs)."""
        ref, inputs = reference
        out = child.run(job, self.timeout)
        if "path" not in out:
            return None, out
        try:
            with open(out["path"], "rb") as f:
                library = f.read()
        finally:
            os.unlink(out["path"])
        import loom
        from loom._ffi import call

        from ..tune.measure import _TOLERANCE
        layouts = out["layouts"]
        # Only what differs from the reference's inputs, which the workers hold already.
        relaid_inputs = {str(k): call("tune.relayout", loom.nd.array(a), layouts[str(k)]).numpy()
                         for k, a in enumerate(inputs) if str(k) in layouts}
        payload = {"cand": library, "relaid_inputs": relaid_inputs, "relaid": [int(k) for k in layouts],
                   "tolerance": _TOLERANCE, "repeats": job.get("repeats", 7),
                   "min_repeat_ms": job.get("min_repeat_ms", 2.0)}
        return (ref, payload), {"features": out["features"]}

    def _submit(self, prepared):
        """On a free server of the key, avoiding the workers whose server is
        gone."""
        alive = [w for w in _servers(self.client, self.device_key) if w not in self._gone]
        if not alive:
            raise RpcError(f"every server of device key '{self.device_key}' is gone")
        return self.client.submit(_measure, prepared[0], prepared[1], self.timeout,
                                  resources={resource(self.device_key): 1}, workers=alive, pure=False)

    def map(self, jobs):
        """Results in the order of `jobs`, each with "worker" and "server".
        Candidates build in `builders` local processes at once, and each is
        submitted as soon as it is built, so the builds here overlap the
        measurements there."""
        from ..tune.measure import _Child
        while len(self._children) < self.builders:
            self._children.append(_Child(module="loom.rpc._builder"))
        # Built here, in order, before the builder threads start (they only read them).
        references = [self._reference(job) for job in jobs]
        jobs_prepared, futures = [None] * len(jobs), [None] * len(jobs)
        todo = queue.Queue()
        for k in range(len(jobs)):
            todo.put(k)

        def drive(child):
            while True:
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    prepared, local = self._build(child, jobs[k], references[k])
                    futures[k] = None if prepared is None else self._submit(prepared)
                except Exception as e:  # noqa: BLE001 -- no server left, ...: this candidate's record says so
                    prepared, local = None, {"error": f"{type(e).__name__}: {e}"}
                jobs_prepared[k] = (prepared, local)

        threads = [threading.Thread(target=drive, args=(c,)) for c in self._children]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results = []
        for fut, (prepared, local) in zip(futures, jobs_prepared):
            if fut is None:
                results.append({**local, "cpu": self.cpu, "worker": "here"})
                continue
            try:
                res = fut.result()
                while res.get("retry"):  # its server was gone before the trial began
                    self._gone.add(res["dask_worker"])
                    res = self._submit(prepared).result()
                res.pop("dask_worker", None)
                results.append({**local, **res})
            except Exception as e:  # noqa: BLE001 -- KilledWorker after retries, no server left: the record
                results.append({**local, "cpu": self.cpu, "error": f"{type(e).__name__}: {e}", "worker": "dask"})
        return results

    def close(self):
        for c in self._children:
            c.close()
        self._children = []
        if self._own:
            self.client.close()


def _library_bytes(module):
    with tempfile.TemporaryDirectory(prefix="loom-rpc-") as d:
        path = os.path.join(d, "lib.so")
        module.export_library(path)
        with open(path, "rb") as f:
            return f.read()
