#include "loom/runtime/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <system_error>

#include "loom/support/error.h"

namespace loom::runtime {

namespace {
thread_local bool in_region = false;

// Chunks per thread: enough that a thread slowed by another process on its
// core leaves its share to the others, few enough that a chunk stays long.
constexpr int64_t kChunksPerThread = 4;
// How long a thread spins before it sleeps on a quiet machine (a worker
// between regions, a caller waiting for the last chunks), how long a
// caller spins on a crowded one, and how often should_spin reads the
// machine's load.  A wake-up cost 50-100 us on a Firecracker VM (a
// parallel region of 7 us took 110 at two threads), so the idle spin
// covers the serial kernels between a model's parallel ones.
constexpr std::chrono::microseconds kIdleSpin{1000};
constexpr std::chrono::microseconds kWaitSpin{50};
constexpr int64_t kLoadCheckNs = 5'000'000;
// On a crowded machine, how long a caller runs its region alone before it
// wakes sleeping workers: about what a wake-up costs there, so a short
// region never waits for a thread that shares its core with another
// process, and a long one loses at most this much.
constexpr int64_t kRecruitAfterNs = 100'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until `ready()` or for `time`; whether it became ready.
template <class F>
bool spin_until(F&& ready, std::chrono::microseconds time) {
  auto until = std::chrono::steady_clock::now() + time;
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

// A cgroup's CPU limit in CPUs (rounded up), or 0 for none: cgroup v2's
// "QUOTA PERIOD" in cpu.max ("max": none), v1's cfs_quota_us (-1: none)
// and cfs_period_us.
int quota_cpus(const std::string& dir) {
  long long quota = 0, period = 0;
  std::ifstream v2(dir + "/cpu.max");
  std::string q;
  if (v2 >> q >> period) {
    if (q == "max") return 0;
    quota = std::atoll(q.c_str());
  } else {
    std::ifstream qf(dir + "/cpu.cfs_quota_us"), pf(dir + "/cpu.cfs_period_us");
    if (!(qf >> quota) || !(pf >> period)) return 0;
  }
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

// The tightest CPU limit of the cgroups this process is in, and their
// ancestors (a parent's limit applies to its children), or 0 for none.
int cgroup_cpus() {
  int limit = 0;
  auto tighten = [&](int n) {
    if (n > 0 && (limit == 0 || n < limit)) limit = n;
  };
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  while (std::getline(self, line)) {
    // "ID:CONTROLLERS:PATH": v2 has ID 0 and no controllers; v1's cpu
    // controller is listed as "cpu" or "cpu,cpuacct".
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string root;
    if (controllers.empty()) {
      root = "/sys/fs/cgroup";
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      root = "/sys/fs/cgroup/" + controllers;
    } else {
      continue;
    }
    for (std::string p = path;; p = p.substr(0, p.rfind('/'))) {
      tighten(quota_cpus(root + p));
      if (p.empty() || p == "/") break;
    }
    tighten(quota_cpus(root));  // a namespaced cgroup mounted as the root
  }
  return limit;
}
}  // namespace

int available_cpus() {
  int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = std::max(1, CPU_COUNT(&set));
  int quota = cgroup_cpus();
  if (quota > 0) n = std::min(n, quota);
  return n;
}

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
  cpus_ = available_cpus();
  threads_ = threads > 0 ? std::min(threads, kMaxThreads) : cpus_;
  spin_ = threads_ <= cpus_;
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
    sleepers_ = 0;
    ++wakes_;
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
  int wanted = threads > 0 ? static_cast<int>(threads) : available_cpus();
  if (wanted == threads_) return;
  stop();
  start(wanted);
}

// The machine is crowded when its runnable threads, with this pool's
// sleeping workers counted as if they ran, outnumber the CPUs: then a
// spinning thread takes a core from one that has work (ours or another
// process's), so threads sleep at once.  /proc/loadavg's fourth field
// counts the runnable threads (this one included); it is read at most
// every kLoadCheckNs.
bool ThreadPool::should_spin() {
  if (!spin_) return false;
  int64_t t = now_ns();
  int64_t last = spin_checked_.load(std::memory_order_relaxed);
  if (t - last > kLoadCheckNs && spin_checked_.compare_exchange_strong(last, t)) {
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      double l1, l5, l15;
      int runnable = 0, total = 0;
      if (std::fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &runnable, &total) == 5) {
        bool crowded = runnable + sleepers_.load(std::memory_order_relaxed) > cpus_;
        crowded_ = crowded;
        crowded_streak_ = crowded ? crowded_streak_.load(std::memory_order_relaxed) + 1 : 0;
      }
      std::fclose(f);
    }
  }
  return !crowded_.load(std::memory_order_relaxed);
}

