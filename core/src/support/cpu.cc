// What CPU this process runs on (loom/support/cpu.h).
#include "loom/support/cpu.h"

#include <fstream>

#include "loom/support/strings.h"

namespace loom {

int64_t detect_vector_bits() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx")) return 256;
  return 128;  // SSE2 is part of x86-64
#elif defined(__aarch64__)
  return 128;  // NEON
#else
  return 0;
#endif
}

std::string detect_cpu() {
  std::string model;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; !model.size() && std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos) model = trim(line.substr(colon + 1));
  }
  if (model.empty()) model = "unknown";
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const char* extension = __builtin_cpu_supports("avx512f") ? "avx512f"
                          : __builtin_cpu_supports("avx2")  ? "avx2"
                          : __builtin_cpu_supports("avx")   ? "avx"
                                                            : "sse2";
  return model + " " + extension;
#elif defined(__aarch64__)
  return model + " neon";
#else
  return model;
#endif
}

}  // namespace loom
