"""loom.tune on a Dask cluster (docs/tuning.md, "Running on a Dask
cluster"): Debian's dask-scheduler and two dask-worker processes on this
machine; candidates are measured on both, each record names its worker,
and a worker killed mid-trial loses nothing."""
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


@pytest.fixture
def cluster(tmp_path):
    if not shutil.which("dask-scheduler"):
        pytest.fail("dask-scheduler is missing: scripts/setup.sh installs python3-distributed")
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    logs = [open(tmp_path / f"{n}.log", "w") for n in ("scheduler", "w1", "w2")]
    procs = [subprocess.Popen(["dask-scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=logs[0], stderr=subprocess.STDOUT, env=env)]
    for k in (1, 2):
        procs.append(subprocess.Popen(["dask-worker", f"tcp://{address}", "--nthreads", "1", "--no-nanny",
                                       "--no-dashboard", "--name", f"w{k}"], stdout=logs[k], stderr=subprocess.STDOUT,
                                      env=env))
    from distributed import Client
    client = Client(f"tcp://{address}", timeout="30s")
    client.wait_for_workers(2, timeout=60)
    try:
        yield address, client, procs
    finally:
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
