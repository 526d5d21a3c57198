// tests/cuda/emulated/cuda_streams.cpp — streams, events and device queries of the emulated CUDA runtime.
// Every stream is a worker thread that runs its operations in order, each after a random 0-300 us delay;
// events are exact (a record marks a point of its stream; a wait or query refers to the latest record at
// call time, as cudaStreamWaitEvent and cudaEventQuery do). Each stream and each event has its own lock, so
// the only happens-before edges ThreadSanitizer sees between two streams are the program's event waits
// and host synchronisations: a missing event wait is a data race (or a wrong result). Every stream is
// non-blocking (the backend creates no other kind): the legacy default stream syncs with none of them.
// Leaves out priorities, graphs, callbacks' error states and more than one device (all indices are 0).
#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "tests/cuda/emulated/emu_stream.h"

namespace {

void random_delay() {
  thread_local std::mt19937 rng(unsigned(std::hash<std::thread::id>{}(std::this_thread::get_id())));
  std::uniform_int_distribution<int> us(0, 300);
  std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
}

// The queue and thread of one stream; shared with the device's registry so that a destroyed stream
// finishes its queued work (as cudaStreamDestroy allows) while cudaDeviceSynchronize can still wait for it.
struct StreamCore {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> q;
  bool busy = false, stop = false;

  void push(std::function<void()> op) {
    std::lock_guard<std::mutex> lk(mu);
    q.push_back(std::move(op));
    cv.notify_all();
  }
  void sync() {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return q.empty() && !busy; });
  }
  void run() {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      cv.wait(lk, [&] { return stop || !q.empty(); });
      if (q.empty()) return;
      auto op = std::move(q.front());
      q.pop_front();
      busy = true;
      lk.unlock();
      random_delay();
      op();
      lk.lock();
      busy = false;
      cv.notify_all();
    }
  }
};

std::mutex g_registry_mu;
std::set<std::shared_ptr<StreamCore>>& registry() {
  static auto* r = new std::set<std::shared_ptr<StreamCore>>();
  return *r;
}

std::shared_ptr<StreamCore> start_stream() {
  auto core = std::make_shared<StreamCore>();
  {
    std::lock_guard<std::mutex> lk(g_registry_mu);
    registry().insert(core);
  }
  std::thread([core] {
    core->run();
    std::lock_guard<std::mutex> lk(g_registry_mu);
    registry().erase(core);
  }).detach();
  return core;
}

}  // namespace

struct CUstream_st {
  std::shared_ptr<StreamCore> core = start_stream();
};

// Records are numbered 1, 2, ...; `done` holds those whose stream reached them, with the time it did. The
// state is shared with the records and waits still queued, so an event may be destroyed right after
// cudaEventRecord or cudaStreamWaitEvent, as CUDA allows.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t recorded = 0;
  std::set<std::uint64_t> done;
  std::chrono::steady_clock::time_point last_done_at;
  bool reached(std::uint64_t g) const { return g == 0 || done.count(g) > 0; }
};
struct CUevent_st {
  std::shared_ptr<EventState> st = std::make_shared<EventState>();
  bool timing = true;
};

namespace fsdpx::cuda::emu {
namespace {
StreamCore& core_of(cudaStream_t s) {
  static CUstream_st* legacy = new CUstream_st();  // the legacy default stream, never destroyed
  return *(s ? s : legacy)->core;
}
}  // namespace

void enqueue(cudaStream_t stream, std::function<void()> op) { core_of(stream).push(std::move(op)); }

void synchronize_stream(cudaStream_t stream) { core_of(stream).sync(); }

void synchronize_device() {
  core_of(nullptr);  // the legacy stream exists
  std::vector<std::shared_ptr<StreamCore>> all;
  {
    std::lock_guard<std::mutex> lk(g_registry_mu);
    all.assign(registry().begin(), registry().end());
  }
  for (auto& c : all) c->sync();
}
}  // namespace fsdpx::cuda::emu

using fsdpx::cuda::emu::enqueue;

extern "C" {
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "emulated CUDA device (host threads)");
  p->multiProcessorCount = 2;
  p->major = 9, p->minor = 0;
  p->totalGlobalMem = std::size_t(8) << 30;
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
const char* cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
const char* cudaGetErrorString(cudaError_t) { return "emulated error"; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (flags != cudaStreamNonBlocking) {
    std::fprintf(stderr, "emulated CUDA: only non-blocking streams are emulated\n");
    std::abort();
  }
  *s = new CUstream_st();
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  fsdpx::cuda::emu::synchronize_stream(s);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  {
    std::lock_guard<std::mutex> lk(s->core->mu);
    s->core->stop = true;  // the worker drains its queue, then leaves the registry
    s->core->cv.notify_all();
  }
  delete s;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  fsdpx::cuda::emu::synchronize_device();
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  enqueue(s, [=] { fn(data); });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  *e = new CUevent_st();
  (*e)->timing = (flags & cudaEventDisableTiming) == 0;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;  // queued records and waits keep the state alive
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  std::uint64_t g;
  {
    std::lock_guard<std::mutex> lk(e->st->mu);
    g = ++e->st->recorded;
  }
  enqueue(s, [st = e->st, g] {
    std::lock_guard<std::mutex> lk(st->mu);
    st->done.insert(g);
    st->last_done_at = std::chrono::steady_clock::now();
    st->cv.notify_all();
  });
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  std::uint64_t target;
  {
    std::lock_guard<std::mutex> lk(e->st->mu);
    target = e->st->recorded;
  }
  if (target == 0) return cudaSuccess;  // never recorded: no dependency, as CUDA
  enqueue(s, [st = e->st, target] {
    std::unique_lock<std::mutex> lk(st->mu);
    st->cv.wait(lk, [&] { return st->reached(target); });
  });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::lock_guard<std::mutex> lk(e->st->mu);
  return e->st->reached(e->st->recorded) ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::unique_lock<std::mutex> lk(e->st->mu);
  const std::uint64_t target = e->st->recorded;
  e->st->cv.wait(lk, [&] { return e->st->reached(target); });
  return cudaSuccess;
}
// The host time between the two events' latest records reaching their streams.
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (!start->timing || !stop->timing) return cudaErrorInvalidResourceHandle;
  if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(stop) != cudaSuccess) return cudaErrorNotReady;
  std::lock_guard<std::mutex> a(start->st->mu);
  std::lock_guard<std::mutex> b(stop->st->mu);
  *ms = std::chrono::duration<float, std::milli>(stop->st->last_done_at - start->st->last_done_at).count();
  return cudaSuccess;
}
}  // extern "C"
