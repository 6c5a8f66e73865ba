// The thread pool: coverage, parallelism, nesting, errors, the C entry.
#include "loom/runtime/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <chrono>

#include "loom/support/error.h"
#include "test_util.h"

namespace loom::runtime {
using test::error_of;

TEST(ThreadPool, EveryIndexExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(0, n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
  pool.parallel_for(5, 5, [](int64_t, int64_t) { FAIL() << "empty range ran"; });
}

// Short regions of few chunks followed by regions of more: a worker that
// finished the last chunk of a small region and reads the claim again
// must not take a chunk of the next one from the old claim (the chunk ran
// twice and was counted twice, and a later caller waited forever: seen in
// bench/ort.py at two threads after about ten thousand regions).
TEST(ThreadPool, ASpentClaimTakesNoChunkOfTheNextRegion) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(64);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int regions = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    int64_t small = 2 + regions % 3;
    pool.parallel_for(0, small, [](int64_t, int64_t) {});
    for (auto& h : hits) h = 0;
    pool.parallel_for(0, 64, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < 64; ++i) ASSERT_EQ(hits[i].load(), 1) << "region " << regions << " index " << i;
    ++regions;
  }
  EXPECT_GT(regions, 100);
}

TEST(ThreadPool, ChunksRunOnSeveralThreads) {
  // Chunks of 5 ms: the workers join a long region whether they spin or
  // sleep (on a crowded machine they are woken once the region has run
  // for 100 us; no chunk waits for another, as in generated code).
  ThreadPool pool(2);
  std::mutex m;
  std::set<std::thread::id> ids;
  pool.parallel_for(0, 8, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_FALSE(ThreadPool::in_parallel_region());
}

TEST(ThreadPool, ACrowdedPoolWakesItsWorkersOnlyForLongRegions) {
  // More threads than CPUs: the workers sleep, and a caller wakes them
  // only once its region has run for 100 us.  A region of about 30 us
  // (long enough for a woken worker to join) runs on the caller alone
  // (allowed twice in 20 for a caller preempted mid-region); a region of
  // 2 ms chunks gets help.
  ThreadPool pool(available_cpus() + 1);
  auto caller = std::this_thread::get_id();
  int alone = 0;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> foreign{0};
    pool.parallel_for(0, 64, [&](int64_t, int64_t) {
      if (std::this_thread::get_id() != caller) foreign++;
      auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(500);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
    alone += foreign.load() == 0;
  }
  EXPECT_GE(alone, 18);
  std::atomic<int> foreign{0};
  pool.parallel_for(0, 16, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) foreign++;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_GE(foreign.load(), 1);
}

TEST(ThreadPool, NestedLoopsRunSeriallyOnTheCallingThread) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  std::atomic<int> foreign{0};
  pool.parallel_for(0, 2, [&](int64_t, int64_t) {
    EXPECT_TRUE(ThreadPool::in_parallel_region());
    auto outer = std::this_thread::get_id();
    pool.parallel_for(0, 10, [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() != outer) foreign++;
      total += static_cast<int>(e - b);
    });
  });
  EXPECT_EQ(total.load(), 20);
  EXPECT_EQ(foreign.load(), 0);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(3);
  EXPECT_EQ(error_of([&] {
              pool.parallel_for(0, 9, [](int64_t b, int64_t) {
                if (b >= 3) throw Error("chunk failed");
              });
            }),
            "chunk failed");
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(0, 9, [&](int64_t b, int64_t e) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n.load(), 9);
}

TEST(ThreadPool, ResizeAndCEntryPoint) {
  ThreadPool& pool = ThreadPool::global();
  pool.set_num_threads(2);
  EXPECT_EQ(pool.num_threads(), std::getenv("LOOM_NUM_THREADS") ? pool.num_threads() : 2);
  struct Closure {
    std::atomic<int64_t> sum{0};
  } closure;
  auto body = [](int64_t b, int64_t e, void* c) {
    for (int64_t i = b; i < e; ++i) static_cast<Closure*>(c)->sum += i;
    return 0;
  };
  EXPECT_EQ(loom_parallel_for(0, 100, body, &closure), 0);
  EXPECT_EQ(closure.sum.load(), 4950);
  auto failing = [](int64_t b, int64_t, void*) { return b == 0 ? 7 : 0; };
  EXPECT_EQ(loom_parallel_for(0, 10, failing, nullptr), 7);
}

TEST(ThreadPool, WorkersStartedByAResizeWaitForTheNextRegion) {
  // Workers started after regions ran must not take the last region's
  // chunk again (they did: its body was gone, and the process crashed).
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 20; ++round) {
    pool.parallel_for(0, 10, [&](int64_t b, int64_t e) { sum += e - b; });
    pool.set_num_threads(round % 2 ? 2 : 3);  // restarts the workers
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // time for a stale worker to run
  pool.parallel_for(0, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 210);
}

TEST(ThreadPool, AThreadSlowedDownLeavesItsChunksToTheOthers) {
  // A worker that shares its core with another process runs slowly: the
  // caller claims the chunks it has not started (a static split made the
  // caller wait for the slow thread's whole share).
  ThreadPool pool(2);
  auto caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0}, by_worker{0};
  pool.parallel_for(0, 800, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) {
      by_caller += static_cast<int>(e - b);
    } else {
      by_worker += static_cast<int>(e - b);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  EXPECT_EQ(by_caller + by_worker, 800);
  EXPECT_LE(by_worker.load(), 200) << "the slow worker ran more than two of its chunks";
  EXPECT_GE(by_caller.load(), 600);
}

TEST(ThreadPool, DefaultThreadsFollowTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  // At most the mask (a cgroup CPU quota may lower it further).
  EXPECT_GE(available_cpus(), 1);
  EXPECT_LE(available_cpus(), CPU_COUNT(&saved));
  // Pinned to one CPU, the process may use one: a default pool has one thread.
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(available_cpus(), 1);
  EXPECT_EQ(ThreadPool(0).num_threads(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

TEST(ThreadPool, EnvironmentOverride) {
  ::setenv("LOOM_NUM_THREADS", "3", 1);
  EXPECT_EQ(threads_from_environment(), 3);
  ::setenv("LOOM_NUM_THREADS", "lots", 1);
  EXPECT_EQ(error_of([] { threads_from_environment(); }),
            "LOOM_NUM_THREADS='lots' is not a number of threads from 1 to 1024");
  ::setenv("LOOM_NUM_THREADS", "0", 1);
  EXPECT_EQ(error_of([] { threads_from_environment(); }),
            "LOOM_NUM_THREADS='0' is not a number of threads from 1 to 1024");
  ::unsetenv("LOOM_NUM_THREADS");
  EXPECT_FALSE(threads_from_environment());
}

}  // namespace loom::runtime
