"""Kernel profiles and traces (docs/rpc.md, "Profiles and traces"): the
trace of ResNet-18 has one event per kernel call of its bytecode, their
sum is within 10 % of the call, Python (local and remote) sees the same
kernels, and headless Chromium draws the trace's HTML summary with the
top kernel's name on it."""
import difflib
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import loom
import loom.rpc
from conftest import LOOMC, ROOT
from rpc_util import SERVER, Server

sys.path.insert(0, str(ROOT / "tests" / "python" / "zoo"))

HOST = str(ROOT / "configs" / "host.yaml")


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    """ResNet-18 (random weights) through ONNX, exported for the host, and
    an input."""
    pytest.importorskip("torchvision")
    pytest.importorskip("onnx")
    import zoo

    model, x = zoo.make("resnet18")
    d = tmp_path_factory.mktemp("resnet18")
    lib = loom.build(zoo.import_onnx(model, x), HOST)
    lib.export_library(str(d / "resnet18.so"))
    np.save(d / "x.npy", x.numpy())
    return d / "resnet18.so", x.numpy()


def bytecode_calls(library):
    """The kernel calls of @main's bytecode, in order (straight-line code:
    each runs once per call)."""
    text = subprocess.run([LOOMC, "inspect", str(library), "--source", "bytecode"], capture_output=True, text=True,
                          check=True).stdout
    main = text[text.index("\n@main:"):]
    main = main[:re.search(r"\n(@|\s+library:)", main[1:]).start() + 1]
    assert " br " not in main and "jmp" not in main and "call_graph" not in main  # straight-line code
    return ["@" + m.group(1) for m in re.finditer(r"call_(?:dps|packed) (?:dps|packed):(\S+)", main)]


