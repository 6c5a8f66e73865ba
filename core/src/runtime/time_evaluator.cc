// TVM's time_evaluator semantics (docs/rpc.md, "The client"): the clock
// starts after the device is synchronized and stops after it is again, so
// it never counts time spent waiting to run.
#include "loom/runtime/time_evaluator.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "loom/runtime/device_api.h"
#include "loom/support/error.h"

namespace loom::runtime {

namespace {

using Clock = std::chrono::steady_clock;

// Twice the last-level cache this CPU reports (64 MiB when it reports none).
size_t flush_bytes() {
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    size_t scale = text.back() == 'K' ? 1024 : text.back() == 'M' ? 1024 * 1024 : 1;
    try {
      largest = std::max(largest, static_cast<size_t>(std::stoull(text)) * scale);
    } catch (const std::exception&) {
    }
  }
  return largest ? 2 * largest : size_t{64} << 20;
}

void flush_cache() {
  static std::vector<char> buffer(flush_bytes());
  static char stamp = 0;
  ++stamp;
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = stamp;
}

}  // namespace

TimeEvaluation time_evaluate(const Function& function, const std::vector<Any>& args, Device device,
                             const TimeEvaluatorOptions& o) {
  if (o.number < 1 || o.repeat < 1 || !(o.min_repeat_ms >= 0)) {
    LOOM_THROW(Error) << "time_evaluator: number and repeat must be at least 1 and min_repeat_ms not negative (got "
                      << o.number << ", " << o.repeat << ", " << o.min_repeat_ms << ")";
  }
  DeviceAPI& api = DeviceAPIRegistry::get(device);
  const int32_t n = static_cast<int32_t>(args.size());
  function.call(args.data(), n);  // warm-up: first-call costs (JIT, workspace) are not timed
  api.synchronize(device, nullptr);
  TimeEvaluation result;
  int64_t number = o.number;
  for (int64_t r = 0; r < o.repeat; ++r) {
    double ms = 0;
    for (bool first = true; first || ms < o.min_repeat_ms; first = false) {
      if (!first) {
        // As TVM: enough runs for the minimum at the speed just measured,
        // and at least the golden ratio more.
        double per_run = ms / static_cast<double>(number);
        double wanted = per_run > 0 ? o.min_repeat_ms / per_run + 1 : static_cast<double>(number) * 1.618;
        number = static_cast<int64_t>(std::max(wanted, static_cast<double>(number) * 1.618));
      }
      ms = 0;
      if (o.cache_flush) {
        for (int64_t k = 0; k < number; ++k) {
          flush_cache();
          auto start = Clock::now();
          function.call(args.data(), n);
          api.synchronize(device, nullptr);
          ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        }
      } else {
        auto start = Clock::now();
        for (int64_t k = 0; k < number; ++k) function.call(args.data(), n);
        api.synchronize(device, nullptr);
        ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      }
    }
    result.seconds.push_back(ms / 1000.0 / static_cast<double>(number));
  }
  result.number = number;
  return result;
}

}  // namespace loom::runtime
