"""The torchscript extern kind (docs/extern-torchscript.md): TorchScript
modules (scripted, traced, with a data-dependent loop, with operations Loom
lacks) inside a Loom model against PyTorch, on symbolic shapes; inputs
reach libtorch without a copy; export to a library that a fresh process
runs without importing torch; libtorch never loaded by what does not use
the kind; the signature checks and the errors of a call."""
import base64
import io
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import loom  # noqa: E402
from conftest import LOOMC, ROOT, run_fresh  # noqa: E402

HOST = str(ROOT / "configs" / "host.yaml")


def saved(module):
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def tensor(shape, dtype="float32"):
    return f"Tensor[({', '.join(shape)}), {dtype}]"


class CumsumSort(torch.nn.Module):
    def forward(self, x, y):
        return torch.cumsum(x, dim=1) + y, torch.sort(x, dim=1).values


class Halve(torch.nn.Module):
    """Data-dependent control flow: halves x until its largest magnitude is below 1."""

    def forward(self, x):
        while bool(x.abs().max() >= 1.0):
            x = x / 2
        return x


def model_text(payload, rows="%n: int64"):
    """relu, then a torchscript function (cumsum and sort), then add: the
    graph around it stays Loom's."""
    n = rows.split(":")[0]
    t_in, t = tensor([rows, "8"]), tensor([n, "8"])
    return f'''@ts = extern "torchscript" dps fn({t_in}, {t}, {t}, {t}) -> none encoding "base64" payload "{payload}"
@main = fn(%x: {t_in}, %y: {t}) -> {t} {{
  let %r = relu(%x);
  let %both = call_dps<({t}, {t})>(@ts, (%r, %y));
  add(%both.0, %both.1)
}}
'''


@pytest.fixture(scope="module")
def model():
    return loom.build(loom.parse(model_text(saved(torch.jit.script(CumsumSort())))), HOST)


def reference(x, y):
    r = torch.relu(torch.from_numpy(x))
    a, b = CumsumSort()(r, torch.from_numpy(y))
    return (a + b).numpy()


