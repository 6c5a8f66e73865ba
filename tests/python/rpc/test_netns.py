"""Really remote (docs/rpc.md, "Testing across a network"): the server in
a network namespace of its own, the client in another, joined by a veth
pair with addresses from a private range that only those two namespaces
use, so the client reaches the server over an interface and nothing
leaves the namespaces the test made.  Where namespaces are not permitted
(no root, no `ip`), the same checks run over loopback and say so."""
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import LOOMC, ROOT
from rpc_util import SERVER, Server

pytestmark = pytest.mark.skipif(not SERVER.exists(), reason=f"{SERVER} is not built")

SERVER_ADDR, CLIENT_ADDR = "10.231.7.1", "10.231.7.2"

CLIENT = r'''
import sys, numpy as np, loom.rpc
address, key, library, out, *inputs = sys.argv[1:]
with loom.rpc.connect(address, key=key, timeout=120) as sess:
    sess.upload(library)
    y = sess.load_module("mlp.so")["main"](*[np.load(f) for f in inputs]).numpy()
np.save(out, y)
'''


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


class Namespaces:
    """Two namespaces joined by a veth pair; removed on close."""

    def __init__(self):
        tag = str(os.getpid())[-6:]
        self.server, self.client = f"loomrpc-s{tag}", f"loomrpc-c{tag}"
        self.made = []
        for ns in (self.server, self.client):
            ip("netns", "add", ns)
            self.made.append(ns)
        ip("link", "add", f"lrs{tag}", "netns", self.server, "type", "veth", "peer", "name", f"lrc{tag}", "netns",
           self.client)
        self.server_if, self.client_if = f"lrs{tag}", f"lrc{tag}"
        for ns, dev, addr in [(self.server, self.server_if, SERVER_ADDR), (self.client, self.client_if, CLIENT_ADDR)]:
            ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def close(self):
        for ns in self.made:  # deleting a namespace deletes its end of the pair, and so the pair
            ip("netns", "del", ns, check=False)


def namespaces_or_reason():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return None, "network namespaces need root and iproute2"
    try:
        return Namespaces(), None
    except subprocess.CalledProcessError as e:
        return None, f"network namespaces are not permitted here ({e.stderr.strip()})"


def test_a_client_reaches_the_server_across_a_veth_pair(tmp_path):
    library = tmp_path / "mlp.so"
    subprocess.run([LOOMC, "build", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs/host.yaml"),
                    "-o", str(library)], check=True)
    ns, reason = namespaces_or_reason()
    if ns is None:
        warnings.warn(f"{reason}: the remote test runs over loopback")
        server = Server(tmp_path)
        client_prefix = []
    else:
        server = Server(tmp_path, "--allow-remote", host=SERVER_ADDR, wrap=("ip", "netns", "exec", ns.server))
        client_prefix = ["ip", "netns", "exec", ns.client]
    try:
        if ns is not None:
            # The route to the server is the veth pair, not loopback, and the
            # client's namespace has no other way out.
            route = ip("-n", ns.client, "route", "get", SERVER_ADDR).stdout
            assert f"dev {ns.client_if}" in route and "lo" not in route.split()
            links = ip("-n", ns.client, "-o", "link", "show").stdout
            assert sorted(line.split(":")[1].strip().split("@")[0] for line in links.splitlines()) == \
                sorted(["lo", ns.client_if])
            assert server.address == f"{SERVER_ADDR}:{server.address.rsplit(':', 1)[1]}"
        rng = np.random.default_rng(5)
        shapes = [(64, 784), (512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
        arrays = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
        files = []
        for i, a in enumerate(arrays):
            np.save(tmp_path / f"in{i}.npy", a)
            files.append(str(tmp_path / f"in{i}.npy"))
        out = tmp_path / "y.npy"
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        run = subprocess.run([*client_prefix, sys.executable, "-c", CLIENT, server.address, str(server.key),
                              str(library), str(out), *files], capture_output=True, text=True, env=env, timeout=180)
        assert run.returncode == 0, run.stderr
        import loom

        want = loom.runtime.load_module(str(library))["main"](*arrays).numpy()
        assert np.array_equal(np.load(out), want)
        # loomc too, from the client's namespace.
        run = subprocess.run([*client_prefix, str(LOOMC), "run", str(library), "--remote", server.address, "--key",
                              str(server.key), "--bench", "3"], capture_output=True, text=True, timeout=180)
        assert run.returncode == 0 and "output 0: float32 (64, 10)" in run.stdout, run.stderr
    finally:
        err = server.stop()
        if ns is not None:
            ns.close()
            assert ns.server not in ip("netns", "list").stdout
    if ns is not None:
        assert "warning: serving 10.231.7.1 beyond this machine" in err
