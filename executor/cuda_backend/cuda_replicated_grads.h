// executor/cuda_backend/cuda_replicated_grads.h — under sequence parallelism each tp rank sees its token
// shard, so the gradients of the tensors every tp rank holds whole (norm scales: TensorSlot::tp_replicated)
// are partial: one module's part of a micro-batch is summed over tp in one fp32 all-reduce (Megatron-LM,
// megatron/core/distributed/finalize_model_grads.py, _allreduce_layernorm_grads), the device twin of the
// CPU Transformer's sum_replicated_grads (executor/model/transformer.cpp). Before the module's backward
// the accumulated gradients are set aside and zeroed; after it the sum is added back. Leaves out
// bucketing the sums of several modules into one collective.
#pragma once

#include <algorithm>
#include <cstdint>

#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/cuda_model_comm.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/cuda_backend/grad_kernels.h"
#include "executor/runtime/param_layout.h"

namespace fsdpx::cuda {

class ReplicatedGradSum {
 public:
  // Room for the largest module's replicated tensors (none: nothing to do).
  void allocate(const ParamLayout& layout) {
    std::int64_t most = 0;
    for (const ModuleLayout& m : layout.modules) most = std::max(most, elems(m));
    keep_ = DeviceBuffer<float>(most), part_ = DeviceBuffer<float>(most);
  }
  std::int64_t bytes() const { return keep_.bytes() + part_.bytes(); }

  // grads: the module's fp32 gradient buffer. Sets the replicated tensors' gradients aside and zeroes them.
  void before(const ModuleLayout& m, float* grads, cudaStream_t stream) {
    for_each(m, [&](const TensorSlot& t, std::int64_t at) {
      copy(keep_.get() + at, grads + t.offset, t.numel(), stream);
      CUDA_CHECK(cudaMemsetAsync(grads + t.offset, 0, std::size_t(t.numel()) * sizeof(float), stream));
    });
  }
  // Sums the module's new partial gradients over tp and adds back what was set aside.
  void after(const ModuleLayout& m, float* grads, CudaModelComm& comm, cudaStream_t stream) {
    const std::int64_t n = elems(m);
    if (n == 0) return;
    for_each(m, [&](const TensorSlot& t, std::int64_t at) { copy(part_.get() + at, grads + t.offset, t.numel(), stream); });
    comm.all_reduce_f32(ModelAxis::tp, part_.get(), n);
    for_each(m, [&](const TensorSlot& t, std::int64_t at) { copy(grads + t.offset, part_.get() + at, t.numel(), stream); });
    for_each(m, [&](const TensorSlot& t, std::int64_t at) {
      accumulate_check_finite(grads + t.offset, keep_.get() + at, t.numel(), nullptr, stream);
    });
  }

 private:
  static std::int64_t elems(const ModuleLayout& m) {
    std::int64_t n = 0;
    for (const TensorSlot& t : m.tensors) n += t.tp_replicated ? t.numel() : 0;
    return n;
  }
  // f(slot, offset of the slot in the packed buffers) over the replicated tensors in layout order.
  template <class F>
  static void for_each(const ModuleLayout& m, F f) {
    std::int64_t at = 0;
    for (const TensorSlot& t : m.tensors)
      if (t.tp_replicated) f(t, at), at += t.numel();
  }
  static void copy(float* dst, const float* src, std::int64_t n, cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, std::size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  }

  DeviceBuffer<float> keep_, part_;  // [replicated elements of the largest module]
};

}  // namespace fsdpx::cuda
