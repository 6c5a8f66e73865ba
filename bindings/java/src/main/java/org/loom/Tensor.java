package org.loom;

import java.nio.FloatBuffer;
import java.util.Arrays;

/** A Loom tensor (runtime.NDArray). */
public final class Tensor extends Handle {
  Tensor(long handle) {
    super(handle);
  }

  /** A float32 CPU tensor of shape (row-major) holding a copy of data. */
  public static Tensor of(float[] data, long... shape) {
    return new Tensor(Native.tensorFromFloats(data, shape));
  }

  /** A float32 CPU tensor holding a copy of a direct buffer's floats. */
  public static Tensor of(FloatBuffer data, long... shape) {
    return new Tensor(Native.tensorFromBuffer(data, shape));
  }

  public long[] shape() {
    return Native.tensorShape(handle());
  }

  /** The element type ("float32", "int64", ...). */
  public String dtype() {
    return Native.tensorDtype(handle());
  }

  /** A float32 tensor's elements, copied. */
  public float[] toFloatArray() {
    return Native.tensorToFloats(handle());
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype() + ", " + Arrays.toString(shape()) + ")";
  }
}
