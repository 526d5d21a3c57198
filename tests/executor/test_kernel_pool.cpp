// tests/executor/test_kernel_pool.cpp — the rank's kernel threads: every item of a loop runs exactly
// once for any count and thread count, loops follow each other without losing or repeating items, work
// is shared when items are slow, small loops and loops without a pool stay on the calling thread.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "executor/cpu/kernel_pool.h"

namespace fsdpx {
namespace {

TEST_CASE("every item runs exactly once, loop after loop") {
  for (int threads : {1, 2, 3, 4}) {
    CAPTURE(threads);
    cpu::KernelPool pool(threads);
    CHECK(pool.threads() == threads);
    for (std::int64_t count : {0, 1, 2, 7, 64, 1000, 4097}) {
      CAPTURE(count);
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
      for (int rep = 0; rep < 20; ++rep)
        pool.run(count, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
      int wrong = 0;
      for (const auto& h : hits) wrong += h.load() != 20;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("slow items are shared among the threads") {
  cpu::KernelPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  pool.run(12, [&](std::int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mu);
    ran_on.insert(std::this_thread::get_id());
  });
  CHECK(ran_on.size() >= 2);
}

TEST_CASE("parallel_for uses the calling thread's pool only for loops worth splitting") {
  cpu::KernelPool pool(2);
  const auto caller = std::this_thread::get_id();
  auto threads_used = [&](std::int64_t count, std::int64_t elems) {
    std::mutex mu;
    std::set<std::thread::id> ids;
    cpu::parallel_for(count, elems, [&](std::int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    return ids;
  };
  cpu::set_kernel_pool(nullptr);
  CHECK(threads_used(40, cpu::kMinParallelElems) == std::set<std::thread::id>{caller});
  cpu::set_kernel_pool(&pool);
  CHECK(threads_used(40, cpu::kMinParallelElems - 1) == std::set<std::thread::id>{caller});
  CHECK(threads_used(40, cpu::kMinParallelElems).size() == 2);  // 200 ms of items: the worker wakes
  cpu::set_kernel_pool(nullptr);
  std::vector<int> order;
  cpu::parallel_for_blocks(10, 4, [&](std::int64_t lo, std::int64_t hi) { order.push_back(int(hi - lo)); });
  CHECK(order == std::vector<int>{4, 4, 2});
}

}  // namespace
}  // namespace fsdpx
