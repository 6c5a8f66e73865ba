"""loom.tune on a Dask cluster (docs/tuning.md, "Running on a Dask
cluster"): Debian's dask-scheduler and two dask-worker processes on this
machine; candidates are measured on both, each record names its worker,
and a worker killed mid-trial loses nothing."""
import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import loom
import loom.tune
from loom.tune.measure import DaskWorkers

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_tune import CONFIG, _job, model  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dask_cluster(tmp_path, workers, expect, timeout=60):
    """A dask-scheduler on a free port of 127.0.0.1 and the processes
    `workers(address)` names ([(name, argv)]), each logging to
    tmp_path/NAME.log: (address, client, processes) once `expect` workers
    have joined; every process is stopped on the way out."""
    if not shutil.which("dask-scheduler"):
        pytest.fail("dask-scheduler is missing: scripts/setup.sh installs python3-distributed")
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    logs, procs, client = [], [], None

    def start(name, argv):
        logs.append(open(tmp_path / f"{name}.log", "w"))
        procs.append(subprocess.Popen(argv, stdout=logs[-1], stderr=subprocess.STDOUT, env=env))

    try:
        start("scheduler", ["dask-scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"])
        for name, argv in workers(address):
            start(name, argv)
        from distributed import Client
        client = Client(f"tcp://{address}", timeout="30s")
        client.wait_for_workers(expect, timeout=timeout)
        yield address, client, procs
    finally:
        if client is not None:
            client.close()
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        for f in logs:
            f.close()


def dask_worker(address, name):
    """A plain dask-worker's (name, argv): one thread, no nanny."""
    return name, ["dask-worker", f"tcp://{address}", "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", name]


@pytest.fixture
def cluster(tmp_path):
    with dask_cluster(tmp_path, lambda address: [dask_worker(address, f"w{k}") for k in (1, 2)], 2) as running:
        yield running


def test_tune_on_two_dask_workers(cluster, tmp_path):
    address, client, _ = cluster
    workers = set(client.scheduler_info()["workers"])
    db = tmp_path / "dask.jsonl"
    results = loom.tune.tune(model(), CONFIG, trials=8, database=db, workers=f"dask://{address}", progress=False,
                             verify=0)
    records = [json.loads(line) for line in db.read_text().splitlines()]
    assert len(records) == 8 and sum(r["trials"] for r in results) == 8
    assert {r["worker"] for r in records} == workers, "both workers measured"
    assert all("median_us" in r for r in records), [r.get("error") for r in records]


def test_a_worker_killed_mid_trial_loses_nothing(cluster):
    address, client, procs = cluster
    task = loom.tune.tasks(model(), CONFIG)[0]
    trace, _, _ = task.sample(-1)
    pool = DaskWorkers(client, timeout=120)
    # Long trials (many repeats) on both workers, then one worker killed
    # while they run: its trials go to the other one.
    jobs = [_job(task, trace, repeats=400) for _ in range(6)]
    results = []
    runner = threading.Thread(target=lambda: results.extend(pool.map(jobs)))
    runner.start()
    deadline = time.time() + 60
    while time.time() < deadline and sum(1 for v in client.processing().values() if v) < 2:
        time.sleep(0.1)
    time.sleep(1.0)
    procs[1].send_signal(signal.SIGKILL)
    runner.join(300)
    assert not runner.is_alive()
    assert len(results) == 6 and all("median_us" in r for r in results), results
    survivors = set(client.scheduler_info()["workers"])
    assert len(survivors) == 1
    assert sum(r["worker"] in survivors for r in results) >= 3
