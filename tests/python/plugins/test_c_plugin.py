"""A plugin written in C against the C API only (tests/fixtures/plugins/c_tier.c,
docs/c-api.md "Plugins in C"): listed from its manifest, its pass run from a
YAML pipeline, its function and device used from Python; built against an
older core it still loads, and one needing newer tables is refused naming
both versions.  Each test runs Loom in a child process whose plugin path
is the fixture's folder."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from conftest import LOOMC, ROOT

FIXTURES = pathlib.Path(os.environ.get("LOOM_BUILD_DIR", ROOT / "build")).resolve() / "tests" / "fixtures"


def env(folder):
    return dict(os.environ, LOOM_PLUGIN_PATH=str(FIXTURES / folder), PYTHONPATH=str(ROOT / "python"))


def loomc(folder, *args, check=True):
    done = subprocess.run([str(LOOMC), *map(str, args)], capture_output=True, text=True, env=env(folder), timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def python(folder, script):
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(folder),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(autouse=True)
def built():
    if not (FIXTURES / "c_tier" / "loom_c_tier.so").exists():
        pytest.fail(f"{FIXTURES / 'c_tier'} has no loom_c_tier.so: build the loom_fixtures target")


def test_a_c_plugin_is_listed_from_its_manifest_without_being_loaded():
    listed = loomc("c_tier", "plugins", "list").stdout
    line = next((l.split() for l in listed.splitlines() if l.startswith("c_tier ")), [])
    assert line[:3] == ["c_tier", "1.0.0", "discovered"], listed
    passes = loomc("c_tier", "passes", "list").stdout
    assert "CCountVisits" in passes, passes


def test_a_pass_written_in_c_runs_from_a_yaml_pipeline(tmp_path):
    config = (ROOT / "configs" / "host.yaml").read_text().replace(
        "    - default", "    - default\n    - CCountVisits\n    - CCountVisits")
    assert "CCountVisits" in config
    (tmp_path / "c.yaml").write_text(config)
    loomc("c_tier", "build", ROOT / "examples" / "mlp.loom", "--config", tmp_path / "c.yaml", "--emit", "ir",
          "-o", tmp_path / "out.loom")
    text = (tmp_path / "out.loom").read_text()
    assert "c_tier_visits: 2" in text, text[:400]
    # The module it returns still builds and runs.
    loomc("c_tier", "build", ROOT / "examples" / "mlp.loom", "--config", tmp_path / "c.yaml", "-o", tmp_path / "m.so")
    out = loomc("c_tier", "run", tmp_path / "m.so", "--seed", "1").stdout
    assert "(64, 10)" in out, out


def test_a_c_plugins_function_and_device_work_from_python():
    out = python("c_tier", """
import numpy as np, loom
axpy = loom.runtime.get_global_func("c_tier.axpy")
assert axpy(2, 3.5, 1) == 8.0, axpy(2, 3.5, 1)
try:
    axpy("two", 1, 2)
    raise SystemExit("axpy took a str")
except Exception as e:
    assert "c_tier.axpy takes 3 numbers" in str(e), e
x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
a = loom.nd.array(x, device="cmem:0")
assert str(a.device) == "cmem:0", a.device
np.testing.assert_array_equal(a.copyto("cpu").numpy(), x)
print(loom.plugins.info("c_tier").state)
""")
    assert "loaded" in out.lower(), out


def test_a_c_plugin_built_against_an_older_core_loads_without_a_rebuild():
    # Its manifest says core_version 0.0.3: a C++ plugin built so is refused.
    python("c_tier_old", """
import loom
assert loom.runtime.get_global_func("c_tier.axpy")(1, 1, 1) == 2.0
""")


def test_a_c_plugin_needing_newer_tables_is_refused_naming_both_versions():
    info = loomc("c_tier_new", "plugins", "info", "c_tier_new").stdout
    assert "C API version 2" in info and "versions 1 to 1" in info, info
    done = subprocess.run([sys.executable, "-c", "import loom; loom.plugins.load('c_tier_new')"], capture_output=True,
                          text=True, env=env("c_tier_new"), timeout=120)
    assert done.returncode != 0 and "C API version 2" in done.stderr, done.stderr


def test_a_c_plugins_info_says_it_is_written_in_c():
    info = loomc("c_tier", "plugins", "info", "c_tier").stdout
    assert "C API 1 (a plugin written in C)" in info, info
