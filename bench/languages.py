#!/usr/bin/python3
"""The cost of a call from each language (bench/README.md, "Languages").

bench/languages/calls.loom, exported for configs/host.yaml, holds @noop
(returns its argument: the call's own cost) and @add1k (an add of 1024
floats).  Each language's program times both the same way (the median of
7 batches of CALLS calls after a warm-up, its own clock, arguments made
once from the language's arrays without a copy): C through the C API
(build/bin/loom_bench_calls_c), Rust through the crate
(bindings/rust/examples/bench_calls.rs, built --release by cargo), Go
through the package (bindings/go/bench, tensors made once from slices),
Java through the JNI binding (bindings/java/bench, tensors made once from
float[]; run by the JDK's source launcher, JIT warm after the warm-up),
Node through the N-API addon (bindings/node/bench, tensors made once from
typed arrays; reported), Python through the loom package (loom NDArrays).  The languages run one after
another in each of ROUNDS rounds, in a rotating order; the report gives
each one's median per call and the median of the rounds' ratios to C
(target: Rust, Go and Java within 2x of C; Python reported).  No peer of another
project runs, so nothing is handicapped (bench/peers.py).

Usage: /usr/bin/python3 bench/languages.py [--rounds N] [--calls N]
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"

PYTHON_SIDE = r"""
import statistics, sys, time
import numpy as np
import loom
lib = loom.runtime.load_module(sys.argv[1])
calls = int(sys.argv[2])
noop, add = lib["noop"], lib["add1k"]
x = loom.nd.array(np.arange(1024, dtype=np.float32))
y = loom.nd.array(np.ones(1024, dtype=np.float32))
x1 = loom.nd.array(np.zeros(1, dtype=np.float32))
def median_us(f):
    for _ in range(calls // 10 + 1):
        f()
    batches = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        batches.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(batches)
print(f"noop {median_us(lambda: noop(x1)):.3f}")
print(f"add1k {median_us(lambda: add(x, y)):.3f}")
"""


def parse(out):
    values = {}
    for line in out.splitlines():
        name, value = line.split()
        values[name] = float(value)
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    a = parser.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="loom-languages-"))
    lib = tmp / "calls.so"
    subprocess.run([str(BUILD / "bin" / "loomc"), "build", str(ROOT / "bench" / "languages" / "calls.loom"),
                    "--config", str(ROOT / "configs" / "host.yaml"), "-o", str(lib)], check=True)
    sides = {"C": [str(BUILD / "bin" / "loom_bench_calls_c"), str(lib), str(a.calls)]}
    cargo = shutil.which("cargo") or os.path.expanduser("~/.cargo/bin/cargo")
    if os.access(cargo, os.X_OK):
        env = dict(os.environ, CARGO_TARGET_DIR=str(BUILD / "rust"), LOOM_LIB_DIR=str(BUILD / "lib"))
        for lock in (ROOT / "bindings" / "rust").glob("**/Cargo.lock"):
            lock.unlink()  # no dependencies to pin; another cargo's lock format would stop this one
        subprocess.run([cargo, "build", "--offline", "--quiet", "--release", "--example", "bench_calls"],
                       cwd=ROOT / "bindings" / "rust", env=env, check=True)
        sides["Rust"] = [str(BUILD / "rust" / "release" / "examples" / "bench_calls"), str(lib), str(a.calls)]
    else:
        print("Rust: skipped (no cargo; scripts/setup.sh installs Debian's)")
    go = shutil.which("go")
    if go:
        env = dict(os.environ, GOCACHE=str(BUILD / "go-cache"), GOFLAGS="-mod=mod", GOPROXY="off")
        subprocess.run([go, "build", "-o", str(BUILD / "bin" / "loom_bench_calls_go"), "./bench"],
                       cwd=ROOT / "bindings" / "go", env=env, check=True)
        sides["Go"] = [str(BUILD / "bin" / "loom_bench_calls_go"), str(lib), str(a.calls)]
    else:
        print("Go: skipped (no go; scripts/setup.sh installs golang-go)")
    jar, jni = BUILD / "java" / "loom.jar", BUILD / "lib" / "libloom_jni.so"
    if shutil.which("java") and jar.exists() and jni.exists():
        sides["Java"] = ["java", f"-Dorg.loom.library={jni}", "-cp", str(jar),
                         str(ROOT / "bindings" / "java" / "bench" / "BenchCalls.java"), str(lib), str(a.calls)]
    else:
        print("Java: skipped (no JDK or the binding is not built; scripts/setup.sh installs default-jdk-headless)")
    addon = BUILD / "lib" / "loom.node"
    if shutil.which("node") and addon.exists():
        sides["Node"] = ["node", str(ROOT / "bindings" / "node" / "bench" / "bench_calls.js"), str(lib), str(a.calls)]
    else:
        print("Node: skipped (no node or the addon is not built)")
    sides["Python"] = ["/usr/bin/python3", "-c", PYTHON_SIDE, str(lib), str(a.calls)]
    py_env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))

    names = list(sides)
    results = {n: [] for n in names}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            out = subprocess.run(sides[n], capture_output=True, text=True, env=py_env if n == "Python" else None)
            if out.returncode != 0:
                sys.exit(f"{n}: {out.stderr.strip()}")
            results[n].append(parse(out.stdout))
    shutil.rmtree(tmp, ignore_errors=True)

    print(f"call cost, microseconds per call (median of {a.rounds} rounds; each a median of 7 batches of "
          f"{a.calls} calls)")
    for fn in ("noop", "add1k"):
        c = [r[fn] for r in results["C"]]
        print(f"  {fn}:")
        for n in names:
            mine = [r[fn] for r in results[n]]
            ratio = statistics.median(m / base for m, base in zip(mine, c))
            target = " (target <= 2.0)" if n in ("Rust", "Go", "Java") else ""
            print(f"    {n:<7} {statistics.median(mine):8.3f} us   x C {ratio:5.2f}{target}")


if __name__ == "__main__":
    main()
