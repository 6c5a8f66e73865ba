"""Starting loom-rpc-server for the tests (docs/rpc.md): a key file, a
work folder, --port 0 and the port read from the server's first line."""
import os
import pathlib
import select
import signal
import socket
import struct
import subprocess

from conftest import ROOT

BUILD = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build"))
SERVER = BUILD / "bin" / "loom-rpc-server"


class Server:
    def __init__(self, tmp, *extra, key=True, host="127.0.0.1", wrap=()):
        self.workdir = tmp / "work"
        self.key = None
        args = [*wrap, str(SERVER), "--host", host, "--port", "0", "--workdir", str(self.workdir), *extra]
        if key:
            self.key = tmp / "server.key"
            self.key.write_bytes(os.urandom(24).hex().encode() + b"\n")
            self.key.chmod(0o600)
            args += ["--key", str(self.key)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline() if ready else ""
        if "listening on" not in line:
            self.stop()
            raise AssertionError(f"the server did not start: {line!r} {self.proc.stderr.read()}")
        self.address = line.split("listening on ")[1].split(" ")[0]

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """Stops the server; its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err

    def raw(self):
        """A socket connected to the server, nothing sent."""
        host, _, port = self.address.rpartition(":")
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
        return s


def frame(type_, payload):
    return struct.pack("<IQ", type_, len(payload)) + payload


def read_frame(sock):
    """(type, payload), or None at the end of the stream."""
    def exact(n):
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                return None
            out += chunk
        return out
    header = exact(12)
    if header is None:
        return None
    type_, size = struct.unpack("<IQ", header)
    return type_, exact(size)


def error_message(payload):
    code, n = struct.unpack("<II", payload[:8])
    return code, payload[8:8 + n].decode()
