"""The llvm target's JIT in a crowded address space (docs/target-llvm.md,
"In memory and on disk"): a build must run correctly however the
process's memory is laid out. Models with several GiB of weights crashed
on their first call (ViT-H/14, RegNetY-128GF): LLVM 16's default JIT
linker on Linux mapped a function's code and its constant pools
separately, the weights' mappings fell between them, and the 32-bit
PC-relative offsets from one to the other were truncated without a word.

The child below lays memory out that way on purpose, without using any:
it fills every free gap above the lowest mapping with inaccessible
pages, reserves 3 GiB below them (address space only, PROT_NONE) with
small holes at its top (where a small constant-pool section fits and
code does not), then builds and runs a model whose code is larger than a
hole. It runs in its own process, since the failure is a segmentation
fault."""
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import ctypes, sys
    import numpy as np
    import loom
    from loom import graph, op

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    PROT_NONE, MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0, 0x02, 0x20, 0x4000
    FAILED = ctypes.c_void_p(-1).value

    def reserve(size):
        address = libc.mmap(None, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        assert address != FAILED, ctypes.get_errno()
        return address

    def lowest_mapping():
        low = None
        for line in open("/proc/self/maps"):
            fields = line.split()
            if len(fields) > 5 and fields[5] in ("[heap]", "[stack]", "[vdso]", "[vvar]", "[vsyscall]"):
                continue
            start = int(fields[0].split("-")[0], 16)
            if start >= 1 << 40 and (low is None or start < low):  # the mmap area, not the executable
                low = start
        return low

    rng = np.random.default_rng(0)
    def model(layers):
        x = graph.Var("x", shape=(8, 64))
        h = x
        for k in range(layers):
            w = graph.Constant((rng.standard_normal((64 + k, 65 + k)) / 8).astype("float32"))
            h = op.softmax(op.matmul(h, w), axis=-1) if k % 2 == 0 else op.tanh(op.matmul(h, w)) * 0.5 + op.exp(op.matmul(h, w) * 0.01)
        return loom.IRModule({"main": graph.Function([x], h)})

    loom.build(model(1), {"target": {"kind": "llvm"}})  # plugins loaded, allocator warm

    def fill_gaps_above(low):
        for size in (1 << 30, 1 << 24, 1 << 20, 1 << 16, 1 << 12):
            while True:
                address = reserve(size)
                if address < low:
                    libc.munmap(address, size)
                    break

    # 1. Fill every free gap above the lowest mapping, largest pieces first.
    fill_gaps_above(lowest_mapping())
    # 2. 3 GiB and 1 MiB below, in one piece (the kernel may align a large
    #    mapping and leave a gap above it: filled too), then holes of
    #    16 KiB in its top MiB.
    big = reserve((3 << 30) + (1 << 20))
    fill_gaps_above(big)
    for offset in range(0, 1 << 20, 32 << 10):
        libc.munmap(big + (3 << 30) + offset, 16 << 10)

    # 3. Build (code > 16 KiB) and run; compare with NumPy.
    layers = int(sys.argv[1])
    mod = model(layers)
    lib = loom.build(mod, {"target": {"kind": "llvm"}})
    x = rng.standard_normal((8, 64)).astype("float32")
    got = lib["main"](x).numpy()
    expected = loom.build(mod, {"target": {"kind": "ref"}})["main"](x).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    print("agrees")
""")


def test_code_and_its_constants_stay_in_reach_across_gibibytes_of_mappings():
    done = subprocess.run([sys.executable, "-c", CHILD, "8"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "agrees", (done.returncode, done.stdout, done.stderr[-2000:])
