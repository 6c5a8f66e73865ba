"""loom.rpc (docs/rpc.md): run, time and profile built libraries on a
loom-rpc-server, as if they were local.

    import loom.rpc
    sess = loom.rpc.connect("127.0.0.1:9090", key="lab.key")
    sess.upload("mlp.so")
    mod = sess.load_module("mlp.so")
    y = mod["main"](sess.array(x))          # a RemoteArray
    y.numpy()
    mod.time_evaluator("main", number=10, repeat=5)(x).median

The protocol (frames, values, the challenge-response handshake) is
written out in docs/rpc.md; this module speaks it with the standard
library and NumPy."""
import hashlib
import hmac
import os
import secrets
import socket
import statistics
import struct

import numpy as np

from .. import _core

__all__ = ["connect", "Session", "RemoteModule", "RemoteFunction", "RemoteArray", "RemoteDevice", "TimeResult",
           "RpcError", "ProtocolError", "AuthenticationError", "VersionMismatch", "LimitError", "PathError",
           "RemoteError", "SessionDied", "SessionTimeout", "PROTOCOL_VERSION", "pool"]

PROTOCOL_VERSION = 1
_MAGIC = b"loom-rpc"
_NONCE = 32


class RpcError(_core.LoomError):
    """Anything that went wrong with a remote session."""


class ProtocolError(RpcError):
    """A malformed or unexpected frame."""


class AuthenticationError(RpcError):
    """The server refused the key (or does not hold it)."""


class VersionMismatch(RpcError):
    """The client and the server speak different protocol versions."""


class LimitError(RpcError):
    """A frame, upload or array over the server's limits."""


class PathError(RpcError):
    """An upload name the work folder does not take."""


class RemoteError(RpcError):
    """A Loom error on the server (its message)."""


class SessionDied(RpcError):
    """The session's process on the server died (a kernel crashed) or the
    connection was lost."""


class SessionTimeout(RpcError):
    """The session outlived the server's --session-timeout."""


_ERRORS = {1: ProtocolError, 2: AuthenticationError, 3: VersionMismatch, 4: LimitError, 5: PathError,
           6: RemoteError, 7: SessionDied, 8: SessionTimeout}

# Message types (docs/rpc.md, "The protocol").
_HELLO, _AUTH = 1, 2
_UPLOAD, _LOAD_MODULE, _GET_FUNCTION, _FUNCTION_NAMES, _DEVICES = 10, 11, 12, 13, 14
_ARRAY_EMPTY, _ARRAY_SET, _ARRAY_GET, _CALL, _TIME_EVALUATOR = 15, 16, 17, 18, 19
_PROFILE, _RELEASE, _CLOSE, _INFO = 20, 21, 22, 23
_OK, _ERROR = 100, 101

# Value kinds.
_NONE, _BOOL, _INT, _FLOAT, _STR, _BYTES, _HANDLE, _TENSOR, _TUPLE = range(9)


class _Writer:
    def __init__(self):
        self.parts = []

    def u8(self, v):
        self.parts.append(struct.pack("<B", v))
        return self

    def u32(self, v):
        self.parts.append(struct.pack("<I", v))
        return self

    def i64(self, v):
        self.parts.append(struct.pack("<q", v))
        return self

    def u64(self, v):
        self.parts.append(struct.pack("<Q", v))
        return self

    def f64(self, v):
        self.parts.append(struct.pack("<d", v))
        return self

    def str(self, v):
        b = v.encode()
        return self.u32(len(b)).raw(b)

    def bytes(self, v):
        return self.u64(len(v)).raw(v)

    def raw(self, v):
        self.parts.append(bytes(v))
        return self

    def value(self, v):
        if v is None:
            return self.u8(_NONE)
        if isinstance(v, (bool, np.bool_)):
            return self.u8(_BOOL).u8(int(bool(v)))
        if isinstance(v, (int, np.integer)):
            return self.u8(_INT).i64(int(v))
        if isinstance(v, (float, np.floating)):
            return self.u8(_FLOAT).f64(float(v))
        if isinstance(v, str):
            return self.u8(_STR).str(v)
        if isinstance(v, (bytes, bytearray)):
            return self.u8(_BYTES).bytes(v)
        if isinstance(v, (RemoteArray, RemoteModule, RemoteFunction)):
            v._check_alive()
            return self.u8(_HANDLE).u64(v._handle)
        if isinstance(v, (tuple, list)):
            self.u8(_TUPLE).u32(len(v))
            for item in v:
                self.value(item)
            return self
        raise TypeError(f"loom.rpc: a {type(v).__name__} cannot be an argument of a remote function (NumPy "
                        "arrays go through Session.array first)")

    def data(self):
        return b"".join(self.parts)


