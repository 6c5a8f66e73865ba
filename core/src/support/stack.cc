// Fresh stack segments for deep recursion (loom/support/stack.h).  A segment
// is an anonymous mapping with a guard page at its low end; the switch is
// makecontext/swapcontext on the same thread, annotated for AddressSanitizer
// when it is on.
#include "loom/support/stack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_ASAN 1
#endif
#endif
#ifdef LOOM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace loom::detail {

thread_local const char* t_stack_limit = nullptr;

namespace {

// The most of a thread's own stack Loom uses before switching (a main
// thread with an unlimited stack rlimit reports a huge size).
constexpr size_t kOwnStackCap = size_t{8} << 20;

struct Segment {
  char* base = nullptr;  // the guard page; usable memory above it
  size_t size = 0;       // including the guard page
};

struct Segments {
  std::vector<Segment> spare;
  size_t reserved = 0;  // address space of every segment this thread holds
  ~Segments() {
    for (const Segment& s : spare) munmap(s.base, s.size);
  }
};

thread_local Segments t_segments;

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

Segment take_segment() {
  Segments& segments = t_segments;
  if (!segments.spare.empty()) {
    Segment s = segments.spare.back();
    segments.spare.pop_back();
    return s;
  }
  size_t size = kStackSegmentSize + page_size();
  if (segments.reserved + size > kStackReserveLimit) {
    throw NestingError("nesting too deep: walking it needs more than " + std::to_string(kStackReserveLimit >> 30) +
                       " GiB of stack (docs/reliability.md, \"Depth\")");
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) throw NestingError("nesting too deep: cannot map another stack segment for it");
  mprotect(p, page_size(), PROT_NONE);  // overflowing a segment faults instead of corrupting memory
  segments.reserved += size;
  return Segment{static_cast<char*>(p), size};
}

void give_back(const Segment& s) {
  Segments& segments = t_segments;
  if (segments.spare.size() < 2) {
    segments.spare.push_back(s);
    return;
  }
  munmap(s.base, s.size);
  segments.reserved -= s.size;
}

struct Call {
  void (*fn)(void*);
  void* arg;
  std::exception_ptr error;
  ucontext_t caller;
#ifdef LOOM_ASAN
  const void* caller_bottom = nullptr;
  size_t caller_size = 0;
#endif
};

thread_local Call* t_call = nullptr;  // the call a new context starts with

void trampoline() {
  Call* call = t_call;
#ifdef LOOM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &call->caller_bottom, &call->caller_size);
#endif
  try {
    call->fn(call->arg);
  } catch (...) {
    call->error = std::current_exception();
  }
#ifdef LOOM_ASAN
  __sanitizer_start_switch_fiber(nullptr, call->caller_bottom, call->caller_size);  // this fiber ends
#endif
  // Returning resumes uc_link, the caller.
}

}  // namespace

const char* init_stack_limit() {
  pthread_attr_t attr;
  char* low = nullptr;
  size_t size = 0;
  void* addr = nullptr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  if (addr && size > kStackRedZone) {
    char* high = static_cast<char*>(addr) + size;
    low = high - std::min(size, kOwnStackCap);
  } else {  // unknown: assume a small stack below the current frame
    low = static_cast<char*>(__builtin_frame_address(0)) - (size_t{1} << 20);
  }
  t_stack_limit = low + kStackRedZone;
  return t_stack_limit;
}

void run_on_new_stack(void (*fn)(void*), void* arg) {
  Segment segment = take_segment();
  Call call{fn, arg, nullptr, {}};
  ucontext_t callee;
  getcontext(&callee);
  callee.uc_stack.ss_sp = segment.base + page_size();
  callee.uc_stack.ss_size = segment.size - page_size();
  callee.uc_link = &call.caller;
  makecontext(&callee, trampoline, 0);
  const char* saved_limit = t_stack_limit;
  Call* saved_call = t_call;
  t_call = &call;
  t_stack_limit = segment.base + page_size() + kStackRedZone;
#ifdef LOOM_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, callee.uc_stack.ss_sp, callee.uc_stack.ss_size);
#endif
  swapcontext(&call.caller, &callee);
#ifdef LOOM_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  t_stack_limit = saved_limit;
  t_call = saved_call;
  give_back(segment);
  if (call.error) std::rethrow_exception(call.error);
}

}  // namespace loom::detail
