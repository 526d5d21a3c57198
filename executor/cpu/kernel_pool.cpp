// executor/cpu/kernel_pool.cpp — the rank's kernel threads (see kernel_pool.h). A loop is shared state
// (counter of claimed chunks, of finished items) that workers hold by shared_ptr, so one that wakes
// after the loop ended finds nothing left to claim and goes back to sleep.
#include "executor/cpu/kernel_pool.h"

#include <algorithm>

namespace fsdpx::cpu {
namespace {

thread_local KernelPool* t_pool = nullptr;

constexpr std::int64_t kChunksPerThread = 8;  // small enough chunks that a late thread can still help

}  // namespace

struct KernelPool::Loop {
  const std::function<void(std::int64_t)>* fn = nullptr;
  std::int64_t count = 0, grain = 1;
  std::atomic<std::int64_t> next{0};      // first item of the next unclaimed chunk
  std::atomic<std::int64_t> finished{0};  // items whose call returned
  KernelPool* pool = nullptr;
};

KernelPool::KernelPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

KernelPool::~KernelPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void KernelPool::run_chunks(Loop& loop) {
  for (;;) {
    const std::int64_t begin = loop.next.fetch_add(loop.grain);
    if (begin >= loop.count) return;
    const std::int64_t end = std::min(loop.count, begin + loop.grain);
    for (std::int64_t i = begin; i < end; ++i) (*loop.fn)(i);
    if (loop.finished.fetch_add(end - begin) + (end - begin) == loop.count) {
      std::lock_guard<std::mutex> lock(loop.pool->mu_);  // the caller checks `finished` under this lock
      loop.pool->finished_.notify_all();
    }
  }
}

void KernelPool::work() {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (loop_ && generation_ != seen); });
    if (stop_) return;
    seen = generation_;
    const std::shared_ptr<Loop> loop = loop_;
    lock.unlock();
    run_chunks(*loop);
    lock.lock();
  }
}

void KernelPool::run(std::int64_t count, const std::function<void(std::int64_t)>& fn) {
  auto loop = std::make_shared<Loop>();
  loop->fn = &fn;
  loop->count = count;
  loop->grain = std::max<std::int64_t>(1, count / (kChunksPerThread * threads()));
  loop->pool = this;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loop_ = loop;
    ++generation_;
  }
  wake_.notify_all();
  run_chunks(*loop);
  std::unique_lock<std::mutex> lock(mu_);
  finished_.wait(lock, [&] { return loop->finished.load() == count; });
  loop_.reset();
}

void set_kernel_pool(KernelPool* pool) { t_pool = pool; }

KernelPool* kernel_pool() { return t_pool; }

}  // namespace fsdpx::cpu
