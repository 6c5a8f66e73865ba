// The thread pool for parallel loops (docs/runtime.md, "Thread pool").
//
// parallel_for splits [begin, end) into contiguous chunks, a few per
// thread, which the caller and the workers claim one at a time (so a
// thread that shares its core with another process takes fewer); the
// caller returns when all are done, rethrowing the first exception a chunk
// threw.  A parallel_for inside a parallel region, or while the pool is
// busy with another caller's loop, runs serially on the calling thread:
// nested or concurrent loops never oversubscribe the cores.  Workers spin
// briefly for the next region, unless the machine is crowded: then they
// sleep, and a caller wakes them only once its region has run for about a
// wake-up's cost (a short region runs on the caller alone).
//
// Threads: LOOM_NUM_THREADS if set (for the whole process), else what the
// target asks for (set_num_threads), else one per CPU this process may run
// on (available_cpus); at most kMaxThreads.  If the system refuses a
// thread, the pool runs with those it has.  The global pool's threads are
// joined at exit; a parallel_for after that runs serially.
#ifndef LOOM_RUNTIME_THREAD_POOL_H_
#define LOOM_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace loom::runtime {

// The most threads a pool has (the bound of every num-threads option).
constexpr int kMaxThreads = 1024;

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads <= 0: available_cpus()
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  static ThreadPool& global();

  int num_threads() const { return threads_; }
  // Resizes the pool (the target's num-threads); ignored for the global
  // pool when LOOM_NUM_THREADS is set, or after shutdown.  0: one per CPU;
  // more than kMaxThreads is an Error.
  void set_num_threads(int64_t threads);
  // Joins the threads; later loops run serially on their caller.
  void shutdown();

  void parallel_for(int64_t begin, int64_t end, const std::function<void(int64_t, int64_t)>& body);

  // True on a thread that is running a chunk of a parallel_for.
  static bool in_parallel_region();

 private:
  void start(int threads);
  void stop();
  void worker(int index, uint64_t seen);

  int threads_ = 1;
  bool environment_fixed_ = false;
  bool shut_down_ = false;
  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the caller whose loop the pool runs

  // Whether threads spin before they sleep: not with more threads than
  // CPUs, nor while the machine has more runnable threads than CPUs
  // (sampled from /proc/loadavg every few milliseconds).
  bool should_spin();
  void wake_workers();
  // Claims and runs chunks of a region; whether it ran any.  recruit_at
  // (steady-clock ns, 0: never): when to wake the sleeping workers, checked
  // after each chunk.
  bool run_chunks(uint64_t generation, int64_t recruit_at);

  // A region: generation_ counts regions; claim_ holds the generation in
  // its high 32 bits, the region's number of chunks in the next 16 and the
  // next unclaimed chunk in the low 16, so that a worker that wakes late
  // can claim nothing from a region that ended.  The count is in the claim
  // itself: checked against parts_, which the next region's caller sets
  // before it replaces claim_, a worker holding the last region's spent
  // claim could take one more chunk (of the new region's body: run twice,
  // and counted once too many, after which a caller waited forever).
  bool spin_ = false;
  int cpus_ = 1;
  std::atomic<int64_t> spin_checked_{0};  // when should_spin last read the load (ns)
  std::atomic<bool> crowded_{false};
  std::atomic<int> crowded_streak_{0};  // reads in a row that found the machine crowded
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> sleepers_{0};  // workers waiting on wake_ and not yet woken (changed under mutex_)
  uint64_t wakes_ = 0;            // how many times wake_workers (or stop) counted them out; under mutex_
  bool caller_sleeping_ = false;  // under mutex_
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t begin_ = 0, count_ = 0;
  std::atomic<uint32_t> parts_{0};  // the caller's copy of the claim's count
  std::atomic<uint32_t> finished_{0};
  std::exception_ptr error_;

  friend ThreadPool& make_global_pool();
};

// LOOM_NUM_THREADS as a positive number; nullopt when unset; Error when set
// to anything else.
std::optional<int> threads_from_environment();

// The CPUs this process may run on: its affinity mask (sched_getaffinity),
// lowered to the cgroup's CPU quota (cpu.max, or cfs_quota_us /
// cfs_period_us under cgroup v1) rounded up; at least 1.
int available_cpus();

}  // namespace loom::runtime

// For generated code: runs body(chunk_begin, chunk_end, closure) in
// parallel over [begin, end).  Returns 0, or the first non-zero value a body
// returned (an exception becomes -1).
extern "C" int loom_parallel_for(int64_t begin, int64_t end, int (*body)(int64_t, int64_t, void*), void* closure);

#endif  // LOOM_RUNTIME_THREAD_POOL_H_
