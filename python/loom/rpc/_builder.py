"""A process that builds tuning candidates for a device pool
(dask_pool.RemoteWorkers, docs/rpc.md "Device pools on Dask"):
python -m loom.rpc._builder.  It reads jobs ({"task", "config", "source",
"trace"}) on stdin and answers each on stdout, in loom.tune.measure's
framing, with {"path" (the library, exported to a temporary file the
caller reads and removes), "layouts", "features"} or {"error"}."""
import json
import os
import tempfile


def build_job(job):
    import loom
    from loom._ffi import call

    from loom.tune.measure import _build
    func = loom.parse(job["task"]).functions["task"]
    try:
        cand, features = call("tune.replay", func, json.dumps(job["trace"]))
    except loom.ScheduleError as e:
        return {"error": f"the trace does not replay: {e}"}
    try:
        lib = _build(cand, job["config"], job["source"])
    except loom.LoomError as e:
        return {"error": f"{type(e).__name__}: {e}"[:2000], "features": list(features)}
    layouts = dict(cand.attrs["param_layouts"].items()) if "param_layouts" in cand.attrs else {}
    fd, path = tempfile.mkstemp(prefix="loom-candidate-", suffix=".so")
    os.close(fd)
    try:
        lib.export_library(path)
    except loom.LoomError as e:  # the link failed: this candidate's record says why
        os.unlink(path)
        return {"error": f"{type(e).__name__}: {e}"[:2000], "features": list(features)}
    return {"path": path, "layouts": {str(k): str(v) for k, v in layouts.items()}, "features": list(features)}


def main():
    from loom.tune.measure import _receive, _send
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr
    while True:
        try:
            job = _receive(0)
        except EOFError:
            return
        _send(out, build_job(job))


if __name__ == "__main__":
    main()
