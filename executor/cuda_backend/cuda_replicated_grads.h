// executor/cuda_backend/cuda_replicated_grads.h — the device's ops for the sum over tp of the replicated
// tensors' partial gradients under sequence parallelism (executor/model/replicated_grads.h): fp32 device
// buffers, copies and zeroing on the model's stream, the tp all-reduce of its CudaModelComm. Leaves out
// everything the shared sum decides (what is set aside, summed and added back).
#pragma once

#include <cstdint>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/cuda_model_comm.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/model/replicated_grads.h"

namespace fsdpx::cuda {

struct DeviceGradOps {
  using Elem = float;
  using Buf = DeviceBuffer<float>;
  struct Ctx {
    CudaModelComm* comm;
    cudaStream_t stream;
  };
  static void resize(Buf& b, std::int64_t n) { b = DeviceBuffer<float>(n); }
  static std::int64_t bytes(const Buf& b) { return b.bytes(); }
  static float* data(Buf& b) { return b.get(); }
  static void copy(const Ctx& c, float* dst, const float* src, std::int64_t n) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, c.stream));
  }
  static void zero(const Ctx& c, float* p, std::int64_t n) {
    CUDA_CHECK(cudaMemsetAsync(p, 0, std::size_t(n) * sizeof(float), c.stream));
  }
  static void add(const Ctx& c, float* dst, const float* src, std::int64_t n) {
    accumulate_check_finite(dst, src, n, nullptr, c.stream);
  }
  static void sum_over_tp(const Ctx& c, float* p, std::int64_t n) { c.comm->all_reduce_f32(ModelAxis::tp, p, n); }
};

using DeviceReplicatedGradSum = ReplicatedGradSum<DeviceGradOps>;

}  // namespace fsdpx::cuda
