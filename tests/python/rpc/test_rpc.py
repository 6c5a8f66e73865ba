"""loom-rpc-server and loom.rpc (docs/rpc.md): remote runs agree with
NumPy and with local runs, time_evaluator follows TVM's semantics, and
the server survives what a hostile or broken client sends, and what a
crashing or hanging kernel does."""
import os
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

import loom
import loom.rpc
from conftest import LOOMC, ROOT
from rpc_util import SERVER, Server, error_message, frame, read_frame

pytestmark = pytest.mark.skipif(not SERVER.exists(), reason=f"{SERVER} is not built")


def mlp_arrays(seed=7, batch=64):
    rng = np.random.default_rng(seed)
    shapes = {"x": (batch, 784), "w1": (512, 784), "b1": (512,), "w2": (512, 512), "b2": (512,), "w3": (10, 512),
              "b3": (10,)}
    return [(rng.standard_normal(s) * (0.05 if n.startswith("w") else 1)).astype(np.float32)
            for n, s in shapes.items()]


def mlp_reference(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    z = h @ w3.T + b3
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def build(tmp, source, name):
    """A library built from the .loom text `source` for configs/host.yaml."""
    path = tmp / f"{name}.loom"
    path.write_text(source)
    out = tmp / f"{name}.so"
    subprocess.run([LOOMC, "build", str(path), "--config", str(ROOT / "configs/host.yaml"), "-o", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def mlp_so(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlp")
    out = d / "mlp.so"
    subprocess.run([LOOMC, "build", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs/host.yaml"),
                    "-o", str(out)], check=True)
    return out


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()


def test_a_remote_mlp_matches_numpy_and_the_local_run(server, mlp_so):
    arrays = mlp_arrays()
    with loom.rpc.connect(server.address, key=server.key) as sess:
        assert sess.upload(mlp_so) == mlp_so.stat().st_size
        mod = sess.load_module("mlp.so")
        assert "main" in mod.function_names()
        y = mod["main"](*[sess.array(a) for a in arrays])
        assert isinstance(y, loom.rpc.RemoteArray) and y.shape == (64, 10) and y.dtype == "float32"
        got = y.numpy()
        # NumPy arrays are copied to the server's CPU on the way.
        again = mod["main"](*arrays).numpy()
    want = mlp_reference(*[a.astype(np.float64) for a in arrays])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    local = loom.runtime.load_module(str(mlp_so))["main"](*arrays).numpy()
    assert np.array_equal(got, local) and np.array_equal(again, local)


def test_info_says_what_the_server_measures_on(server):
    from loom._ffi import call

    with loom.rpc.connect(server.address, key=server.key) as sess:
        info = sess.info()
    assert info["cpu"] == call("tune.cpu") and info["loom"] == loom.__version__ and info["protocol"] == 1


def test_time_evaluator_grows_number_to_min_repeat_ms(server, mlp_so):
    arrays = mlp_arrays()
    with loom.rpc.connect(server.address, key=server.key) as sess:
        sess.upload(mlp_so)
        mod = sess.load_module("mlp.so")
        t = mod.time_evaluator("main", sess.cpu(), number=1, repeat=3, min_repeat_ms=30)(*arrays)
        assert len(t.results) == 3 and all(r > 0 for r in t.results)
        # Every repeat lasted at least min_repeat_ms.
        assert t.number > 1 and t.min * t.number >= 0.030 * 0.999
        flushed = mod.time_evaluator("main", number=2, repeat=2, cache_flush=True)(*arrays)
        assert flushed.number == 2 and len(flushed.results) == 2
    local = loom.runtime.time_evaluator(loom.runtime.load_module(str(mlp_so))["main"], number=1, repeat=2,
                                        min_repeat_ms=20)(*arrays)
    assert local.number > 1 and local.min * local.number >= 0.020 * 0.999


def test_remote_errors_carry_loom_messages_and_the_session_goes_on(server, mlp_so):
    with loom.rpc.connect(server.address, key=server.key) as sess:
        sess.upload(mlp_so)
        mod = sess.load_module("mlp.so")
        with pytest.raises(loom.rpc.RemoteError, match="mian|main"):
            mod["mian"]
        with pytest.raises(loom.rpc.RemoteError, match="no file 'absent.so'"):
            sess.load_module("absent.so")
        with pytest.raises(loom.rpc.RemoteError):
            mod["main"](sess.array(np.zeros((3, 3), np.float32)))
        with pytest.raises(loom.LoomError):  # the base of every RPC error
            sess.upload(b"", "../escape")
        y = mod["main"](*mlp_arrays())
        assert y.shape == (64, 10)


def test_loomc_run_remote_matches_loomc_run(server, mlp_so, tmp_path):
    inputs = []
    for i, a in enumerate(mlp_arrays()):
        np.save(tmp_path / f"in{i}.npy", a)
        inputs += ["--input", str(tmp_path / f"in{i}.npy")]
    local = subprocess.run([LOOMC, "run", str(mlp_so), *inputs, "--output", str(tmp_path / "local.npy")],
                           capture_output=True, text=True)
    assert local.returncode == 0, local.stderr
    remote = subprocess.run([LOOMC, "run", str(mlp_so), *inputs, "--output", str(tmp_path / "remote.npy"),
                             "--remote", server.address, "--key", str(server.key), "--bench", "5", "--profile"],
                            capture_output=True, text=True)
    assert remote.returncode == 0, remote.stderr
    assert "output 0: float32 (64, 10)" in remote.stdout
    assert f"over 5 runs (after one untimed run, on {server.address}'s clock)" in remote.stdout
    assert np.array_equal(np.load(tmp_path / "local.npy"), np.load(tmp_path / "remote.npy"))
    # Random inputs, shaped by the signature loomc reads without running the library.
    seeded = subprocess.run([LOOMC, "run", str(mlp_so), "--seed", "3", "--remote", server.address, "--key",
                             str(server.key)], capture_output=True, text=True)
    assert seeded.returncode == 0 and "output 0: float32 (64, 10)" in seeded.stdout, seeded.stderr
    # A .loom model is built here and its library uploaded.
    built = subprocess.run([LOOMC, "run", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs/host.yaml"),
                            "--remote", server.address, "--key", str(server.key)], capture_output=True, text=True)
    assert built.returncode == 0 and "output 0: float32 (64, 10)" in built.stdout, built.stderr


def test_a_wrong_or_missing_key_is_refused(server, tmp_path, mlp_so):
    with pytest.raises(loom.rpc.AuthenticationError, match="refused the key"):
        loom.rpc.connect(server.address, key=b"not the key at all, long enough")
    with pytest.raises(loom.rpc.AuthenticationError, match="requires a key"):
        loom.rpc.connect(server.address)
    wrong = tmp_path / "wrong.key"
    wrong.write_text("0123456789abcdef0123")
    wrong.chmod(0o600)
    run = subprocess.run([LOOMC, "run", str(mlp_so), "--remote", server.address, "--key", str(wrong)],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "refused the key" in run.stderr
    with loom.rpc.connect(server.address, key=server.key) as sess:  # the server goes on
        assert sess.upload(b"abc", "a.bin") == 3


def test_a_version_mismatch_is_one_readable_error_on_both_sides(server):
    s = server.raw()
    s.sendall(frame(1, b"loom-rpc" + struct.pack("<I", 99)))
    type_, payload = read_frame(s)
    code, message = error_message(payload)
    assert type_ == 101 and code == 3
    assert message == ("protocol version mismatch: the server speaks version 1, the client version 99 "
                       "(update the older side)")
    s.close()
    time.sleep(0.3)
    assert server.alive()
    assert message in server.stop()


def handshake(server, sock):
    """The handshake with the test's key, by hand."""
    import hashlib
    import hmac

    key = server.key.read_bytes().strip()
    sock.sendall(frame(1, b"loom-rpc" + struct.pack("<I", 1)))
    _, hello = read_frame(sock)
    server_nonce, client_nonce = hello[13:45], os.urandom(32)
    sock.sendall(frame(2, client_nonce + hmac.new(key, b"loom-rpc auth" + server_nonce + client_nonce,
                                                  hashlib.sha256).digest()))
    type_, _ = read_frame(sock)
    assert type_ == 100


def still_serves(server):
    with loom.rpc.connect(server.address, key=server.key) as sess:
        return sess.upload(b"ok", "check.bin") == 2


def test_a_frame_announcing_2_62_bytes_is_refused_before_reading(server):
    s = server.raw()
    handshake(server, s)
    s.sendall(struct.pack("<IQ", 10, 1 << 62))
    type_, payload = read_frame(s)
    code, message = error_message(payload)
    assert type_ == 101 and code == 4 and "announces 4611686018427387904 bytes" in message
    assert read_frame(s) is None  # the session ends: the stream cannot be followed
    assert still_serves(server)
    # Before the handshake too.
    s = server.raw()
    s.sendall(struct.pack("<IQ", 1, 1 << 62))
    assert error_message(read_frame(s)[1])[0] == 4
    assert still_serves(server)


def test_truncated_and_malformed_frames(server):
    s = server.raw()
    handshake(server, s)
    s.sendall(frame(18, b"\x01\x02"))  # a CALL two bytes long
    code, message = error_message(read_frame(s)[1])
    assert code == 1 and "CALL: function: needs 8 byte(s)" in message
    s.sendall(frame(77, b""))
    code, message = error_message(read_frame(s)[1])
    assert code == 1 and "message 77" in message
    s.sendall(frame(10, b"\x05\x00\x00")[:9])  # half a header, then gone
    s.close()
    s = server.raw()
    s.sendall(b"\x01\x00\x00")  # a third of a HELLO header, then gone
    s.close()
    assert still_serves(server)


def test_upload_names_stay_in_the_work_folder(server, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("untouched")
    (server.workdir / "link.so").symlink_to(outside)
    with loom.rpc.connect(server.address, key=server.key) as sess:
        for name in ["../outside.txt", "/etc/passwd", "a/b", ".hidden", "", "..", "x\0y", "é.so", "a" * 300]:
            with pytest.raises(loom.rpc.PathError):
                sess.upload(b"bad", name)
        # A symlink planted in the work folder is replaced, not followed.
        sess.upload(b"new", "link.so")
        with pytest.raises(loom.rpc.PathError):
            sess.load_module("../outside.txt")
    assert outside.read_text() == "untouched"
    assert not (server.workdir / "link.so").is_symlink() and (server.workdir / "link.so").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt", "server.key", "work"]
    assert sorted(p.name for p in server.workdir.iterdir()) == ["link.so"]


def test_an_upload_over_max_upload_and_a_disconnect_mid_upload(tmp_path):
    server = Server(tmp_path, "--max-upload", "64K")
    try:
        with loom.rpc.connect(server.address, key=server.key) as sess:
            assert sess.upload(bytes(60000), "fits.bin") == 60000
            with pytest.raises(loom.rpc.LimitError, match="over --max-upload 65536"):
                sess.upload(bytes(65537), "big.bin")
        with pytest.raises(loom.rpc.LimitError):  # beyond the frame limit: refused from its header
            with loom.rpc.connect(server.address, key=server.key) as sess:
                sess.upload(bytes(200000), "bigger.bin")
        s = server.raw()
        handshake(server, s)
        payload = struct.pack("<I", 7) + b"half.so" + struct.pack("<Q", 50000)
        s.sendall(struct.pack("<IQ", 10, len(payload) + 50000) + payload + bytes(1000))
        s.close()
        time.sleep(0.3)
        assert server.alive()
        names = sorted(p.name for p in server.workdir.iterdir())
        assert names == ["fits.bin"], names
    finally:
        server.stop()


def test_fifty_concurrent_clients(server, mlp_so):
    arrays = mlp_arrays()
    want = loom.runtime.load_module(str(mlp_so))["main"](*arrays).numpy()
    with loom.rpc.connect(server.address, key=server.key) as sess:
        sess.upload(mlp_so)
    results, errors = [None] * 50, []

    def client(i):
        try:
            with loom.rpc.connect(server.address, key=server.key, timeout=120) as sess:
                results[i] = sess.load_module("mlp.so")["main"](*arrays).numpy()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"client {i}: {e!r}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors[:3]
    assert all(np.array_equal(r, want) for r in results)
    assert server.alive()


CRASH = r'''
@boom = extern "asm" dps fn(Tensor[(4), float32], Tensor[(4), float32]) -> none attrs {isa: "x86_64"} payload "  .text\n  .globl boom\nboom:\n  xorl %eax, %eax\n  movl $1, (%rax)\n  ret\n"

@main = fn(%x: Tensor[(4), float32]) {
  call_dps<Tensor[(4), float32]>(@boom, (%x,))
}
'''

SPIN = r'''
@spin = extern "asm" dps fn(Tensor[(4), float32], Tensor[(4), float32]) -> none attrs {isa: "x86_64"} payload "  .text\n  .globl spin\nspin:\n  jmp spin\n"

@main = fn(%x: Tensor[(4), float32]) {
  call_dps<Tensor[(4), float32]>(@spin, (%x,))
}
'''


def test_a_crashing_kernel_ends_its_session_only(tmp_path, mlp_so):
    crash = build(tmp_path, CRASH, "crash")
    server = Server(tmp_path)
    try:
        with loom.rpc.connect(server.address, key=server.key) as sess:
            sess.upload(crash)
            f = sess.load_module("crash.so")["main"]
            with pytest.raises(loom.rpc.SessionDied, match="killed by SIGSEGV"):
                f(np.ones(4, np.float32))
        assert server.alive() and still_serves(server)
    finally:
        server.stop()


def test_a_hanging_kernel_is_killed_at_the_session_timeout(tmp_path):
    spin = build(tmp_path, SPIN, "spin")
    server = Server(tmp_path, "--session-timeout", "3")
    try:
        with loom.rpc.connect(server.address, key=server.key) as sess:
            sess.upload(spin)
            f = sess.load_module("spin.so")["main"]
            start = time.time()
            with pytest.raises(loom.rpc.SessionTimeout, match="timed out after 3 s"):
                f(np.ones(4, np.float32))
            assert time.time() - start < 10
        assert server.alive() and still_serves(server)
    finally:
        server.stop()


def test_the_server_links_the_runtime_alone():
    needed = subprocess.run(["readelf", "-d", str(SERVER)], capture_output=True, text=True, check=True).stdout
    assert "libloom_runtime.so" in needed
    assert "libloom_core.so" not in needed and "libLLVM" not in needed and "libpython" not in needed


def test_the_server_refuses_unsafe_settings(tmp_path):
    key = tmp_path / "open.key"
    key.write_text("0123456789abcdef0123")
    key.chmod(0o644)
    for args, message in [(["--host", "0.0.0.0"], "needs --allow-remote"),
                          (["--host", "0.0.0.0", "--allow-remote"], "--allow-remote needs --key"),
                          (["--key", str(key)], "readable by other users; chmod 600"),
                          (["--max-upload", "12Q"], "--max-upload takes a size")]:
        run = subprocess.run([SERVER, "--port", "0", *args], capture_output=True, text=True, timeout=10)
        assert run.returncode == 2 and message in run.stderr, (args, run.stderr)


@pytest.mark.parametrize("config,device", [("opencl.yaml", "opencl"), ("vulkan.yaml", "vulkan"), ("npu.yaml", "npu")])
def test_remote_devices_run_the_mlp(server, tmp_path, config, device):
    """A library built for a device runs on the server, which loads that
    device's runtime half (OpenCL on PoCL, Vulkan on lavapipe, the NPU's
    simulator); arrays copy to and from the device itself."""
    library = tmp_path / f"mlp_{device}.so"
    built = subprocess.run([LOOMC, "build", str(ROOT / "examples/mlp.loom"), "--config", str(ROOT / "configs" / config),
                            "-o", str(library)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    arrays = mlp_arrays()
    want = mlp_reference(*[a.astype(np.float64) for a in arrays])
    with loom.rpc.connect(server.address, key=server.key) as sess:
        sess.upload(library)
        mod = sess.load_module(library.name)
        got = mod["main"](*arrays).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        if device != "npu":  # the NPU's memory is its simulator's: the CPU holds the arrays
            dev = sess.device(device, 0)
            x = sess.array(arrays[0], dev)
            assert x.device == f"{device}:0" and np.array_equal(x.numpy(), arrays[0])
            assert f"{device}" in sess.devices()
        t = mod.time_evaluator("main", number=2, repeat=2)(*arrays)
        assert len(t.results) == 2 and t.min > 0
        if device == "npu":
            assert "npu" in mod.profile()
