"""`loomc tune` (docs/tuning.md): the search from the command line, its
summary and database, then `loomc check` and `loomc build` of a config
that uses the database; bad arguments get a clear error."""
import json
import subprocess

import numpy as np

from conftest import LOOMC

MODEL = ("@main = fn(%x: Tensor[(8, 32), float32], %w: Tensor[(24, 32), float32]) "
         "{ relu(dense(%x, %w)) }\n")


def loomc(*args):
    return subprocess.run([str(LOOMC), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_tune_then_build_with_the_database(tmp_path):
    (tmp_path / "m.loom").write_text(MODEL)
    (tmp_path / "host.yaml").write_text("target: {kind: llvm, num-threads: 1}\npipeline: {passes: [default]}\n")
    done = loomc("tune", tmp_path / "m.loom", "--config", tmp_path / "host.yaml", "--trials", 4,
                 "--database", tmp_path / "db.jsonl", "--workers", "local:2")
    assert done.returncode == 0, done.stderr
    assert "[tune] task 1/1" in done.stderr
    row = [line for line in done.stdout.splitlines() if line.startswith("fused_dense_relu")]
    assert len(row) == 1 and row[0].split()[3] == "4", done.stdout
    records = [json.loads(line) for line in (tmp_path / "db.jsonl").read_text().splitlines()]
    # Four traces; the best three (AutoSchedule's among them, or added)
    # measured twice more.
    assert len({json.dumps(r["trace"]) for r in records}) == 4 and len({r["task"] for r in records}) == 1
    assert len(records) in (4 + 2 * 3, 4 + 2 * 4)
    # A config next to the database names it relatively.
    (tmp_path / "tuned.yaml").write_text("target: {kind: llvm, num-threads: 1}\n"
                                         "pipeline: {passes: [default], tuning: {database: db.jsonl}}\n")
    check = loomc("check", tmp_path / "tuned.yaml")
    assert check.returncode == 0, check.stderr
    built = loomc("build", tmp_path / "m.loom", "--config", tmp_path / "tuned.yaml", "-o", tmp_path / "m.so",
                  "--dump-ir", tmp_path / "ir")
    assert built.returncode == 0, built.stderr
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((24, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    run = loomc("run", tmp_path / "m.so", "--input", tmp_path / "x.npy", "--input", tmp_path / "w.npy",
                "--output", tmp_path / "y.npy")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-5)
    dumped = "".join(p.read_text() for p in sorted((tmp_path / "ir").iterdir()) if "AutoSchedule" in p.name)
    assert f'scheduled: "tuning database {tmp_path}/db.jsonl:' in dumped


def test_tune_refuses_bad_arguments(tmp_path):
    (tmp_path / "m.loom").write_text(MODEL)
    done = loomc("tune", tmp_path / "m.loom", "--config", tmp_path / "none.yaml", "--trials", 4,
                 "--database", tmp_path / "db.jsonl")
    assert done.returncode == 1 and "none.yaml" in done.stderr, done.stderr
    done = loomc("tune", tmp_path / "m.loom", "--trials", 4, "--database", tmp_path / "db.jsonl")
    assert done.returncode == 2 and "--config" in done.stderr, done.stderr
