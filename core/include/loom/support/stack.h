// Deep recursion without stack overflow (docs/reliability.md, "Depth").
//
// The IR nests one level per let binding and per nested expression, and the
// walks over it (parser, printer, checks, passes, codegens) recurse along
// that nesting.  A thread's stack (8 MiB) holds some ten thousand levels;
// models and generated inputs nest deeper.  A recursive walk therefore calls
// with_stack() once per level:
//
//   Type infer(const Expr& e) {
//     return with_stack([&] { return infer_uncached(e); });
//   }
//
// with_stack(fn) calls fn at once while at least kStackRedZone bytes of
// stack are left, and otherwise on a fresh segment of kStackSegmentSize
// bytes: on the same thread (thread-local state stays valid), with the
// exception, if any, passed on to the caller.  Segments are mapped lazily
// and reused; their address space is capped at kStackReserveLimit, past
// which with_stack throws NestingError instead of growing further.
#ifndef LOOM_SUPPORT_STACK_H_
#define LOOM_SUPPORT_STACK_H_

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "loom/support/error.h"

namespace loom {

// The IR nests deeper than Loom supports (a parse limit, or the stack
// segments' cap).
class NestingError : public Error {
 public:
  using Error::Error;
};

// The deepest nesting the parsers accept (docs/reliability.md).
constexpr int kMaxNestingDepth = 1000000;

constexpr size_t kStackRedZone = size_t{256} << 10;      // bytes left before switching
constexpr size_t kStackSegmentSize = size_t{64} << 20;   // one fresh segment
constexpr size_t kStackReserveLimit = size_t{16} << 30;  // all segments of a thread

namespace detail {
// The address below which this thread's current stack is too low (nullptr
// until first computed on this thread).
extern thread_local const char* t_stack_limit;
const char* init_stack_limit();

inline bool stack_is_low() {
  const char* limit = t_stack_limit ? t_stack_limit : init_stack_limit();
  return static_cast<const char*>(__builtin_frame_address(0)) < limit;
}

// Runs fn(arg) on a fresh stack segment; rethrows what it threw.
void run_on_new_stack(void (*fn)(void*), void* arg);
}  // namespace detail

template <class F>
decltype(auto) with_stack(F&& fn) {
  using R = decltype(fn());
  if (!detail::stack_is_low()) return fn();
  if constexpr (std::is_void_v<R>) {
    detail::run_on_new_stack([](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); }, &fn);
  } else if constexpr (std::is_reference_v<R>) {
    struct Call {
      std::remove_reference_t<F>* fn;
      std::remove_reference_t<R>* out;
    } call{&fn, nullptr};
    detail::run_on_new_stack([](void* c) { static_cast<Call*>(c)->out = &(*static_cast<Call*>(c)->fn)(); }, &call);
    return static_cast<R>(*call.out);
  } else {
    struct Call {
      std::remove_reference_t<F>* fn;
      std::optional<R> out;
    } call{&fn, std::nullopt};
    detail::run_on_new_stack([](void* c) { static_cast<Call*>(c)->out.emplace((*static_cast<Call*>(c)->fn)()); },
                             &call);
    return R(std::move(*call.out));
  }
}

}  // namespace loom

#endif  // LOOM_SUPPORT_STACK_H_
