// tests/cuda/emulated/cuda_runtime.cpp — the few CUDA runtime calls of the device communicators,
// emulated on the host so that their stream ordering runs (and runs under TSan) without a GPU: every
// stream is a worker thread that runs its operations in order, each after a random 0-300 us delay;
// events are exact (a wait captures the latest record at call time, as cudaStreamWaitEvent); "device"
// memory is host memory, kernels are host loops (rank_sum.h). A missing event wait shows up as a TSan
// data race between two stream threads. Leaves out everything else of CUDA (link errors say what).
#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "executor/cuda/rank_sum.h"

namespace {
// One lock and one condition for the whole emulated device: queues, event states, stream idleness. (The
// runtime is process-global state, so the emulation is too.)
std::mutex g_mu;
std::condition_variable g_cv;

void random_delay() {
  thread_local std::mt19937 rng(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::uniform_int_distribution<int> us(0, 300);
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
}
}  // namespace

// A stream: operations run in order on the stream's own thread.
struct CUstream_st {
  std::deque<std::function<void()>> q;
  bool busy = false, stop = false;
  std::thread worker;
  CUstream_st() {
    worker = std::thread([this] { run(); });
  }
  void run() {
    std::unique_lock<std::mutex> lk(g_mu);
    for (;;) {
      g_cv.wait(lk, [&] { return stop || !q.empty(); });
      if (q.empty()) return;
      auto op = std::move(q.front());
      q.pop_front();
      busy = true;
      lk.unlock();
      random_delay();
      op();
      lk.lock();
      busy = false;
      g_cv.notify_all();
    }
  }
  void push(std::function<void()> op) {
    std::lock_guard<std::mutex> lk(g_mu);
    q.push_back(std::move(op));
    g_cv.notify_all();
  }
  void sync() {
    std::unique_lock<std::mutex> lk(g_mu);
    g_cv.wait(lk, [&] { return q.empty() && !busy; });
  }
};

// Records are numbered 1, 2, ...; `done` holds the ones whose stream reached them. The state is shared with
// the records and waits still queued on streams, so that an event may be destroyed right after
// cudaStreamWaitEvent, as CUDA allows.
struct EventState {
  std::uint64_t recorded = 0;
  std::set<std::uint64_t> done;
};
struct CUevent_st {
  std::shared_ptr<EventState> st = std::make_shared<EventState>();
};

namespace {
CUstream_st* default_stream() {
  static CUstream_st* s = new CUstream_st();
  return s;
}
CUstream_st* stream_of(cudaStream_t s) { return s ? s : default_stream(); }
}  // namespace

extern "C" {
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
const char* cudaGetErrorString(cudaError_t) { return "emulated error"; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) {
  *e = new CUevent_st();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  // CUDA returns at once and releases the event after its last record completed; waiting is simpler.
  {
    std::unique_lock<std::mutex> lk(g_mu);
    const std::uint64_t last = e->st->recorded;
    g_cv.wait(lk, [&] { return last == 0 || e->st->done.count(last) > 0; });
  }
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::lock_guard<std::mutex> lk(g_mu);
  return e->st->recorded == 0 || e->st->done.count(e->st->recorded) > 0 ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  stream_of(s)->push([=] { fn(data); });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t s) {
  stream_of(s)->push([=] { std::memset(p, v, bytes); });
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::uint64_t g;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g = ++e->st->recorded;
  }
  stream_of(s)->push([st = e->st, g] {
    std::lock_guard<std::mutex> lk(g_mu);
    st->done.insert(g);
    g_cv.notify_all();
  });
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  std::uint64_t target;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    target = e->st->recorded;
  }
  if (target == 0) return cudaSuccess;
  stream_of(s)->push([st = e->st, target] {
    std::unique_lock<std::mutex> lk(g_mu);
    g_cv.wait(lk, [&] { return st->done.count(target) > 0; });
  });
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
  stream_of(s)->push([=] { std::memcpy(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) {
  *p = std::malloc(bytes ? bytes : 1);
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  stream_of(s)->push([p] { std::free(p); });
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  std::free(p);  // tests sync their streams first
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = std::malloc(bytes ? bytes : 1);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) {
  *s = new CUstream_st();
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  stream_of(s)->sync();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  s->sync();
  {
    std::lock_guard<std::mutex> lk(g_mu);
    s->stop = true;
    g_cv.notify_all();
  }
  s->worker.join();
  delete s;
  return cudaSuccess;
}
}  // extern "C"

namespace fsdpx::cuda {
namespace {
float from_bits(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
std::uint16_t to_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}
}  // namespace

void sum_in_rank_order(float* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t s) {
  if (count == 0) return;
  stream_of(s)->push([=] {
    for (std::int64_t i = 0; i < count; ++i) {
      float acc = static_cast<const float*>(in.ptr[0])[offset + i];
      for (int j = 1; j < in.n; ++j) acc += static_cast<const float*>(in.ptr[j])[offset + i];
      out[i] = acc;
    }
  });
}
void sum_in_rank_order(bf16* out, const RankInputs& in, std::int64_t offset, std::int64_t count, cudaStream_t s) {
  if (count == 0) return;
  stream_of(s)->push([=] {
    auto* o = reinterpret_cast<std::uint16_t*>(out);
    for (std::int64_t i = 0; i < count; ++i) {
      float acc = from_bits(static_cast<const std::uint16_t*>(in.ptr[0])[offset + i]);
      for (int j = 1; j < in.n; ++j) acc += from_bits(static_cast<const std::uint16_t*>(in.ptr[j])[offset + i]);
      o[i] = to_bits(acc);
    }
  });
}
}  // namespace fsdpx::cuda
