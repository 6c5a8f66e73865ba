import java.util.Arrays;
import org.loom.Function;
import org.loom.Module;
import org.loom.Tensor;

/**
 * The Java side of bench/languages.py: the time per call of @noop and @add1k of
 * bench/languages/calls.loom (exported), the median of 7 batches after a warm-up, as
 * call_bench.c does in C; the arguments are tensors made once from float[]. Prints "noop US" and
 * "add1k US".
 */
public class BenchCalls {
  interface Call {
    void run();
  }

  static double medianUs(int calls, Call f) {
    for (int k = 0; k < calls / 10 + 1; ++k) {
      f.run();
    }
    double[] batches = new double[7];
    for (int b = 0; b < 7; ++b) {
      long start = System.nanoTime();
      for (int k = 0; k < calls; ++k) {
        f.run();
      }
      batches[b] = (System.nanoTime() - start) / 1e3 / calls;
    }
    Arrays.sort(batches);
    return batches[3];
  }

  public static void main(String[] argv) {
    int calls = argv.length > 1 ? Integer.parseInt(argv[1]) : 20000;
    float[] x = new float[1024];
    float[] y = new float[1024];
    for (int k = 0; k < 1024; ++k) {
      x[k] = k;
      y[k] = 1;
    }
    try (Module lib = Module.load(argv[0]);
        Function noop = lib.function("noop");
        Function add = lib.function("add1k")) {
      Tensor x1 = Tensor.of(new float[] {0}, 1);
      Tensor tx = Tensor.of(x, 1024);
      Tensor ty = Tensor.of(y, 1024);
      double a = medianUs(calls, () -> noop.callTensor(x1).close());
      double b = medianUs(calls, () -> add.callTensor(tx, ty).close());
      System.out.printf("noop %.3f%nadd1k %.3f%n", a, b);
    }
  }
}