class _Reader:
    def __init__(self, data, what):
        self.data, self.pos, self.what = memoryview(data), 0, what

    def take(self, n, field):
        if n > len(self.data) - self.pos:
            raise ProtocolError(f"{self.what}: {field}: needs {n} byte(s), {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt, field):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), field))[0]

    def str(self, field):
        return bytes(self.take(self.unpack("<I", field), field)).decode()

    def value(self, field, session):
        kind = self.unpack("<B", field)
        if kind == _NONE:
            return None
        if kind == _BOOL:
            return bool(self.unpack("<B", field))
        if kind == _INT:
            return self.unpack("<q", field)
        if kind == _FLOAT:
            return self.unpack("<d", field)
        if kind == _STR:
            return self.str(field)
        if kind == _BYTES:
            return bytes(self.take(self.unpack("<Q", field), field))
        if kind == _HANDLE:
            return _Handle(self.unpack("<Q", field))
        if kind == _TENSOR:
            handle = self.unpack("<Q", field)
            dtype, device = self.str(field), self.str(field)
            shape = tuple(self.unpack("<q", field) for _ in range(self.unpack("<I", field)))
            return RemoteArray(session, handle, shape, dtype, device)
        if kind == _TUPLE:
            return tuple(self.value(field, session) for _ in range(self.unpack("<I", field)))
        raise ProtocolError(f"{self.what}: {field}: unknown value kind {kind}")

    def end(self):
        if self.pos != len(self.data):
            raise ProtocolError(f"{self.what}: {len(self.data) - self.pos} byte(s) after the last field")


class _Handle:
    def __init__(self, handle):
        self.handle = handle


def _key_bytes(key):
    """The key as the server reads its key file: a path to one (str or
    os.PathLike naming an existing file), or the secret itself as bytes;
    surrounding whitespace dropped."""
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray)):
        secret = bytes(key)
    else:
        with open(os.fspath(key), "rb") as f:
            secret = f.read()
    return secret.strip(b" \t\r\n")