@pytest.mark.parametrize("rows", [1, 5, 64])
def test_scripted_module_inside_a_model_matches_pytorch(model, rng, rows):
    x, y = (rng.standard_normal((rows, 8)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(model["main"](x, y).numpy(), reference(x, y), rtol=1e-5, atol=1e-5)
    assert model.kind == "vm" and [m.kind for m in model.imports[0].imports] == ["torchscript"]


def test_traced_module_and_a_data_dependent_loop(rng):
    t = tensor(["24"])
    traced = torch.jit.trace(torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Tanh()), torch.zeros(3, 6))
    text = f'''@traced = extern "torchscript" dps fn({tensor(["4", "6"])}, {tensor(["4", "6"])}) -> none encoding "base64" payload "{saved(traced)}"
@halve = extern "torchscript" dps fn({t}, {t}) -> none encoding "base64" payload "{saved(torch.jit.script(Halve()))}"
@main = fn(%x: {tensor(["4", "6"])}, %scale: {tensor(["24"])}) -> {tensor(["24"])} {{
  let %h = call_dps<{tensor(["4", "6"])}>(@traced, (%x,));
  call_dps<{tensor(["24"])}>(@halve, (multiply(reshape(%h, shape=[24]), %scale),))
}}
'''
    lib = loom.build(loom.parse(text), HOST)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    with torch.no_grad():
        expected = Halve()(traced(torch.from_numpy(x)).reshape(24) * 40.0).numpy()
    got = lib["main"](x, np.full(24, 40.0, np.float32)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.abs(got).max() < 1.0


class AddInPlace(torch.nn.Module):
    def forward(self, x):
        x.add_(1.0)  # writes through to the caller's memory: the input was not copied
        return x * 2


def test_inputs_reach_libtorch_without_a_copy():
    t = tensor(["16"])
    text = f'@inc = extern "torchscript" dps fn({t}, {t}) -> none encoding "base64" payload "{saved(torch.jit.script(AddInPlace()))}"'
    lib = loom.build(loom.parse(text), HOST)
    x = loom.nd.array(np.arange(16, dtype=np.float32))
    out = loom.nd.array(np.zeros(16, np.float32))
    lib["inc"](x, out)
    np.testing.assert_array_equal(x.numpy(), np.arange(16) + 1)  # libtorch wrote Loom's memory
    np.testing.assert_array_equal(out.numpy(), (np.arange(16) + 1) * 2)


def test_exported_library_runs_where_torch_was_never_imported(model, tmp_path, rng):
    path = tmp_path / "ts.so"
    model.export_library(str(path))
    x, y = (rng.standard_normal((7, 8)).astype(np.float32) for _ in range(2))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "expected.npy", reference(x, y))
    run_fresh("""
import sys, numpy as np, loom
lib = loom.runtime.load_module(sys.argv[1] + "/ts.so")
y = lib["main"](np.load(sys.argv[1] + "/x.npy"), np.load(sys.argv[1] + "/y.npy")).numpy()
np.testing.assert_allclose(y, np.load(sys.argv[1] + "/expected.npy"), rtol=1e-5, atol=1e-5)
assert "torch" not in sys.modules
maps = open("/proc/self/maps").read()
assert "libtorch_cpu" in maps  # the plugin's libtorch, loaded for the module
""", tmp_path)
    shown = subprocess.run([str(LOOMC), "inspect", str(path)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "torchscript: 1 function (ts)" in shown.stdout


def test_libtorch_is_loaded_only_for_the_kind():
    # import loom, the plugin list, and a build and run of a model without
    # TorchScript: no libtorch in the process.
    run_fresh("""
import sys, numpy as np, loom
loom.plugins.available()
lib = loom.build(loom.parse('@main = fn(%x: Tensor[(4), float32]) -> Tensor[(4), float32] { relu(%x) }'),
                 sys.argv[1])
lib["main"](np.ones(4, np.float32))
maps = open("/proc/self/maps").read()
assert "libtorch" not in maps and "libc10" not in maps, [l for l in maps.splitlines() if "torch" in l]
""", HOST)
    listed = subprocess.run([str(LOOMC), "plugins", "list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "torchscript" in listed.stdout


class TwoInts(torch.nn.Module):
    def forward(self, x, k: int):
        return x * k


class Ones(torch.nn.Module):
    def forward(self, x):
        return torch.ones(3, dtype=torch.float64)


@pytest.mark.parametrize("signature, module, attrs, message", [
    # counts: the method takes 2 and returns 2; one output declared
    ("(4), (4), (4)", CumsumSort, "",
     "@ts: the method forward takes 2 tensors and returns 2, but the signature declares 3 tensors"),
    ("(4), (4)", TwoInts, "",
     "@ts: the method forward takes the argument 'k' of type int; a torchscript function exchanges tensors only"),
    ("(4), (4)", Halve, 'attrs {method: "backward"}',
     "@ts: the TorchScript module has no method 'backward' (it has: forward)"),
    ("(4), (4)", Halve, 'attrs {methd: "forward"}',
     "@ts: a torchscript function has no attribute 'methd' (it has method); did you mean 'method'?"),
])
def test_signature_checks(signature, module, attrs, message):
    params = ", ".join(tensor([s.strip("()")]) for s in signature.split(", "))
    text = (f'@ts = extern "torchscript" dps fn({params}) -> none {attrs} encoding "base64" '
            f'payload "{saved(torch.jit.script(module()))}"')
    with pytest.raises(loom.LoomError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        loom.build(loom.parse(text), HOST)


def test_payload_errors():
    t = tensor(["4"])
    bad = base64.b64encode(b"not a zip").decode()
    with pytest.raises(loom.LoomError, match="@ts: the payload is not a TorchScript module libtorch loads: "):
        loom.build(loom.parse(f'@ts = extern "torchscript" dps fn({t}, {t}) -> none encoding "base64" payload "{bad}"'),
                   HOST)
    with pytest.raises(loom.LoomError, match=r"@ts: a torchscript function's payload is a serialized module "
                                             r"\(torch.jit.save's bytes\), written encoding \"base64\", not text"):
        loom.build(loom.parse(f'@ts = extern "torchscript" dps fn({t}, {t}) -> none payload "x"'), HOST)


def test_call_errors_name_the_function_and_the_argument():
    t = tensor(["3"])
    text = (f'@ones = extern "torchscript" dps fn({t}, {t}) -> none encoding "base64" '
            f'payload "{saved(torch.jit.script(Ones()))}"')
    lib = loom.build(loom.parse(text), HOST)
    out = loom.nd.array(np.zeros(3, np.float32))
    # The method returns float64 where the output is float32: refused, not converted.
    with pytest.raises(loom.LoomError, match=r"@ones: output 0: the method returned Double\[3\], but the output is "
                                             r"Float\[3\]"):
        lib["ones"](loom.nd.array(np.zeros(3, np.float32)), out)
    with pytest.raises(loom.LoomError, match=r"@ones: argument 0 has extent 4 in dimension 0, expected 3"):
        lib["ones"](loom.nd.array(np.zeros(4, np.float32)), out)
    with pytest.raises(loom.LoomError, match=r"@ones: argument 0 has dtype int32, expected float32"):
        lib["ones"](loom.nd.array(np.zeros(3, np.int32)), out)
    # An exception inside the method arrives with libtorch's message and where it was.
    text = (f'@halve = extern "torchscript" dps fn({tensor(["2", "3"])}, {tensor(["2", "3"])}) -> none '
            f'encoding "base64" payload "{saved(torch.jit.script(CumsumSortOne()))}"')
    lib = loom.build(loom.parse(text), HOST)
    with pytest.raises(loom.LoomError, match=r"@halve: libtorch: RuntimeError: Dimension out of range .*but got 5\)\n"
                                             r'  File "code/__torch__/.*", line \d+, in forward\n'
                                             r"    return torch.cumsum\(x, 5\)\n.*<--- HERE"):
        lib["halve"](loom.nd.array(np.zeros((2, 3), np.float32)), loom.nd.array(np.zeros((2, 3), np.float32)))


class CumsumSortOne(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=5)


def test_the_example_runs_and_agrees_both_ways():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "torchscript" / "model.py")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "1. torchscript inside loom" in run.stdout and "exported and loaded" in run.stdout
    assert "ok: TorchScript and Loom agree both ways" in run.stdout
