"""Module files (docs/ir-text-format.md, "Weights beside the text"):
loom.ir.save writes the text and the large constants' raw bytes beside
it; loom.ir.load and every loomc command read them back, and refuse a
text whose weights are missing, foreign or damaged."""
import re
import subprocess

import numpy as np
import pytest

import loom
from loom import graph, op

from conftest import LOOMC, ROOT

rng = np.random.default_rng(4)


def model(big=4096, small=8):
    """x * W + b with W of `big` and b of `small` float32 elements."""
    w = rng.standard_normal(big).astype(np.float32)
    b = rng.standard_normal(small).astype(np.float32)
    x = graph.Var("x", shape=(big // small, small))
    body = op.add(op.multiply(x, graph.Constant(w.reshape(big // small, small))), graph.Constant(b))
    return loom.IRModule({"main": graph.Function([x], body)}), w.reshape(big // small, small), b


def test_large_constants_go_beside_the_text_as_raw_bytes(tmp_path):
    mod, w, b = model()
    path = tmp_path / "m.loom"
    loom.ir.save(mod, path)
    weights = (tmp_path / "m.loom.weights").read_bytes()
    text = path.read_text()
    # The 16 KiB weight is raw bytes in the weights file, after its header;
    # the 32-byte bias stays inline in the text.
    assert weights[:8] == b"LOOMWGTS" and weights[64:64 + w.nbytes] == w.tobytes()
    assert len(text) < 2000, text
    assert re.search(r'"bytes":\{"file":"m\.loom\.weights","checksum":"[0-9a-f]{16}","offset":0,"size":16384\}',
                     text), text
    back = loom.ir.load(path)
    loom.ir.assert_structural_equal(back, mod)
    x = rng.standard_normal(w.shape).astype(np.float32)
    lib = loom.build(back, str(ROOT / "configs/host.yaml"))
    np.testing.assert_allclose(lib["main"](x).numpy(), x * w + b, rtol=1e-5, atol=1e-6)
    # Saved again without a large constant, the stale weights file goes.
    small, _, _ = model(big=64)
    loom.ir.save(small, path)
    assert not (tmp_path / "m.loom.weights").exists()
    loom.ir.assert_structural_equal(loom.ir.load(path), small)


def test_loomc_reads_the_weights_and_fmt_keeps_the_references(tmp_path):
    mod, w, b = model()
    path = tmp_path / "m.loom"
    loom.ir.save(mod, path)
    for args in (["check", str(path)], ["fmt", str(path), "--check"]):
        done = subprocess.run([str(LOOMC), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    out = tmp_path / "opt.loom"
    done = subprocess.run([str(LOOMC), "opt", str(path), "--passes", "FoldConstant", "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "opt.loom.weights").read_bytes() == (tmp_path / "m.loom.weights").read_bytes()
    x = rng.standard_normal(w.shape).astype(np.float32)
    lib = loom.build(loom.ir.load(out), str(ROOT / "configs/host.yaml"))
    np.testing.assert_allclose(lib["main"](x).numpy(), x * w + b, rtol=1e-5, atol=1e-6)


def error(path):
    with pytest.raises(loom.LoomError) as info:
        loom.ir.load(path)
    return str(info.value)


def test_missing_foreign_or_damaged_weights_are_errors_at_the_reference(tmp_path):
    mod, _, _ = model()
    path = tmp_path / "m.loom"
    loom.ir.save(mod, path)
    weights = tmp_path / "m.loom.weights"
    good = weights.read_bytes()
    at = re.compile(r"m\.loom:\d+:\d+: ")
    weights.unlink()
    message = error(path)
    assert at.search(message) and "cannot read" in message and "m.loom.weights" in message, message
    # Another save's weights (same sizes, other values): the checksum differs.
    other, _, _ = model()
    loom.ir.save(other, tmp_path / "other.loom")
    (tmp_path / "other.loom.weights").rename(weights)
    message = error(path)
    assert at.search(message) and "the text and its weights were not saved together" in message, message
    # Damaged: a byte of the data flipped, or the file cut short.
    weights.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    assert "is corrupt: its data does not match its checksum" in error(path)
    weights.write_bytes(good[:-10])
    assert "is truncated or has trailing bytes" in error(path)
    weights.write_bytes(b"not weights" * 10)
    assert "is not a Loom weights file" in error(path)
    # A reference outside the data, or with a key it does not have.
    weights.write_bytes(good)
    text = path.read_text()
    path.write_text(text.replace('"size":16384', '"size":99999'))
    assert re.search(r"weights reference of 99999 bytes at 0 is outside the data of \S*m\.loom\.weights "
                     r"\(16384 bytes\)", error(path)), error(path)
    path.write_text(text.replace('"size":16384', '"size":16384,"stride":4'))
    assert 'unknown key "stride" in a weights reference (keys: file, checksum, offset, size)' in error(path)
    # A reference may only name a file beside the text.
    path.write_text(text.replace('"file":"m.loom.weights"', '"file":"../m.loom.weights"'))
    assert "a weights file is named by a plain file name, beside the text" in error(path)
    # Text with references parsed from a string has no folder to look in.
    with pytest.raises(loom.ParseError, match="a blob reference is read only in a binary document, or in a module "
                                              "file read beside its weights"):
        loom.parse(text)
