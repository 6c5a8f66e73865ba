import org.loom.Function;
import org.loom.Module;
import org.loom.Tensor;

/**
 * Runs the MLP example built for the CPU and prints its output:
 *
 * <pre>
 *   build/bin/loomc build examples/mlp.loom --config configs/host.yaml -o /tmp/mlp.so
 *   java -Dorg.loom.library=build/lib/libloom_jni.so -cp build/java/loom.jar \
 *       bindings/java/example/RunMlp.java /tmp/mlp.so
 * </pre>
 *
 * The inputs are seeded pseudo-random numbers (the same in every run).
 */
public class RunMlp {
  public static void main(String[] argv) {
    long[][] shapes = {{64, 784}, {512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
    long state = 1;
    Object[] args = new Object[shapes.length];
    for (int i = 0; i < shapes.length; ++i) {
      long n = 1;
      for (long d : shapes[i]) {
        n *= d;
      }
      float[] data = new float[(int) n];
      for (int k = 0; k < n; ++k) {
        state = state * 6364136223846793005L + 1442695040888963407L;
        data[k] = ((float) (state >>> 40) / (float) (1L << 24) - 0.5f) * 0.1f;
      }
      args[i] = Tensor.of(data, shapes[i]);
    }
    try (Module lib = Module.load(argv.length > 0 ? argv[0] : "mlp.so");
        Function main = lib.function("main");
        Tensor y = main.callTensor(args)) {
      float[] v = y.toFloatArray();
      System.out.println("output: " + y.dtype() + " " + java.util.Arrays.toString(y.shape()));
      System.out.println("row 0: " + java.util.Arrays.toString(java.util.Arrays.copyOf(v, 10)));
    }
  }
}
