"""Prim functions for the device targets' tests (opencl, vulkan): an
elementwise nest over a symbolic dimension, a float64 row reduction, an
int32 sum to one value with floor division, and two kernels through an
intermediate buffer with a thread-local accumulator; run_all runs them on
`device` against NumPy, check_kernels builds them for a device target and
runs them at three sizes."""
import numpy as np

import loom

KERNELS = """
@ew = prim_func(%A: Buffer[(%n: int64, 3), float32], %B: Buffer[(%n, 3), float32], %C: Buffer[(%n, 3), float32]) {
  for %i: int64 from 0 extent %n {
    for %j: int64 from 0 extent 3 {
      %C[%i, %j] = call(float32, "exp", %A[%i, %j]) + max(%B[%i, %j], 0.0);
    }
  }
}

@rowsum = prim_func(%A: Buffer[(%m: int64, 37), float64], %Out: Buffer[(%m), float64]) {
  for %i: int64 from 0 extent %m {
    %Out[%i] = float64(0.0);
    for %k: int64 from 0 extent 37 {
      %Out[%i] = %Out[%i] + %A[%i, %k] * %A[%i, %k];
    }
  }
}

@total = prim_func(%A: Buffer[(%p: int64), int32], %Out: Buffer[(1), int32]) {
  %Out[0] = int32(0);
  for %k: int64 from 0 extent %p {
    %Out[0] = %Out[0] + %A[%k] // int32(3);
  }
}

@two_steps = prim_func(%X: Buffer[(%q: int64, 10), float32], %Y: Buffer[(%q, 10), float32]) {
  alloc %T: Buffer[(%q, 10), float32] {
    for %i: int64 from 0 extent %q {
      for %j: int64 from 0 extent 10 {
        %T[%i, %j] = %X[%i, %j] * 2.0;
      }
    }
    for %i2: int64 from 0 extent %q {
      alloc %S: Buffer[(1), float32, scope="local"] {
        %S[0] = 0.0;
        for %k: int64 from 0 extent 10 {
          %S[0] = %S[0] + %T[%i2, %k];
        }
        for %j2: int64 from 0 extent 10 {
          %Y[%i2, %j2] = %T[%i2, %j2] - %S[0] / 10.0;
        }
      }
    }
  }
}
"""


def run_all(lib, rng, n, device):
    def on_device(a):
        return loom.nd.array(a, device=device)

    a, b = rng.uniform(-2, 2, (n, 3)).astype(np.float32), rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    c = on_device(np.zeros((n, 3), np.float32))
    lib["ew"](on_device(a), on_device(b), c)
    np.testing.assert_allclose(c.copyto("cpu").numpy(), np.exp(a) + np.maximum(b, 0), rtol=1e-6, atol=1e-6)

    x = rng.uniform(-1, 1, (n, 37))
    out = on_device(np.zeros(n))
    lib["rowsum"](on_device(x), out)
    np.testing.assert_allclose(out.copyto("cpu").numpy(), (x * x).sum(axis=1), rtol=1e-12)

    ints = rng.integers(-50, 50, n).astype(np.int32)
    total = on_device(np.zeros(1, np.int32))
    lib["total"](on_device(ints), total)
    assert total.copyto("cpu").numpy()[0] == (ints // 3).sum()

    v = rng.uniform(-1, 1, (n, 10)).astype(np.float32)
    y = on_device(np.zeros((n, 10), np.float32))
    lib["two_steps"](on_device(v), y)
    np.testing.assert_allclose(y.copyto("cpu").numpy(), 2 * v - (2 * v).sum(axis=1, keepdims=True) / 10, rtol=1e-5,
                               atol=1e-6)


def device_config(kind, host="llvm", **attrs):
    """A config for device target `kind` with a `host` target and the kind's attributes."""
    return {"target": dict({"kind": kind, "host": {"kind": host}}, **attrs)}


def check_kernels(kind, host, rng):
    """KERNELS built for `kind` with `host`: the tree is the host's module
    importing the device module, and every kernel matches NumPy."""
    lib = loom.build(loom.parse(KERNELS), device_config(kind, host))
    assert lib.kind == host
    assert [m.kind for m in lib.imports] == [kind]
    for n in (1, 7, 300):  # fewer threads than a block, a remainder, several blocks
        run_all(lib, rng, n, kind)
