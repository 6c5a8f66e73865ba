// Timing helpers shared by the benchmarks (bench/README.md).
#ifndef LOOM_BENCH_BENCH_UTIL_H_
#define LOOM_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
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

}  // namespace loom::bench

#endif  // LOOM_BENCH_BENCH_UTIL_H_
