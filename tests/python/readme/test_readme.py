"""The README, read as a new user reads it: its quickstart code blocks run
as written (Python, then the command line on the file the Python block
exported) and give the results they promise; every document under docs/
is reachable from it, and every file it links exists."""
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()
LOOMC = os.path.abspath(os.environ.get("LOOMC", ROOT / "build" / "bin" / "loomc"))

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
if "LOOM_BUILD_DIR" in ENV:  # the blocks run in another folder than the one it was set for
    ENV["LOOM_BUILD_DIR"] = os.path.abspath(ENV["LOOM_BUILD_DIR"])


def section(title):
    """The text of the README section `## title`."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def blocks(title, language):
    found = re.findall(rf"```{language}\n(.*?)```", section(title), re.S)
    assert found, f"README's '{title}' has no {language} block"
    return found


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """Runs the Python quickstart in a fresh folder: (folder, stdout)."""
    pytest.importorskip("torchvision")
    pytest.importorskip("onnx")
    folder = tmp_path_factory.mktemp("quickstart")
    code = "\n".join(blocks("Quickstart: Python", "python"))
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], cwd=folder, env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder, done.stdout


def test_the_python_quickstart_agrees_with_pytorch_and_exports(quickstart):
    folder, out = quickstart
    lines = out.splitlines()
    onnx_error = float(lines[0])
    torch_error = float(lines[1])
    assert 0 <= onnx_error < 1e-4 and 0 <= torch_error < 1e-4, out
    assert re.search(r"\d+ nodes compiled by Loom", out), out
    assert (folder / "resnet18.so").stat().st_size > 40e6  # the weights travel with the library


def test_the_command_line_quickstart_runs_on_what_python_exported(quickstart):
    folder, _ = quickstart
    shown = []
    for line in blocks("Quickstart: the command line", "sh")[0].splitlines():
        command = shlex.split(line.split("#")[0])
        if not command:
            continue
        assert command[0] == "build/bin/loomc", line
        command = [LOOMC] + [str(ROOT / a) if a.startswith("configs/") else a for a in command[1:]]
        done = subprocess.run(command, cwd=folder, env=ENV, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (line, done.stderr[-2000:])
        shown.append(done.stdout)
    assert "weights in resnet18.loom.weights" in shown[0]
    assert (folder / "resnet18.so").is_file()
    assert "output 0: float32 (1, 1000)" in shown[-1] and re.search(r"latency: median [0-9.]+ ms", shown[-1])


def test_every_document_is_reachable_and_every_link_exists():
    prose = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", README, flags=re.S))
    linked = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", prose))
    for target in linked:
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links {target}, which does not exist"
    docs = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert docs <= linked, f"not reachable from the README: {sorted(docs - linked)}"
