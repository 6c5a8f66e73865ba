// The .npy reader: any bytes are an array whose size matches its header,
// or an Error.
#include "fuzz_util.h"
#include "loom/runtime/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  runtime::NDArray a;
  if (fuzz::refused([&] { a = runtime::parse_npy(fuzz::bytes(data, size), "fuzz.npy"); })) return 0;
  if (a->nbytes() > size) {
    std::fprintf(stderr, "fuzz: an array of %zu bytes from %zu bytes of file\n", a->nbytes(), size);
    std::abort();
  }
  return 0;
}
