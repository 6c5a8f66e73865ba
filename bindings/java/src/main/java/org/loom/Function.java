package org.loom;

/** A Loom function: a module's or a global one. Callable from many threads at once. */
public final class Function extends Handle {
  Function(long handle) {
    super(handle);
  }

  /** The global function name; a LoomException when none is registered. */
  public static Function global(String name) {
    long h = Native.globalFunction(name);
    if (h == 0) {
      throw new LoomException("no global function named '" + name + "'");
    }
    return new Function(h);
  }

  /**
   * Calls the function. Arguments: Tensor, Function, Module, Long, Integer, Double, Float, Boolean,
   * String, null. The result: a Tensor (or another Handle), Long, Double, Boolean, String or null.
   */
  public Object call(Object... args) {
    long[] object = new long[2]; // an object result: its handle and kind
    long[] handles = handlesOf(args);
    Object out =
        handles != null
            ? Native.callHandles(handle(), handles, object)
            : Native.call(handle(), args, object);
    if (object[0] != 0) {
      out = Handle.wrap(object[0], (int) object[1]);
    }
    java.lang.ref.Reference.reachabilityFence(this);
    java.lang.ref.Reference.reachabilityFence(args);
    return out;
  }

  /** The handles of args when every one is an open handle (the common call), else null. */
  private static long[] handlesOf(Object[] args) {
    if (args == null || args.length > 8) {
      return null;
    }
    long[] out = new long[args.length];
    for (int k = 0; k < args.length; ++k) {
      if (!(args[k] instanceof Handle)) {
        return null;
      }
      out[k] = ((Handle) args[k]).rawHandle();
      if (out[k] == 0) {
        return null; // closed: the general path names the argument
      }
    }
    return out;
  }

  /**
   * A Loom function that runs fn (callable through Loom from any language and any thread); an
   * exception it throws becomes its caller's error.
   */
  public static Function of(java.util.function.Function<Object[], Object> fn) {
    return new Function(Native.functionOf(fn));
  }

  /** Registers the function as the global name. */
  public void registerGlobal(String name, boolean allowOverride) {
    Native.registerGlobal(name, handle(), allowOverride);
  }

  /** Calls the function and expects a tensor. */
  public Tensor callTensor(Object... args) {
    Object out = call(args);
    if (!(out instanceof Tensor)) {
      throw new LoomException("expected a tensor result, got " + out);
    }
    return (Tensor) out;
  }
}
