// Timing helpers shared by the benchmarks (bench/README.md).
#ifndef LOOM_BENCH_BENCH_UTIL_H_
#define LOOM_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace loom::bench {

using Clock = std::chrono::steady_clock;

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Nanoseconds one call of `body` takes.
template <class F>
double time_ns(F&& body) {
  auto start = Clock::now();
  body();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// Median milliseconds of `runs` calls of `body`.
template <class F>
double median_ms(int runs, F&& body) {
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) times.push_back(time_ns(body) / 1e6);
  return median(times);
}

// The CPU target of the device benchmarks: llvm, or LOOM_BENCH_HOST (c where
// the llvm plugin's LLVM is not installed, as on a lent GPU machine).
inline std::string host_kind() {
  const char* host = std::getenv("LOOM_BENCH_HOST");
  return host && *host ? host : "llvm";
}

// A config that builds for the device target `kind` with host_kind() as its
// host, through the `device` pipeline; LOOM_BENCH_TILE_THREADS sets
// DefaultDeviceSchedule.tile_threads (docs/passes.md) for a try on a GPU.
inline std::string device_config(const std::string& kind) {
  std::string text =
      "target:\n  kind: " + kind + "\n  host:\n    kind: " + host_kind() + "\npipeline:\n  passes: [device]\n";
  const char* tile = std::getenv("LOOM_BENCH_TILE_THREADS");
  if (tile && *tile) text += "  config:\n    DefaultDeviceSchedule.tile_threads: " + std::string(tile) + "\n";
  return text;
}

// A config for the CPU target alone (the device benchmarks' reference).
inline std::string host_config() {
  std::string kind = host_kind();
  return "target:\n  kind: " + kind + (kind == "llvm" ? "\n  mcpu: native" : "") + "\npipeline:\n  passes: [default]\n";
}

}  // namespace loom::bench

#endif  // LOOM_BENCH_BENCH_UTIL_H_
