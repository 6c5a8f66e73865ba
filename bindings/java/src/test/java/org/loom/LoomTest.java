package org.loom;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The Java binding against Loom itself: the MLP example exported for the CPU (loomc build), run
 * from Java and compared with a float64 reference computed here; tensors from float[] and direct
 * FloatBuffers; errors as LoomException; scalars, strings and tensors through a function written in
 * Java; an exception; eight threads; reference counts. The system property loomc names loomc.
 */
public class LoomTest {
  static final long[][] SHAPES = {{64, 784}, {512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
  static String mlp;

  @BeforeClass
  public static void build() throws Exception {
    Path root = Paths.get(System.getProperty("loom.root", "../.."));
    Path dir = Files.createTempDirectory("loom-java-");
    mlp = dir.resolve("mlp.so").toString();
    Process p = new ProcessBuilder(System.getProperty("loomc", root.resolve("build/bin/loomc").toString()), "build",
        root.resolve("examples/mlp.loom").toString(), "--config", root.resolve("configs/host.yaml").toString(), "-o",
        mlp).inheritIO().start();
    assertEquals("loomc build", 0, p.waitFor());
  }

  static float[][] inputs(long seed) {
    long state = seed;
    float[][] out = new float[SHAPES.length][];
    for (int i = 0; i < SHAPES.length; ++i) {
      long n = 1;
      for (long d : SHAPES[i]) {
        n *= d;
      }
      out[i] = new float[(int) n];
      for (int k = 0; k < n; ++k) {
        state = state * 6364136223846793005L + 1442695040888963407L;
        out[i][k] = ((float) (state >>> 40) / (float) (1L << 24) - 0.5f) * 0.2f;
      }
    }
    return out;
  }

  static Object[] tensors(float[][] d) {
    Object[] args = new Object[d.length];
    for (int i = 0; i < d.length; ++i) {
      args[i] = Tensor.of(d[i], SHAPES[i]);
    }
    return args;
  }

  static double[] dense(double[] x, int rows, float[] w, float[] b, int out) {
    int inner = x.length / rows;
    double[] y = new double[rows * out];
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) {
        double s = b[o];
        for (int k = 0; k < inner; ++k) {
          s += x[r * inner + k] * w[o * inner + k];
        }
        y[r * out + o] = s;
      }
    }
    return y;
  }

  static double[] relu(double[] v) {
    for (int k = 0; k < v.length; ++k) {
      v[k] = Math.max(v[k], 0);
    }
    return v;
  }

  static double[] reference(float[][] d) {
    double[] x = new double[d[0].length];
    for (int k = 0; k < x.length; ++k) {
      x[k] = d[0][k];
    }
    double[] h = relu(dense(relu(dense(x, 64, d[1], d[2], 512)), 64, d[3], d[4], 512));
    double[] z = dense(h, 64, d[5], d[6], 10);
    double[] y = new double[z.length];
    for (int r = 0; r < 64; ++r) {
      double m = Double.NEGATIVE_INFINITY;
      double s = 0;
      for (int o = 0; o < 10; ++o) {
        m = Math.max(m, z[r * 10 + o]);
      }
      for (int o = 0; o < 10; ++o) {
        s += Math.exp(z[r * 10 + o] - m);
      }
      for (int o = 0; o < 10; ++o) {
        y[r * 10 + o] = Math.exp(z[r * 10 + o] - m) / s;
      }
    }
    return y;
  }

  @Test
  public void theMlpMatchesAFloat64Reference() {
    try (Module lib = Module.load(mlp); Function main = lib.function("main")) {
      assertTrue(lib.functionNames().toString(), lib.functionNames().size() > 0);
      float[][] d = inputs(11);
      try (Tensor y = main.callTensor(tensors(d))) {
        assertArrayEquals(new long[] {64, 10}, y.shape());
        assertEquals("float32", y.dtype());
        float[] v = y.toFloatArray();
        double[] want = reference(d);
        double worst = 0;
        for (int k = 0; k < v.length; ++k) {
          worst = Math.max(worst, Math.abs(v[k] - want[k]));
        }
        assertTrue(worst + " from the reference", worst < 1e-5);
      }
    }
  }

