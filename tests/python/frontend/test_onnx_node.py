"""ONNX's backend node tests through Loom's ONNX backend (onnx_node_tests.py,
docs/frontends.md "ONNX's node tests"): every case either passes, or is
listed in onnx_node_refused.txt and refused with that Loom error; none
crashes, none is wrong.  The default run takes every sixth case and every
listed one; LOOM_ONNX_NODE_TESTS=all (the ctest entry
python.onnx_node_tests) runs the whole suite, 898 cases."""
import os

import pytest

import loom

onnx = pytest.importorskip("onnx")

import onnx_node_tests as suite  # noqa: E402 (tests/python/frontend is on sys.path via rootdir conftest)

ALL = os.environ.get("LOOM_ONNX_NODE_TESTS") == "all"
REFUSED = suite.refused()
CASES = suite.cases()
SELECTED = [(name, d) for k, (name, d) in enumerate(CASES) if ALL or k % 6 == 0 or name in REFUSED]


def test_the_suite_is_whole_and_the_refusals_are_cases():
    assert len(CASES) == 898, len(CASES)
    unknown = sorted(set(REFUSED) - {name for name, _ in CASES})
    assert not unknown, f"onnx_node_refused.txt names cases the suite does not have: {unknown}"
    assert len(CASES) - len(REFUSED) >= 700, f"{len(CASES) - len(REFUSED)} of {len(CASES)} pass"


@pytest.mark.parametrize("directory", [d for _, d in SELECTED], ids=[name for name, _ in SELECTED])
def test_node(directory):
    name = directory.name
    if name in REFUSED:
        with pytest.raises(loom.LoomError) as info:
            suite.run_case(directory)
        assert REFUSED[name] in str(info.value), \
            f"{name} is refused with another error (update onnx_node_refused.txt):\n{info.value}"
        return
    suite.run_case(directory)
