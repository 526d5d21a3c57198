// executor/cuda/nccl_family.cpp — polling non-blocking NCCL calls and the family's abort. Every NCCL call
// here holds the family's call mutex, only for the call itself, so an abort is never blocked for long.
#include "executor/cuda/nccl_family.h"

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

std::string nccl_error(ncclResult_t r, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  return last != nullptr && *last != '\0' ? fmt::format("{} ({})", ncclGetErrorString(r), last)
                                          : std::string(ncclGetErrorString(r));
}

void abort_locked(NcclHandle& h) {
  if (h.comm == nullptr) return;
  const ncclResult_t r = ncclCommAbort(h.comm);
  if (r != ncclSuccess) std::fprintf(stderr, "[fsdpx] ncclCommAbort(%s): %s\n", h.name.c_str(), ncclGetErrorString(r));
  h.comm = nullptr;
}

ncclConfig_t nonblocking_config(const std::string& name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  config.commName = name.c_str();  // names the communicator in NCCL's own logs
#else
  (void)name;
#endif
  return config;
}

WaitResult wait_ready(NcclHandle& h, ncclResult_t r, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (int polls = 0; r == ncclInProgress; ++polls) {
    if (Clock::now() > deadline) return {Ready::timeout, {}};
    if (polls >= 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    else if (polls > 0)
      std::this_thread::yield();
    std::lock_guard<std::mutex> lock(*h.mu);
    if (h.comm == nullptr) return {Ready::gone, {}};
    const ncclResult_t q = ncclCommGetAsyncError(h.comm, &r);
    if (q != ncclSuccess) r = q;
  }
  if (r == ncclSuccess) return {Ready::ok, {}};
  std::lock_guard<std::mutex> lock(*h.mu);
  return {Ready::error, nccl_error(r, h.comm)};
}

PollStatus poll_collective(NcclHandle& h, cudaEvent_t event, int device) {
  // No stray context on device 0 from the watchdog thread; no throw either (CUDA_CHECK throws, and this
  // runs on the watchdog's thread): a failure is the collective's.
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaEventQuery(event);
  if (e == cudaSuccess) return PollStatus::done();
  if (e != cudaErrorNotReady) return PollStatus::failed(fmt::format("{}: {}", cudaGetErrorName(e), cudaGetErrorString(e)));
  std::lock_guard<std::mutex> lock(*h.mu);
  if (h.comm == nullptr) return PollStatus::pending();  // finalized (flushed) or aborted: the event decides
  ncclResult_t async = ncclSuccess;
  const ncclResult_t q = ncclCommGetAsyncError(h.comm, &async);
  if (q != ncclSuccess) async = q;
  if (async != ncclSuccess && async != ncclInProgress) return PollStatus::failed(nccl_error(async, h.comm));
  return PollStatus::pending();
}

NcclFamily::NcclFamily(int world_rank, NcclOptions options) : world_rank_(world_rank), options_(std::move(options)) {
  if (options_.collective_timeout_s > 0)
    watchdog_ = std::make_unique<Watchdog>(WatchdogOptions{options_.collective_timeout_s, options_.poll_interval_s},
                                           [this](const std::string& msg) { abort(msg); });
}

std::shared_ptr<NcclHandle> NcclFamily::make_handle(const std::string& name) const {
  auto h = std::make_shared<NcclHandle>();
  h->mu = calls_mu_;
  h->name = name;
  return h;
}

void NcclFamily::add(const std::shared_ptr<NcclHandle>& h) {
  bool dead = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    members_.push_back(h);
    dead = aborted_;
  }
  if (dead) {
    std::lock_guard<std::mutex> calls(*calls_mu_);
    abort_locked(*h);
  }
}

void NcclFamily::abort(const std::string& msg) {
  std::vector<std::weak_ptr<NcclHandle>> members;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    aborted_ = true;
    message_ = msg;
    members = members_;
  }
  std::fprintf(stderr, "[fsdpx] %s\n", msg.c_str());
  {
    std::lock_guard<std::mutex> calls(*calls_mu_);
    for (auto& w : members)
      if (auto h = w.lock()) abort_locked(*h);
  }
  if (options_.on_abort) options_.on_abort(msg);
}

bool NcclFamily::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

std::string NcclFamily::message() const {
  std::lock_guard<std::mutex> lock(mu_);
  return message_;
}

}  // namespace fsdpx::cuda
