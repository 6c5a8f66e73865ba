// The plugin manifest reader: the section's bytes parse or are a
// PluginError; the same bytes as a whole file go through the ELF reader
// that finds the section (a memory file, so no disk is touched).
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "loom/plugin/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;  // NOLINT
  std::string bytes = fuzz::bytes(data, size);
  fuzz::refused([&] { parse_manifest(bytes, "fuzz.so"); });
  static int fd = memfd_create("loom-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  fuzz::refused([&] { read_elf_sections(path, {".loom_manifest", ".loom_declarations"}, 1 << 20); });
  fuzz::refused([&] { read_manifest(path); });
  return 0;
}
