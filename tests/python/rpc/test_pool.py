"""Device pools on Dask (docs/rpc.md, "Device pools on Dask"): two
loom-rpc-servers joined to a Dask scheduler through fronting workers with
the resource loom-rpc:test-cpu; loom.rpc.pool leases free servers,
loom.tune measures on them (building here) and records each record's
server, and a server killed with SIGKILL mid-trial costs that trial only."""
import json
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import loom
import loom.rpc
import loom.tune
from conftest import LOOMC, ROOT
from rpc_util import SERVER, Server

sys.path.insert(0, str(ROOT / "tests" / "python" / "tune"))
from test_tune import CONFIG, _job, model  # noqa: E402
from test_tune_dask import dask_cluster, dask_worker  # noqa: E402

pytestmark = pytest.mark.skipif(not SERVER.exists(), reason=f"{SERVER} is not built")

KEY = "test-cpu"


@pytest.fixture
def pool(tmp_path):
    servers = []
    for k in (1, 2):
        d = tmp_path / f"server{k}"
        d.mkdir()
        servers.append(Server(d))

    def workers(address):
        fronts = [(f"front{k}", [sys.executable, "-m", "loom.rpc.worker", f"dask://{address}", "--server",
                                 s.address, "--key", str(s.key), "--device-key", KEY, "--name", f"front{k}"])
                  for k, s in enumerate(servers, 1)]
        return fronts + [dask_worker(address, "plain")]  # a plain worker too: no pool task may land on it

    try:
        with dask_cluster(tmp_path, workers, 3, timeout=90) as (address, client, _):
            yield f"dask://{address}", client, servers
    finally:
        for s in servers:
            s.stop()


def test_pool_leases_free_servers(pool, tmp_path):
    address, _, servers = pool
    library = tmp_path / "mlp.so"
    subprocess.run([LOOMC, "build", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs/host.yaml"),
                    "-o", str(library)], check=True)
    rng = np.random.default_rng(1)
    shapes = [(64, 784), (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    arrays = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    want = loom.runtime.load_module(str(library))["main"](*arrays).numpy()
    a = loom.rpc.pool(address, KEY)
    b = loom.rpc.pool(address, KEY)
    try:
        assert {a.address, b.address} == {s.address for s in servers}  # each lease its own server
        with pytest.raises(loom.rpc.RpcError, match="became free within 2"):
            loom.rpc.pool(address, KEY, lease_timeout=2)
        for sess in (a, b):
            sess.upload(library)
            assert np.array_equal(sess.load_module("mlp.so")["main"](*arrays).numpy(), want)
    finally:
        a.close()
    with loom.rpc.pool(address, KEY, lease_timeout=30) as c:  # a's server is free again
        assert c.address == a.address
    b.close()
    with pytest.raises(loom.rpc.RpcError, match="fronts a server of device key 'other'"):
        loom.rpc.pool(address, "other")


def test_tune_measures_on_the_device_pool(pool, tmp_path):
    address, client, servers = pool
    db = tmp_path / "pool.jsonl"
    results = loom.tune.tune(model(), CONFIG, trials=6, database=db, workers=address, device_key=KEY, progress=False,
                             verify=0)
    records = [json.loads(line) for line in db.read_text().splitlines()]
    assert len(records) == 6 and sum(r["trials"] for r in results) == 6
    assert all("median_us" in r for r in records), [r.get("error") for r in records]
    # Each record names the server that measured it, one of the pool's.
    # Which ones is Dask's choice: a trial that ends before the next is
    # built leaves both servers free, so one may measure them all.  That
    # busy servers pass trials on to the others is shown by the next test.
    assert {r["server"] for r in records} <= {s.address for s in servers}, records
    with loom.rpc.connect(servers[0].address, key=servers[0].key) as sess:
        cpu = sess.info()["cpu"]
    assert all(r["cpu"] == cpu for r in records)


def test_a_server_killed_mid_trial_costs_that_trial_only(pool):
    address, client, servers = pool
    from loom.rpc.dask_pool import RemoteWorkers
    task = loom.tune.tasks(model(), CONFIG)[0]
    trace, _, _ = task.sample(-1)
    workers = RemoteWorkers(address, KEY, timeout=120)
    # Long trials (many repeats) on both servers, then one server killed
    # while they run: that trial's record says why, the rest go to the other.
    jobs = [_job(task, trace, repeats=100, min_repeat_ms=30) for _ in range(6)]
    results = []
    runner = threading.Thread(target=lambda: results.extend(workers.map(jobs)))
    runner.start()
    deadline = time.time() + 90
    while time.time() < deadline and sum(1 for v in client.processing().values() if v) < 2:
        time.sleep(0.1)
    time.sleep(1.0)
    servers[1].proc.send_signal(signal.SIGKILL)
    runner.join(300)
    workers.close()
    assert not runner.is_alive() and len(results) == 6
    failed = [r for r in results if "error" in r]
    seen = [(r.get("server"), r.get("error", "")[:200]) for r in results]
    assert len(failed) == 1 and servers[1].address in failed[0]["error"], (seen, servers[1].address)
    assert all(r["server"] == servers[0].address for r in results if "median_us" in r)
