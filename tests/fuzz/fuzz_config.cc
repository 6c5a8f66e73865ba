// The YAML config reader: any text is a config or an Error naming
// file:line:col, both when only checked and when loaded.
#include "fuzz_util.h"
#include "loom/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  std::string text = fuzz::bytes(data, size);
  fuzz::refused([&] { config::check_config(text, "fuzz.yaml"); });
  fuzz::refused([&] { config::parse_config(text, "fuzz.yaml"); });
  return 0;
}