def test_the_trace_has_one_event_per_kernel_call_summing_to_the_call(resnet18, tmp_path):
    library, x = resnet18
    trace = tmp_path / "trace.json"
    run = subprocess.run([LOOMC, "run", str(library), "--input", str(library.parent / "x.npy"), "--profile",
                          "--trace", str(trace)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    calls = [e for e in events if e.get("cat") == "function"]
    assert [e["name"] for e in kernels] == bytecode_calls(library)
    assert len(calls) == 1 and calls[0]["name"] == "@main"
    assert all(e["ph"] == "X" and e["dur"] > 0 and e["args"]["bytes"] > 0 for e in kernels)
    # Every kernel's flops are known (static shapes): the direct
    # convolutions' 3.64 GFLOP at most, and no less than what Winograd's
    # transformed products (2.25x fewer for the 3x3 layers) leave.
    assert 1.4e9 <= sum(e["args"]["flops"] for e in kernels) <= 4.0e9
    # In order, inside the call, and nearly all of it.
    starts = [e["ts"] for e in kernels]
    assert starts == sorted(starts) and calls[0]["ts"] <= starts[0]
    assert kernels[-1]["ts"] + kernels[-1]["dur"] <= calls[0]["ts"] + calls[0]["dur"] + 1e-3
    total = sum(e["dur"] for e in kernels)
    assert 0.9 * calls[0]["dur"] <= total <= calls[0]["dur"], (total, calls[0]["dur"])
    # The table: sorted by time, shares summing to 100 %.
    rows = [line.split() for line in run.stdout.splitlines() if re.match(r"\s+\d+\.\d%", line)]
    assert len(rows) >= 10
    totals = [float(r[1]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    assert abs(sum(float(r[0].rstrip("%")) for r in rows) - 100) < 0.5
    assert f"{len(kernels)} kernel call(s)" in run.stdout


def test_python_and_a_remote_session_see_the_same_kernels(resnet18, tmp_path):
    library, x = resnet18
    lib = loom.runtime.load_module(str(library))
    assert lib.profile() == {}  # nothing recorded before profiling starts
    lib.set_profiling(True)
    want = lib["main"](x).numpy()
    local = lib.profile()["vm"]
    lib.set_profiling(False)
    lib["main"](x)
    assert len([e for e in lib.profile()["vm"]["traceEvents"] if e.get("cat") == "kernel"]) == \
        len(bytecode_calls(library))
    names = sorted(k["name"] for k in local["kernels"])
    assert abs(sum(k["share"] for k in local["kernels"]) - 1) < 1e-6
    if not SERVER.exists():
        pytest.skip(f"{SERVER} is not built")
    server = Server(tmp_path)
    try:
        with loom.rpc.connect(server.address, key=server.key) as sess:
            sess.upload(library)
            mod = sess.load_module(library.name)
            mod.set_profiling(True)
            got = mod["main"](x).numpy()
            remote = mod.profile()["vm"]
    finally:
        server.stop()
    assert np.array_equal(got, want)
    assert sorted(k["name"] for k in remote["kernels"]) == names
    assert sum(k["calls"] for k in remote["kernels"]) == len(bytecode_calls(library))


def test_headless_chromium_draws_the_summary_with_the_top_kernel(resnet18, tmp_path):
    chromium, tesseract = shutil.which("chromium"), shutil.which("tesseract")
    if not chromium or not tesseract:
        pytest.skip("needs chromium and tesseract-ocr (scripts/setup.sh installs both)")
    library, _ = resnet18
    trace = tmp_path / "trace.json"
    subprocess.run([LOOMC, "run", str(library), "--input", str(library.parent / "x.npy"), "--trace", str(trace)],
                   check=True, capture_output=True)
    html = tmp_path / "profile.html"
    summary = subprocess.run([LOOMC, "profile", str(trace), "--html", str(html)], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    top = next(line.split()[-1] for line in summary.stdout.splitlines() if re.match(r"\s+\d+\.\d%", line))
    page = html.read_text()
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
                    "--window-size=1600,900", f"--screenshot={shot}", html.as_uri()],
                   check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 10000
    text = subprocess.run([tesseract, str(shot), "-", "--psm", "6"], capture_output=True, text=True,
                          check=True).stdout

    def letters(s):
        return re.sub(r"[^a-z0-9]", "", s.lower())

    # OCR misreads a letter now and then (a run read "matmul3" as something
    # else once): the top kernel's name must appear with at most one
    # letter in four wrong.
    want, seen = letters(top), letters(text)
    best = max((difflib.SequenceMatcher(None, want, seen[i:i + len(want)]).ratio()
                for i in range(max(1, len(seen) - len(want) + 1))), default=0.0)
    assert best >= 0.75, (top, best, text)


DENSE = """
@main = fn(%x: Tensor[({decl}, 96), float32], %w: Tensor[({n}, 96), float32], %b: Tensor[({n}), float32])
    -> Tensor[({batch}, {n}), float32] {{
  relu(add(dense(%x, %w), %b))
}}
"""


def dense_profile(batch, n, tmp_path, config=HOST, symbolic=False):
    """The profile of one call of relu(x @ w.T + b), x (batch, 96), checked
    against NumPy, and the multiply-adds it needs."""
    rng = np.random.default_rng(batch * n)
    x = rng.standard_normal((batch, 96), dtype=np.float32)
    w = rng.standard_normal((n, 96), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    text = DENSE.format(decl="%rows: int64" if symbolic else batch, batch="%rows" if symbolic else batch, n=n)
    lib = loom.build(loom.parse(text), config)
    lib.export_library(str(tmp_path / "dense.so"))
    lib = loom.runtime.load_module(str(tmp_path / "dense.so"))
    lib.set_profiling(True)
    got = lib["main"](x, w, b).numpy()
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)
    return lib.profile()["vm"], batch * n * 96


def test_flops_count_the_compiled_work_and_are_left_out_where_unknown(tmp_path):
    # 48 rows, a multiple of any tile's rows: a tile guarded against the
    # tail would count as whole (an if counts its longer branch; 37 rows
    # counted as 38 with 512-bit vectors).
    profile, macs = dense_profile(48, 80, tmp_path)
    flops = sum(k["flops"] for k in profile["kernels"])
    # A multiply-add is two; the bias add and the ReLU one each per output.
    assert 2 * macs <= flops <= 2 * macs + 4 * 48 * 80, flops
    events = [e for e in profile["traceEvents"] if e.get("cat") == "kernel"]
    assert sum(e["args"]["flops"] for e in events) == flops
    # Device kernels count through the host code that launches them (the
    # shape fills the default device schedule's tiles: a padded tile would
    # count the padding it computes).
    device, macs = dense_profile(64, 128, tmp_path, str(ROOT / "configs" / "opencl.yaml"))
    assert all(k["device"] == "opencl:0" for k in device["kernels"])
    assert 2 * macs <= sum(k["flops"] for k in device["kernels"]) <= 2 * macs + 4 * 64 * 128
    # A symbolic batch: the count depends on the call, so it is left out.
    symbolic, _ = dense_profile(37, 80, tmp_path, symbolic=True)
    assert symbolic["kernels"] and all("flops" not in k for k in symbolic["kernels"])