// Wakes the sleeping workers and counts them out of sleepers_ at once, so
// that should_spin never counts a worker both as runnable and as asleep.
void ThreadPool::wake_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sleepers_ == 0) return;
    sleepers_ = 0;
    ++wakes_;
  }
  wake_.notify_all();
}

// Claims chunks of region `generation` until none is left, runs each and
// counts it finished; the last one wakes a sleeping caller.  A claim
// succeeds only while claim_ still holds this generation, so the region's
// body and bounds are alive for every chunk claimed.
bool ThreadPool::run_chunks(uint64_t generation, int64_t recruit_at) {
  bool ran = false;
  uint64_t c = claim_.load(std::memory_order_acquire);
  while ((c >> 32) == (generation & 0xffffffffu) && (c & 0xffffu) < ((c >> 16) & 0xffffu)) {
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    ran = true;
    int64_t part = static_cast<int64_t>(c & 0xffffu), parts = static_cast<int64_t>((c >> 16) & 0xffffu);
    int64_t b = begin_ + count_ * part / parts, e = begin_ + count_ * (part + 1) / parts;
    std::exception_ptr error;
    {
      RegionScope region;
      try {
        (*body_)(b, e);
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = error;
    }
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == static_cast<uint32_t>(parts)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (caller_sleeping_) done_.notify_all();
    }
    if (recruit_at && now_ns() >= recruit_at) {
      recruit_at = 0;
      wake_workers();
    }
    c = claim_.load(std::memory_order_acquire);
  }
  return ran;
}

// `seen`: the last region's generation when the worker was started, so a
// worker started by a resize waits for the next region (found by
// bench/models.py building for 1, then 2 threads: a new worker took the
// last region's chunk, whose body was gone).  It is read by start(), which
// no region overlaps.
void ThreadPool::worker(int, uint64_t seen) {
  while (true) {
    auto woken = [&] { return stopping_ || generation_.load(std::memory_order_acquire) != seen; };
    if (!(should_spin() && spin_until(woken, kIdleSpin))) {
      std::unique_lock<std::mutex> lock(mutex_);
      // Counted out by the waker (a woken worker runs before it could count
      // itself out); a worker that wakes on its own (spuriously, to a new
      // region) counts itself out.
      ++sleepers_;
      uint64_t epoch = wakes_;
      wake_.wait(lock, woken);
      if (wakes_ == epoch) --sleepers_;
    }
    if (stopping_) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks(seen, 0);
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
  uint64_t generation;
  bool sleeping;
  // Workers that sleep rather than spin are woken only once the region has
  // run for kRecruitAfterNs, when the pool has more threads than CPUs or
  // the machine was crowded at the last two reads of its load (one read
  // may catch a passing thread): until then the caller claims chunks
  // alone (a spinning worker may still join at once).
  bool quiet = should_spin();
  bool lazy = !quiet && (!spin_ || crowded_streak_.load(std::memory_order_relaxed) >= 2);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    begin_ = begin;
    count_ = count;
    // At most 0xffff chunks (the claim's field; kMaxThreads x kChunksPerThread fits).
    parts_ = static_cast<uint32_t>(std::min<int64_t>({count, threads_ * kChunksPerThread, 0xffff}));
    finished_ = 0;
    error_ = nullptr;
    generation = generation_ + 1;
    claim_.store(((generation & 0xffffffffu) << 32) | (uint64_t{parts_.load()} << 16), std::memory_order_release);
    generation_.store(generation, std::memory_order_release);
    sleeping = sleepers_ > 0;
  }
  if (sleeping && !lazy) wake_workers();
  run_chunks(generation, sleeping && lazy ? now_ns() + kRecruitAfterNs : 0);
  auto done = [&] { return finished_.load(std::memory_order_acquire) == parts_.load(std::memory_order_relaxed); };
  // The caller spins even on a crowded machine (shortly): the threads it
  // waits for run its chunks, and a wake-up would cost more than the wait.
  if (!done() && !(spin_ && spin_until(done, quiet ? kIdleSpin : kWaitSpin))) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_sleeping_ = true;
    done_.wait(lock, done);
    caller_sleeping_ = false;
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = error_;
    body_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace loom::runtime

extern "C" int loom_parallel_for(int64_t begin, int64_t end, int (*body)(int64_t, int64_t, void*), void* closure) {
  struct Region {
    int (*body)(int64_t, int64_t, void*);
    void* closure;
    std::atomic<int> status{0};
  } region{body, closure};
  try {
    // One pointer captured: the std::function holds it in place, where three
    // references made it allocate at every parallel loop of every kernel.
    Region* r = &region;
    loom::runtime::ThreadPool::global().parallel_for(begin, end, [r](int64_t b, int64_t e) {
      int rc = r->body(b, e, r->closure);
      int expected = 0;
      if (rc != 0) r->status.compare_exchange_strong(expected, rc);
    });
  } catch (...) {
    return -1;
  }
  return region.status.load();
}