  @Test
  public void directBuffersGiveWhatArraysGive() {
    try (Module lib = Module.load(mlp); Function main = lib.function("main")) {
      float[][] d = inputs(12);
      Object[] fromBuffers = new Object[d.length];
      for (int i = 0; i < d.length; ++i) {
        FloatBuffer b = ByteBuffer.allocateDirect(d[i].length * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
        b.put(d[i]);
        fromBuffers[i] = Tensor.of(b, SHAPES[i]);
      }
      assertArrayEquals(main.callTensor(tensors(d)).toFloatArray(), main.callTensor(fromBuffers).toFloatArray(), 0f);
    }
  }

  static void expectError(String part, Runnable r) {
    try {
      r.run();
    } catch (LoomException e) {
      assertTrue(e.getMessage(), e.getMessage().contains(part));
      return;
    }
    fail("no LoomException containing " + part);
  }

  @Test
  public void errorsAreLoomExceptionsWithLoomsMessage() {
    expectError("/nonexistent/model.so", () -> Module.load("/nonexistent/model.so"));
    try (Module lib = Module.load(mlp)) {
      expectError("main", () -> lib.function("mian"));
      Function main = lib.function("main");
      expectError("7 arguments", () -> main.call(1L));
      float[][] d = inputs(13);
      Object[] args = tensors(d);
      args[0] = Tensor.of(new float[32 * 784], 32, 784);
      expectError("32", () -> main.call(args));
      expectError("Loom takes a Tensor", () -> main.call(new float[] {1}));
      expectError("as many elements", () -> Tensor.of(new float[] {1, 2}, 3));
      expectError("no global function", () -> Function.global("no.such.function"));
      Tensor t = Tensor.of(new float[] {1}, 1);
      t.close();
      expectError("was closed", () -> t.shape());
      expectError("closed", () -> main.call(t)); // a closed argument, not the handles' fast path
    }
  }

  @Test
  public void scalarsAndFunctionsWrittenInJava() {
    Function axpb = Function.of(args -> {
      if (args.length != 2) {
        throw new IllegalArgumentException("java_test.axpb takes 2 numbers");
      }
      return ((Double) args[0]) * 2 + ((Long) args[1]);
    });
    axpb.registerGlobal("java_test.axpb", true);
    Function g = Function.global("java_test.axpb");
    assertEquals(6.0, (Double) g.call(1.5, 3L), 0.0);
    expectError("java_test.axpb takes 2 numbers", () -> g.call(1L));
    Function echo = Function.of(args -> args[0] instanceof String ? args[0] + "!" : args[0]);
    assertEquals("loom!", echo.call("loom"));
    Tensor t = Tensor.of(new float[] {1, 2, 3}, 3);
    Object back = echo.call(t);
    assertTrue(back instanceof Tensor);
    assertArrayEquals(new float[] {1, 2, 3}, ((Tensor) back).toFloatArray(), 0f);
  }

  @Test
  public void eightThreadsCallingOneFunctionAgreeWithOne() throws Exception {
    try (Module lib = Module.load(mlp); Function main = lib.function("main")) {
      Object[] args = tensors(inputs(14));
      float[] want = main.callTensor(args).toFloatArray();
      AtomicReference<String> failure = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int k = 0; k < 8; ++k) {
        Thread th = new Thread(() -> {
          for (int i = 0; i < 5; ++i) {
            try (Tensor y = main.callTensor(args)) {
              if (!java.util.Arrays.equals(want, y.toFloatArray())) {
                failure.set("a result differs from one thread's");
              }
            } catch (LoomException e) {
              failure.set(e.getMessage());
            }
          }
        });
        threads.add(th);
        th.start();
      }
      for (Thread th : threads) {
        th.join();
      }
      assertEquals(null, failure.get());
    }
  }

  @Test
  public void referenceCounts() {
    Tensor t = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
    assertEquals(1, t.useCount());
    Function echo = Function.of(args -> args[0]);
    Tensor same = (Tensor) echo.call(t);
    // The result is one more reference (the argument's Java handle inside
    // the function holds another until the collector finds it).
    int withResult = t.useCount();
    assertTrue(withResult >= 2);
    same.close();
    same.close(); // a second close does nothing
    assertEquals(withResult - 1, t.useCount());
    assertEquals("runtime.NDArray", t.typeKey());
    t.close();
  }
}
