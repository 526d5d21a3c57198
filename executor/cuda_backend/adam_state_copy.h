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

// Enqueues the three host-to-device copies of n elements (the caller checked the sizes).
template <class HostState>
void enqueue_adam_upload(const HostState& s, std::size_t n, const DeviceAdamState& d, cudaStream_t stream) {
  CUDA_CHECK(cudaMemcpyAsync(d.master, s.params.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(d.exp_avg, s.exp_avg.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaMemcpyAsync(d.exp_avg_sq, s.exp_avg_sq.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
}

}  // namespace fsdpx::cuda
