// executor/cpu/kernel_pool.h — the threads one rank's CPU kernels share (how many: thread_budget.h).
// Workers claim chunks of a loop from an atomic counter and sleep on a condition variable between loops
// (no spinning); the calling rank thread waits only for chunks in progress, never for a worker to wake,
// so a worker kept off its core by another job delays a loop by the chunk it holds, if any. Who runs an
// item never changes its result. Leaves out nested loops (a loop inside an item runs serially) and pinning.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fsdpx::cpu {

class KernelPool {
 public:
  explicit KernelPool(int threads);  // `threads` − 1 workers besides the caller
  ~KernelPool();
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // Runs fn(i) for i in [0, count) on the caller and the workers; returns when every call has returned.
  void run(std::int64_t count, const std::function<void(std::int64_t)>& fn);

 private:
  struct Loop;
  void work();
  static void run_chunks(Loop& loop);

  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::shared_ptr<Loop> loop_;  // the current loop, or null
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// The pool of the calling thread's rank; null (the default) runs loops serially. The runtime sets it on
// every rank thread it starts; tests set it to compare thread counts.
void set_kernel_pool(KernelPool* pool);
KernelPool* kernel_pool();

// Elements a loop must touch before it is split across the rank's threads: a fork and join costs
// microseconds on idle cores but can cost a scheduler slice (milliseconds) when another job holds one.
inline constexpr std::int64_t kMinParallelElems = std::int64_t(1) << 16;

// fn(i) for i in [0, count): on the calling rank's pool when `elems` (the work, in elements touched)
// reaches kMinParallelElems and there is a pool, else in order on this thread.
template <class F>
void parallel_for(std::int64_t count, std::int64_t elems, F&& fn) {
  KernelPool* pool = kernel_pool();
  if (pool && pool->threads() > 1 && count > 1 && elems >= kMinParallelElems) {
    pool->run(count, std::function<void(std::int64_t)>(std::ref(fn)));
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) fn(i);
}

// fn(begin, end) over [0, count) in blocks of `block` (the same blocks for any thread count).
template <class F>
void parallel_for_blocks(std::int64_t count, std::int64_t block, F&& fn) {
  parallel_for((count + block - 1) / block, count,
               [&](std::int64_t k) { fn(k * block, k * block + block < count ? k * block + block : count); });
}

}  // namespace fsdpx::cpu
