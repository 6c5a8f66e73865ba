package org.loom;

import java.lang.ref.Cleaner;

/**
 * One counted reference to a Loom object. {@link #close} gives it back at
 * once (try-with-resources); a handle the collector finds unreachable gives
 * it back through a Cleaner. A closed handle refuses to be used.
 */
public class Handle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  // Read by the JNI half (loom_jni.c) under this name.
  private volatile long handle;
  private final Cleaner.Cleanable cleanable;

  private static final class Release implements Runnable {
    private final long handle;

    Release(long handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      Native.release(handle);
    }
  }

  Handle(long handle) {
    this.handle = handle;
    this.cleanable = CLEANER.register(this, new Release(handle));
  }

  // The handle, 0 once closed.
  long rawHandle() {
    return handle;
  }

  long handle() {
    long h = handle;
    if (h == 0) {
      throw new LoomException("the " + getClass().getSimpleName() + " was closed");
    }
    return h;
  }

  /** The object's type key ("runtime.NDArray", ...). */
  public String typeKey() {
    return Native.typeKey(handle());
  }

  /** The reference count (for tests and leak checks). */
  public int useCount() {
    return Native.useCount(handle());
  }

  @Override
  public void close() {
    handle = 0;
    cleanable.clean(); // runs Release once
  }

  /**
   * The handle for a reference Loom handed over (called by the JNI half): kind 1 a tensor, 2 a
   * function, 3 a module, 0 another object.
   */
  static Handle wrap(long handle, int kind) {
    switch (kind) {
      case 1:
        return new Tensor(handle);
      case 2:
        return new Function(handle);
      case 3:
        return new Module(handle);
      default:
        return new Handle(handle);
    }
  }
}
