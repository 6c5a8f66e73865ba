import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import org.loom.Function;
import org.loom.Module;
import org.loom.Tensor;

/**
 * Runs an exported library's main on float32 .npy inputs and writes the output's elements
 * (float32, C order, no header) to a file: the Java side of tests/bindings/agreement.sh, which
 * compares six languages' runs bit by bit.
 *
 * <pre>
 *   java -Dorg.loom.library=build/lib/libloom_jni.so -cp build/java/loom.jar \
 *       bindings/java/example/RunNpy.java LIB.so OUT.f32 INPUT.npy...
 * </pre>
 */
public class RunNpy {
  static Tensor readNpy(String path) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
    if (b.limit() < 10 || b.get(0) != (byte) 0x93 || b.get(1) != 'N') {
      throw new IOException(path + ": not a .npy file");
    }
    int start = b.get(6) == 1 ? 10 : 12;
    int n = b.get(6) == 1 ? Short.toUnsignedInt(b.getShort(8)) : b.getInt(8);
    String header = new String(b.array(), start, n, "latin1");
    if (!header.contains("'descr': '<f4'") || !header.contains("'fortran_order': False")) {
      throw new IOException(path + ": not a C-ordered little-endian float32 array");
    }
    String dims = header.split("'shape': \\(")[1].split("\\)")[0];
    long[] shape = Arrays.stream(dims.split(",")).map(String::trim).filter(s -> !s.isEmpty())
        .mapToLong(Long::parseLong).toArray();
    float[] data = new float[(b.limit() - start - n) / 4];
    b.position(start + n);
    b.asFloatBuffer().get(data);
    return Tensor.of(data, shape);
  }

  public static void main(String[] argv) throws IOException {
    Object[] args = new Object[argv.length - 2];
    for (int k = 2; k < argv.length; ++k) {
      args[k - 2] = readNpy(argv[k]);
    }
    try (Module lib = Module.load(argv[0]);
        Function main = lib.function("main");
        Tensor y = main.callTensor(args)) {
      float[] v = y.toFloatArray();
      ByteBuffer out = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
      out.asFloatBuffer().put(v);
      Files.write(Paths.get(argv[1]), out.array());
    }
  }
}
