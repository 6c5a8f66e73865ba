package org.loom;

/** Loom's error, carrying its message (what the C API's last error said). */
public class LoomException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LoomException(String message) {
    super(message);
  }
}
