// What CPU this process runs on: in the runtime library, so a program
// that runs built code (loom-rpc-server's INFO, docs/rpc.md) can say what
// it measures on as tuning records it.
#ifndef LOOM_SUPPORT_CPU_H_
#define LOOM_SUPPORT_CPU_H_

#include <cstdint>
#include <string>

namespace loom {

// The CPU's vector width in bits as detected at run time (0 if none known).
int64_t detect_vector_bits();
// The CPU this process runs on, as tuning records it (docs/tuning.md,
// "Tasks"): /proc/cpuinfo's model name and the widest vector extension
// (avx512f, avx2, avx, sse2, neon), "unknown" where nothing says.
std::string detect_cpu();

}  // namespace loom

#endif  // LOOM_SUPPORT_CPU_H_
