package org.loom;

import java.util.Arrays;
import java.util.List;

/** An exported library's module tree. */
public final class Module extends Handle {
  Module(long handle) {
    super(handle);
  }

  /** Loads an exported library, loading the runtime halves of the backends it names. */
  public static Module load(String path) {
    return new Module(Native.moduleLoad(path));
  }

  /** The function name of the module or, depth first, of its imports. */
  public Function function(String name) {
    return new Function(Native.moduleFunction(handle(), name));
  }

  /** The module's own functions. */
  public List<String> functionNames() {
    String text = Native.moduleFunctionNames(handle());
    return text.isEmpty() ? List.of() : Arrays.asList(text.split("\n"));
  }
}
