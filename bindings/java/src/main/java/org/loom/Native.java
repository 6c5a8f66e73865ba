package org.loom;

/**
 * The JNI half (src/main/c/loom_jni.c) over Loom's C API. The library
 * libloom_jni.so is found as the system property org.loom.library names it
 * (a path), else on java.library.path.
 */
final class Native {
  static {
    String path = System.getProperty("org.loom.library");
    if (path != null) {
      System.load(java.nio.file.Paths.get(path).toAbsolutePath().toString());
    } else {
      System.loadLibrary("loom_jni");
    }
  }

  private Native() {}

  static native long moduleLoad(String path);

  static native long moduleFunction(long module, String name);

  static native String moduleFunctionNames(long module);

  static native long globalFunction(String name);

  static native void release(long handle);

  static native int useCount(long handle);

  static native String typeKey(long handle);

  static native long tensorFromFloats(float[] data, long[] shape);

  static native long tensorFromBuffer(java.nio.FloatBuffer data, long[] shape);

  static native long[] tensorShape(long handle);

  static native String tensorDtype(long handle);

  static native float[] tensorToFloats(long handle);

  // The call's result; an object result (a handle) is returned as null
  // with its handle and Handle.wrap's kind in handleOut[0] and [1], so
  // that Java wraps it without the native side calling back into the JVM.
  static native Object call(long function, Object[] args, long[] handleOut);

  // The same call when every argument is a handle, given as the handles
  // themselves (no JNI call per argument).
  static native Object callHandles(long function, long[] handles, long[] handleOut);

  static native long functionOf(java.util.function.Function<Object[], Object> fn);

  static native void registerGlobal(String name, long function, boolean allowOverride);
}
