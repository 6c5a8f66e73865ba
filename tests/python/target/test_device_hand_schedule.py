"""Hand schedules for a device (docs/devices.md, "Hand schedules"):
cache_read into shared memory, compute_at into the reduction's chunk loop
(the copy shrinks to the chunk's tile), the fill bound to the block's
threads, and ThreadSync's barriers; cache_write into a local accumulator.
Run on PoCL against NumPy, with a reduction that is and is not a multiple
of the tile; the errors name the primitive and the reason."""
import numpy as np
import pytest

import loom
from loom import tir

OPENCL = {"target": {"kind": "opencl", "host": {"kind": "llvm"}}}


def matmul(m, k, n):
    return loom.parse(f"""
@mm = prim_func(%A: Buffer[({m}, {k}), float32], %B: Buffer[({k}, {n}), float32], %C: Buffer[({m}, {n}), float32]) {{
  for %i: int64 from 0 extent {m} {{
    for %j: int64 from 0 extent {n} {{
      %C[%i, %j] = 0.0;
      for %k: int64 from 0 extent {k} {{
        %C[%i, %j] = %C[%i, %j] + %A[%i, %k] * %B[%k, %j];
      }}
    }}
  }}
}}
""", "mm.loom")["mm"]


def shared_tiles(f, tile=16):
    """Blocks of tile x tile outputs, a thread each; each chunk of the
    reduction staged in two shared tiles that the block's threads fill."""
    s = tir.Schedule(f)
    io, ii = s.split("i", tile)
    jo, ji = s.split("j", tile)
    s.reorder([io, jo, ii, ji])
    (ii0, ji0), (ii1, ji1) = s.decompose_reduction(ii)
    ko, ki = s.split("k", tile)
    s.reorder([ko, ii1, ji1, ki])
    for loop, axis in [(io, "blockIdx.y"), (jo, "blockIdx.x"), (ii0, "threadIdx.y"), (ji0, "threadIdx.x"),
                       (ii1, "threadIdx.y"), (ji1, "threadIdx.x")]:
        s.bind(loop, axis)
    a_tile = s.cache_read("A", scope="shared")
    b_tile = s.cache_read("B", scope="shared")
    assert (a_tile, b_tile) == ("A_shared", "B_shared")
    s.compute_at("c0", ko)
    s.compute_at("c0_1", ko)
    for loop, axis in [("c0", "threadIdx.y"), ("c1", "threadIdx.x"), ("c0_1", "threadIdx.y"), ("c1_1", "threadIdx.x")]:
        s.bind(loop, axis)
    return s.func


def run(f, *arrays, out_shape):
    lib = loom.build(loom.IRModule({"mm": f}), OPENCL)
    out = loom.nd.array(np.zeros(out_shape, np.float32), device="opencl")
    lib["mm"](*[loom.nd.array(a, device="opencl") for a in arrays], out)
    return lib, out.copyto("cpu").numpy()


@pytest.mark.parametrize("m,k,n", [(64, 48, 32), (48, 37, 32)])
def test_shared_tiles_match_numpy(m, k, n, rng):
    f = shared_tiles(matmul(m, k, n))
    text = str(f)
    # The tiles hold one chunk: 16 x 16, in the shared scope, inside the chunk loop.
    assert 'alloc %A_shared: Buffer[(16, 16), float32, scope="shared"]' in text
    assert 'alloc %B_shared: Buffer[(16, 16), float32, scope="shared"]' in text
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    lib, c = run(f, a, b, out_shape=(m, n))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    src = lib.imports[0].inspect_source("opencl")
    assert src.count("__local float") == 2
    # ThreadSync: after the fills, and at the end of the chunk loop.
    loop = src[src.index("for (int64_t k_o"):]
    assert loop.count("barrier(") == 2
    assert loop.index("A_shared_data[((int64_t)c0)") < loop.index("barrier(") < loop.index("k_i < 16L")


def test_local_accumulator_matches_numpy(rng):
    # cache_write into a local buffer, the writer moved into the copy's
    # loops: each thread sums its output in a one-element private array.
    s = tir.Schedule(matmul(40, 30, 20))
    assert s.cache_write("C", scope="local") == "C_local"
    s.compute_at("i", "w1")
    fused = s.fuse("w0", "w1")
    bo, bi = s.split(fused, 64)
    s.bind(bo, "blockIdx.x")
    s.bind(bi, "threadIdx.x")
    text = str(s.func)
    assert 'alloc %C_local: Buffer[(1, 1), float32, scope="local"]' in text
    a = rng.uniform(-1, 1, (40, 30)).astype(np.float32)
    b = rng.uniform(-1, 1, (30, 20)).astype(np.float32)
    lib, c = run(s.func, a, b, out_shape=(40, 20))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert "barrier(" not in lib.imports[0].inspect_source("opencl")


def test_scoped_cache_errors():
    s = tir.Schedule(matmul(32, 32, 32))
    with pytest.raises(loom.ScheduleError, match="cache_read: 'texture' is not a memory scope"):
        s.cache_read("A", scope="texture")
    with pytest.raises(loom.ScheduleError, match="cache_write: 'register' is not a memory scope"):
        s.cache_write("C", scope="register")
    # A shared tile filled inside a thread loop: the block's threads would
    # all write the one tile (each its own row, at the same place).
    s = tir.Schedule(matmul(32, 32, 32))
    io, ii = s.split("i", 16)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    s.cache_read("A", scope="shared")
    with pytest.raises(loom.ScheduleError, match="inside the threadIdx.x loop %i_i, whose threads would all fill the one shared 'A_shared'"):
        s.compute_at("c0", "j")
    # A region with no constant extent cannot be a shared array.
    f = loom.parse("""
@tri = prim_func(%A: Buffer[(16, 16), float32], %B: Buffer[(16), float32]) {
  for %i: int64 from 0 extent 16 thread("blockIdx.x") {
    %B[%i] = 0.0;
    for %k: int64 from 0 extent %i + 1 {
      %B[%i] = %B[%i] + %A[%i, %k];
    }
  }
}
""", "tri.loom")["tri"]
    s = tir.Schedule(f)
    s.cache_read("A", scope="shared")
    with pytest.raises(loom.ScheduleError, match="has no constant extent, which a shared buffer needs"):
        s.compute_at("c0", "i")
