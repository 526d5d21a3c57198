// executor/cuda_backend/adam_state_copy.h — the AdamW state of n fp32 elements (master, exp_avg,
// exp_avg_sq) copied between the device and a host state with `params`, `exp_avg` and `exp_avg_sq`
// vectors (UnitShardState, AdapterState), in stream order, for checkpoints. The copies are enqueued only:
// the caller synchronises the stream before the host vectors are read or go away.
#pragma once

#include <cstddef>

#include "executor/cuda/cuda_check.h"

namespace fsdpx::cuda {

struct DeviceAdamState {
  float* master = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
};

// Resizes the host vectors to n and enqueues the three device-to-host copies.
template <class HostState>
void enqueue_adam_download(const DeviceAdamState& d, std::size_t n, HostState& s, cudaStream_t stream) {
  s.params.resize(n), s.exp_avg.resize(n), s.exp_avg_sq.resize(n);
  CUDA_CHECK(cudaMemcpyAsync(s.params.data(), d.master, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(s.exp_avg.data(), d.exp_avg, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(s.exp_avg_sq.data(), d.exp_avg_sq, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
}

// The host state fits n elements: params has n, each moment n or none (zero moments, a fresh start).
template <class HostState>
bool adam_state_fits(const HostState& s, std::size_t n) {
  const auto moment_ok = [n](const auto& v) { return v.size() == n || v.empty(); };
  return s.params.size() == n && moment_ok(s.exp_avg) && moment_ok(s.exp_avg_sq);
}

// Enqueues the host-to-device copies of n elements (the caller checked adam_state_fits); an empty
// moment is zeroed on the device by cudaMemsetAsync instead of copying n host zeros.
template <class HostState>
void enqueue_adam_upload(const HostState& s, std::size_t n, const DeviceAdamState& d, cudaStream_t stream) {
  const std::size_t bytes = n * sizeof(float);
  CUDA_CHECK(cudaMemcpyAsync(d.master, s.params.data(), bytes, cudaMemcpyHostToDevice, stream));
  if (s.exp_avg.empty()) CUDA_CHECK(cudaMemsetAsync(d.exp_avg, 0, bytes, stream));
  else CUDA_CHECK(cudaMemcpyAsync(d.exp_avg, s.exp_avg.data(), bytes, cudaMemcpyHostToDevice, stream));
  if (s.exp_avg_sq.empty()) CUDA_CHECK(cudaMemsetAsync(d.exp_avg_sq, 0, bytes, stream));
  else CUDA_CHECK(cudaMemcpyAsync(d.exp_avg_sq, s.exp_avg_sq.data(), bytes, cudaMemcpyHostToDevice, stream));
}

}  // namespace fsdpx::cuda