class Session:
    """One session on a server (loom.rpc.connect).  Use it from one thread
    at a time; close() (or a with-block) ends it."""

    def __init__(self, address, key=None, timeout=None, connect_timeout=10.0):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"loom.rpc.connect: '{address}' is not HOST:PORT (or [IPV6]:PORT)")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        self.address = address
        try:
            self._sock = socket.create_connection((host, int(port)), timeout=connect_timeout)
        except OSError as e:
            raise RpcError(f"cannot connect to {address}: {e.strerror or e}") from None
        self._sock.settimeout(timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._closed = False
        self._released = []
        try:
            self._handshake(_key_bytes(key))
        except BaseException:
            self._sock.close()
            self._closed = True
            raise

    # --- frames ---
    def _send(self, type_, payload):
        try:
            self._sock.sendall(struct.pack("<IQ", type_, len(payload)) + payload)
        except OSError as e:
            raise SessionDied(f"the connection to {self.address} was lost: {e.strerror or e}") from None

    def _send_many(self, frames):
        try:
            self._sock.sendall(b"".join(struct.pack("<IQ", t, len(p)) + p for t, p in frames))
        except OSError as e:
            raise SessionDied(f"the connection to {self.address} was lost: {e.strerror or e}") from None

    def _recv_exact(self, n):
        chunks, left = [], n
        while left:
            try:
                chunk = self._sock.recv(min(left, 1 << 20))
            except socket.timeout:
                raise RpcError(f"no reply from {self.address} within the client's timeout") from None
            except OSError as e:
                raise SessionDied(f"the connection to {self.address} was lost: {e.strerror or e}") from None
            if not chunk:
                raise SessionDied(f"the server at {self.address} ended the session")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _recv(self):
        type_, size = struct.unpack("<IQ", self._recv_exact(12))
        return type_, self._recv_exact(size)

    @staticmethod
    def _raise(payload):
        r = _Reader(payload, "ERROR")
        code = r.unpack("<I", "code")
        raise _ERRORS.get(code, RpcError)(r.str("message"))

    def _reply(self, what):
        type_, payload = self._recv()
        if type_ == _ERROR:
            self._raise(payload)
        if type_ != _OK:
            raise ProtocolError(f"{what}: expected a reply, got a frame of type {type_}")
        r = _Reader(payload, "OK")
        v = r.value("value", self)
        r.end()
        return v

    def _request(self, type_, writer, what):
        if self._closed:
            raise RpcError(f"loom.rpc: {what} on a closed session")
        if self._released:
            # Releases ride in front of the next request, in the same write:
            # no round trip of their own.
            handles, self._released = self._released, []
            w = _Writer().u32(len(handles))
            for h in handles:
                w.u64(h)
            release = w.data()
            self._send_many([(_RELEASE, release), (type_, writer.data())])
            try:
                self._reply("release")
            except RemoteError:
                pass
        else:
            self._send(type_, writer.data())
        return self._reply(what)

    def _handshake(self, key):
        self._send(_HELLO, _MAGIC + struct.pack("<I", PROTOCOL_VERSION))
        type_, payload = self._recv()
        if type_ == _ERROR:
            self._raise(payload)
        if type_ != _HELLO or payload[:8] != _MAGIC:
            raise ProtocolError(f"{self.address} is not a Loom RPC server")
        version = struct.unpack("<I", payload[8:12])[0]
        if version != PROTOCOL_VERSION:
            raise VersionMismatch(f"protocol version mismatch: the server speaks version {version}, the client "
                                  f"version {PROTOCOL_VERSION} (update the older side)")
        key_required, server_nonce = payload[12] != 0, payload[13:13 + _NONCE]
        if key_required and key is None:
            raise AuthenticationError(f"the server at {self.address} requires a key (connect(..., key=FILE))")
        client_nonce = secrets.token_bytes(_NONCE)
        proof = (hmac.new(key, b"loom-rpc auth" + server_nonce + client_nonce, hashlib.sha256).digest()
                 if key_required else bytes(32))
        self._send(_AUTH, client_nonce + proof)
        back = self._reply("AUTH")
        if key_required:
            expected = hmac.new(key, b"loom-rpc server" + client_nonce + server_nonce, hashlib.sha256).digest()
            if not isinstance(back, bytes) or not hmac.compare_digest(back, expected):
                raise AuthenticationError(f"the server at {self.address} does not hold the key")

    # --- the session ---
    def close(self):
        if not self._closed:
            try:
                self._send(_CLOSE, b"")
                self._recv()
            except RpcError:
                pass
            self._sock.close()
            self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self._closed:
                self._sock.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def upload(self, data, name=None):
        """Writes a file into the server's work folder: `data` is a path
        (its base name is the default `name`) or bytes (then `name` is
        needed).  The number of bytes written."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            if name is None:
                raise ValueError("Session.upload: bytes need a name")
            blob = bytes(data)
        else:
            path = os.fspath(data)
            with open(path, "rb") as f:
                blob = f.read()
            name = name or os.path.basename(path)
        return self._request(_UPLOAD, _Writer().str(name).bytes(blob), "upload")

    def load_module(self, name):
        """The module of an uploaded library."""
        h = self._request(_LOAD_MODULE, _Writer().str(name), "load_module")
        return RemoteModule(self, h.handle, name)

    def device(self, kind="cpu", index=0):
        """A device of the server: "cpu", "opencl", "vulkan", "npu"..."""
        return RemoteDevice(self, kind, index)

    def cpu(self, index=0):
        return self.device("cpu", index)

    def info(self):
        """{"cpu": the server's CPU as tuning records it, "loom": its
        version, "protocol", "devices": those loaded so far}."""
        import json

        return json.loads(self._request(_INFO, _Writer(), "info"))

    def devices(self):
        """The devices whose runtime the server has loaded so far."""
        return list(self._request(_DEVICES, _Writer(), "devices"))

    def empty(self, shape, dtype="float32", device=None):
        device = device or self.cpu()
        w = _Writer().str(str(device)).str(str(np.dtype(dtype)) if dtype != "bfloat16" else dtype).u32(len(shape))
        for d in shape:
            w.i64(int(d))
        return self._request(_ARRAY_EMPTY, w, "empty")

    def array(self, value, device=None):
        """A copy of the NumPy array `value` on the server's `device` (its
        CPU by default)."""
        a = np.ascontiguousarray(value)
        out = self.empty(a.shape, a.dtype, device)
        out.copyfrom(a)
        return out

    def profile(self, module):
        """What the remote module tree recorded of its calls, by module kind
        (as loom.runtime.Module.profile()): the VM's kernel table and trace
        events once profiling was started (RemoteModule.set_profiling)."""
        import json

        return json.loads(self._request(_PROFILE, _Writer().u64(module._handle).u8(0), "profile"))

    def _release(self, handle):
        """Frees a remote object with the next request (a list append: safe
        from a finalizer)."""
        if not self._closed:
            self._released.append(handle)

    def _prepare(self, args):
        """Arguments as values, NumPy arrays copied to the server first."""
        out = []
        for a in args:
            out.append(self.array(a) if isinstance(a, np.ndarray) else a)
        return out


class RemoteDevice:
    def __init__(self, session, kind, index):
        self.session, self.kind, self.index = session, kind, int(index)

    def __str__(self):
        return f"{self.kind}:{self.index}"

    def __repr__(self):
        return f"<loom.rpc.RemoteDevice {self} of {self.session.address}>"


class _Remote:
    def __init__(self, session, handle):
        self._session, self._handle = session, handle

    def _check_alive(self):
        if self._handle is None:
            raise RpcError("loom.rpc: this remote object was released")

    def release(self):
        """Frees the object on the server now (the garbage collector would,
        later)."""
        if self._handle is not None:
            self._session._release(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


class RemoteArray(_Remote):
    """A tensor on the server: shape, dtype and device, numpy() to copy it
    here, copyfrom() to copy into it."""

    def __init__(self, session, handle, shape, dtype, device):
        super().__init__(session, handle)
        self.shape, self.dtype, self.device = shape, dtype, device

    def numpy(self):
        self._check_alive()
        data = self._session._request(_ARRAY_GET, _Writer().u64(self._handle), "numpy")
        if self.dtype == "bfloat16":
            return np.frombuffer(data, dtype=np.uint16).reshape(self.shape).copy()
        return np.frombuffer(data, dtype=np.dtype(self.dtype)).reshape(self.shape).copy()

    def copyfrom(self, value):
        self._check_alive()
        a = np.ascontiguousarray(value)
        if a.shape != tuple(self.shape):
            raise ValueError(f"RemoteArray.copyfrom: shape {a.shape}, the array is {self.shape}")
        self._session._request(_ARRAY_SET, _Writer().u64(self._handle).bytes(a.tobytes()), "copyfrom")
        return self

    def __repr__(self):
        return f"<loom.rpc.RemoteArray {self.dtype} {self.shape} on {self.device} of {self._session.address}>"


class RemoteFunction(_Remote):
    def __init__(self, session, handle, name):
        super().__init__(session, handle)
        self.name = name

    def __call__(self, *args):
        self._check_alive()
        args = self._session._prepare(args)
        w = _Writer().u64(self._handle).u32(len(args))
        for a in args:
            w.value(a)
        return self._session._request(_CALL, w, f"@{self.name}")


class TimeResult:
    """Seconds per run, one entry per repeat (as TVM's ProfileResult)."""

    def __init__(self, number, results):
        self.number, self.results = number, tuple(results)

    @property
    def mean(self):
        return statistics.fmean(self.results)

    @property
    def median(self):
        return statistics.median(self.results)

    @property
    def min(self):
        return min(self.results)

    def __repr__(self):
        return f"TimeResult(median={self.median:.6g} s, number={self.number}, repeat={len(self.results)})"


class RemoteModule(_Remote):
    def __init__(self, session, handle, name):
        super().__init__(session, handle)
        self.name = name

    def get_function(self, name):
        self._check_alive()
        h = self._session._request(_GET_FUNCTION, _Writer().u64(self._handle).str(name), f"@{name}")
        return RemoteFunction(self._session, h.handle, name)

    __getitem__ = get_function

    def function_names(self):
        self._check_alive()
        text = self._session._request(_FUNCTION_NAMES, _Writer().u64(self._handle), "function_names")
        return [n for n in text.split("\n") if n]

    def time_evaluator(self, name, dev=None, number=10, repeat=1, min_repeat_ms=0, cache_flush=False):
        """A callable that times `name` on the server (docs/rpc.md, "The
        client"): TVM's semantics, the clock on the server."""
        f = self.get_function(name)
        session = self._session
        device = str(dev or session.cpu())

        def evaluate(*args):
            args = session._prepare(args)
            w = _Writer().u64(f._handle).str(device).i64(int(number)).i64(int(repeat)).f64(float(min_repeat_ms))
            w.u8(int(bool(cache_flush))).u32(len(args))
            for a in args:
                w.value(a)
            n, seconds = session._request(_TIME_EVALUATOR, w, f"time_evaluator @{name}")
            return TimeResult(n, seconds)

        evaluate.function = f
        return evaluate

    def profile(self):
        return self._session.profile(self)

    def set_profiling(self, on=True):
        """Starts (clearing what was recorded) or stops recording each kernel
        call of the remote module tree (docs/rpc.md, "Profiles and traces")."""
        self._check_alive()
        self._session._request(_PROFILE, _Writer().u64(self._handle).u8(1 if on else 2), "set_profiling")

    def __repr__(self):
        return f"<loom.rpc.RemoteModule {self.name} of {self._session.address}>"


def pool(scheduler, key, timeout=None, lease_timeout=None):
    """A session on a free server of the Dask device pool at `scheduler`
    ("dask://HOST:PORT" or a distributed.Client) whose servers carry the
    device key `key` ("cpu-avx512", "pocl"): Dask hands out the servers
    (docs/rpc.md, "Device pools on Dask"); the server stays this
    session's until close()."""
    from .dask_pool import lease

    return lease(scheduler, key, timeout=timeout, lease_timeout=lease_timeout)


def connect(address, key=None, timeout=None, connect_timeout=10.0):
    """A session on the loom-rpc-server at "HOST:PORT".  `key`: the path
    of the shared key file (or the key as bytes) when the server has one.
    `timeout`: seconds to wait for any one reply (None: no limit; the
    server's --session-timeout still applies)."""
    return Session(address, key=key, timeout=timeout, connect_timeout=connect_timeout)
