"""Shared fixtures: run one operator call through `loomc run` (built in
memory with a config: the default pipeline, then the reference interpreter
or LLVM's machine code) on NumPy inputs, and return its outputs as NumPy
arrays.  Every test that takes `run` runs once per config of CONFIGS."""
import importlib
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOOMC = pathlib.Path(os.environ.get("LOOMC", ROOT / "build" / "bin" / "loomc"))
# Every Vulkan device the tests open runs under the Khronos validation
# layers (docs/target-vulkan.md); the vulkan tests fail on any message.
os.environ.setdefault("LOOM_VULKAN_VALIDATION", "1")


# Every process a test starts has a time limit, so a hung child fails its
# test (subprocess.TimeoutExpired, with the command) instead of holding the
# whole ctest entry until ctest kills it with no word of where: a test that
# passes no timeout gets this one. Tests that start servers (Popen) stop
# them themselves with timeouts of their own.
CHILD_TIMEOUT = 300
_subprocess_run = subprocess.run


def _run_with_a_timeout(*args, **kwargs):
    if kwargs.get("timeout") is None:  # check_output passes None
        kwargs["timeout"] = CHILD_TIMEOUT
    return _subprocess_run(*args, **kwargs)


subprocess.run = _run_with_a_timeout


def optional_import(name):
    """The package `name`, or None where it does not import: for a test
    module whose tests do not all need it (a module-level
    pytest.importorskip would skip them all); mark those that do with
    requires(name)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def requires(*packages):
    """A mark that skips a test where one of `packages` does not import."""
    missing = [p for p in packages if optional_import(p) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (not importable here)")


def run_fresh(script, *args):
    """Runs `script` (Python source, with `args` in sys.argv[1:]) in a new
    interpreter that imports loom from this tree and has loaded nothing
    else, and asserts it exits cleanly: an exported library must load
    there as in the process that built it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def run_exported(path, inputs, tmp_path, tree, check=""):
    """Calls @main of the library exported at `path` on `inputs` in a fresh
    process (run_fresh) and returns its output as a NumPy array; there the
    module tree's kinds must be `tree`, one list per level below the root
    (["vm"], ["library"], ["opencl"]: each level the imports of the first
    module of the one above), and `check` (Python source that may read
    `lib`) must hold after the call."""
    for i, a in enumerate(inputs):
        np.save(tmp_path / f"in{i}.npy", a)
    script = (
        "import sys, numpy as np, loom\n"
        "lib = loom.runtime.load_module(sys.argv[1])\n"
        f"tree, level = {tree!r}, [lib]\n"
        "for kinds in tree:\n"
        "    assert [m.kind for m in level] == kinds, (level, kinds)\n"
        "    level = level[0].imports\n"
        f"inputs = [np.load(f'{{sys.argv[2]}}/in{{i}}.npy') for i in range({len(inputs)})]\n"
        "np.save(sys.argv[2] + '/out.npy', lib['main'](*inputs).numpy())\n" + check)
    run_fresh(script, path, tmp_path)
    return np.load(tmp_path / "out.npy")


def tensor_type(a):
    dims = ", ".join(str(d) for d in a.shape)
    if a.ndim == 1:
        dims += ","
    dtype = {"bool": "bool"}.get(str(a.dtype), str(a.dtype))
    return f"Tensor[({dims}), {dtype}]"


def llvm_module(lib):
    """The module of kind llvm in a built module's tree (its assembly:
    inspect_source("asm")), or None."""
    if lib.type_key.startswith("llvm"):
        return lib
    return next(m for m in (llvm_module(c) for c in lib.imports) if m is not None) if lib.imports else None


def integer_conv(x, w, stride=1, pad=0, groups=1):
    """The cross-correlation of integer NCHW x and OIHW w, summed exactly
    in int64 (the reference of the integer convolutions)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), np.int64)
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                      w[g * og:(g + 1) * og, :, i, j].astype(np.int64))
    return y


def build_integer(module, config):
    """(library, the IR after QDQToInteger as text): the build of a
    quantized model and what the integer pass made of it."""
    import loom
    from loom import transform

    class Capture:
        text = None

        def after(self, info, mod):
            if info.name == "QDQToInteger":
                self.text = str(mod)
    capture = Capture()
    with transform.PassContext(instruments=[capture]):
        library = loom.build(module, config)
    return library, capture.text


def float_products(text):
    """The conv2d, matmul and dense calls of IR text left without an
    integer out_dtype."""
    calls = re.findall(r"\b(conv2d|matmul|dense)\((.*)", text)
    return [name for name, rest in calls if 'out_dtype="int32"' not in rest.split(";")[0]]


CONFIGS = ["configs/ref.yaml", "configs/host.yaml", "configs/c.yaml", "configs/opencl.yaml", "configs/vulkan.yaml",
           "configs/npu.yaml"]


class Runner:
    def __init__(self, tmp, config):
        self.tmp = tmp
        self.count = 0
        self.config = config

    def __call__(self, call, *inputs, outputs=1, config=None):
        """Runs `call` (an expression over %a0, %a1, ...) on `inputs`."""
        self.count += 1
        case = self.tmp / f"case{self.count}"
        case.mkdir()
        params = ", ".join(f"%a{i}: {tensor_type(a)}" for i, a in enumerate(inputs))
        (case / "m.loom").write_text(f"@main = fn({params}) {{ {call} }}\n")
        cmd = [str(LOOMC), "run", str(case / "m.loom"), "--config", str(ROOT / (config or self.config))]
        for i, a in enumerate(inputs):
            np.save(case / f"in{i}.npy", np.ascontiguousarray(a))
            cmd += ["--input", str(case / f"in{i}.npy")]
        for k in range(outputs):
            cmd += ["--output", str(case / f"out{k}.npy")]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"loomc run failed for {call}:\n{done.stderr}")
        # The vulkan plugin echoes every validation message to stderr.
        assert "vulkan validation:" not in done.stderr, done.stderr
        results = [np.load(case / f"out{k}.npy") for k in range(outputs)]
        return results[0] if outputs == 1 else results


@pytest.fixture(params=CONFIGS, ids=lambda c: pathlib.Path(c).stem)
def run(tmp_path, request):
    if not LOOMC.exists():
        pytest.fail(f"{LOOMC} is missing: run 'bash scripts/setup.sh' first")
    return Runner(tmp_path, request.param)


@pytest.fixture
def vulkan_quiet():
    """Fails a test during which the Vulkan validation layers (enabled
    above) said anything: use with pytest.mark.usefixtures."""
    import loom
    messages = loom.runtime.get_global_func("vulkan.validation_messages")
    messages()  # what earlier tests left
    yield
    assert messages() == ""


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
