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

  static native Object call(long function, Object[] args);

  static native long functionOf(java.util.function.Function<Object[], Object> fn);

  static native void registerGlobal(String name, long function, boolean allowOverride);
}
