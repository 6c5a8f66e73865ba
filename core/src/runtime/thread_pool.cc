#include "loom/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <system_error>

#include "loom/support/error.h"

namespace loom::runtime {

namespace {
thread_local bool in_region = false;

int cores() { return std::max(1u, std::thread::hardware_concurrency()); }

// Spins until `ready()` or for kSpinTime; whether it became ready.
constexpr std::chrono::microseconds kSpinTime{200};
template <class F>
bool spin_until(F&& ready) {
  auto until = std::chrono::steady_clock::now() + kSpinTime;
  for (int k = 0;; ++k) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((k & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
  }
}

// Marks the current thread as inside a parallel region for a scope.
struct RegionScope {
  bool previous = in_region;
  RegionScope() { in_region = true; }
  ~RegionScope() { in_region = previous; }
};
}  // namespace

std::optional<int> threads_from_environment() {
  const char* env = std::getenv("LOOM_NUM_THREADS");
  if (!env) return std::nullopt;
  std::string text = env;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value <= 0 || value > kMaxThreads) {
    LOOM_THROW(Error) << "LOOM_NUM_THREADS='" << text << "' is not a number of threads from 1 to " << kMaxThreads;
  }
  return static_cast<int>(value);
}

ThreadPool::ThreadPool(int threads) { start(threads); }

ThreadPool::~ThreadPool() { stop(); }

ThreadPool& make_global_pool() {
  std::optional<int> env = threads_from_environment();
  auto* pool = new ThreadPool(env ? *env : 0);  // never destroyed: generated code may run at exit
  pool->environment_fixed_ = env.has_value();
  std::atexit([] { ThreadPool::global().shutdown(); });
  return *pool;
}

ThreadPool& ThreadPool::global() {
  static ThreadPool& pool = make_global_pool();
  return pool;
}

bool ThreadPool::in_parallel_region() { return in_region; }

void ThreadPool::start(int threads) {
  threads_ = threads > 0 ? std::min(threads, kMaxThreads) : cores();
  spin_ = threads_ <= cores();
  stopping_ = false;
  for (int i = 1; i < threads_; ++i) {
    try {
      workers_.emplace_back(&ThreadPool::worker, this, i, generation_.load());
    } catch (const std::system_error&) {
      threads_ = i;  // the system has no more threads to give: run with those started
      break;
    }
  }
}

void ThreadPool::shutdown() {
  // A thread that calls exit inside a loop holds no claim to join the
  // workers it is waiting for: leave them then.
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return;
  stop();
  threads_ = 1;
  shut_down_ = true;
}

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::set_num_threads(int64_t threads) {
  if (threads > kMaxThreads) {
    LOOM_THROW(Error) << "a pool of " << threads << " threads is more than Loom runs (at most " << kMaxThreads << ")";
  }
  if (environment_fixed_) return;
  std::lock_guard<std::mutex> busy(busy_);
  if (shut_down_) return;
  int wanted = threads > 0 ? static_cast<int>(threads) : cores();
  if (wanted == threads_) return;
  stop();
  start(wanted);
}

// `seen`: the last region's generation when the worker was started, so a
// worker started by a resize waits for the next region instead of taking
// the last one's chunk (whose body is gone: found by bench/models.py
// building for 1, then 2 threads).  It is read by start(), which no region
// overlaps; read by the worker, a region started meanwhile would be missed.
void ThreadPool::worker(int index, uint64_t seen) {
  while (true) {
    std::pair<int64_t, int64_t> chunk;
    const std::function<void(int64_t, int64_t)>* body;
    auto woken = [&] { return stopping_ || generation_ != seen; };
    if (spin_) spin_until(woken);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, woken);
      --sleepers_;
      if (stopping_) return;
      seen = generation_;
      if (index >= static_cast<int>(chunks_.size())) continue;  // fewer chunks than threads
      chunk = chunks_[index];
      body = body_;
    }
    std::exception_ptr error;
    {
      RegionScope region;
      try {
        (*body)(chunk.first, chunk.second);
      } catch (...) {
        error = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, const std::function<void(int64_t, int64_t)>& body) {
  if (end <= begin) return;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  int64_t count = end - begin;
  if (in_region || !busy.owns_lock() || threads_ == 1 || count == 1) {
    RegionScope region;  // nested or concurrent: serially, here
    body(begin, end);
    return;
  }
  int parts = static_cast<int>(std::min<int64_t>(threads_, count));
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int i = 0; i < parts; ++i) {
    chunks.emplace_back(begin + count * i / parts, begin + count * (i + 1) / parts);
  }
  bool sleeping;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chunks_ = chunks;
    body_ = &body;
    pending_ = parts - 1;
    error_ = nullptr;
    ++generation_;
    sleeping = sleepers_ > 0;
  }
  if (sleeping) wake_.notify_all();
  std::exception_ptr mine;
  {
    RegionScope region;
    try {
      body(chunks[0].first, chunks[0].second);
    } catch (...) {
      mine = std::current_exception();
    }
  }
  if (spin_) spin_until([&] { return pending_ == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  std::exception_ptr error = mine ? mine : error_;
  body_ = nullptr;
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace loom::runtime

extern "C" int loom_parallel_for(int64_t begin, int64_t end, int (*body)(int64_t, int64_t, void*), void* closure) {
  std::atomic<int> status{0};
  try {
    loom::runtime::ThreadPool::global().parallel_for(begin, end, [&](int64_t b, int64_t e) {
      int rc = body(b, e, closure);
      int expected = 0;
      if (rc != 0) status.compare_exchange_strong(expected, rc);
    });
  } catch (...) {
    return -1;
  }
  return status.load();
}
