// executor/cuda_backend/cuda_adapters.h — one rank's LoRA adapters on the GPU (executor/model/lora_layout.h), the
// device twin of CpuRankBackend's AdapterState and adapter gradient: the whole flat buffer on every rank
// (fp32 master, Adam moments and gradient) plus the 16-bit copy (T = bf16 or f16) the model reads, written
// by upload and by AdamW. Counted in the memory tracker as params (4 + 2 bytes each), grads (4) and optimizer (8). Leaves
// out sharding the adapters over dp_shard (FSDP2 would; docs/lora.md).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "executor/cuda/adamw.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/lora_layout.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/train_state.h"

namespace fsdpx::cuda {

template <class T>
class CudaAdaptersT {
 public:
  CudaAdaptersT(const LoraLayout& layout, MemoryTracker* mem);
  std::int64_t numel() const { return numel_; }
  // Host <-> device (synchronous on `stream`): master and moments; the T copy follows the master.
  void upload(const AdapterState& s, cudaStream_t stream);
  AdapterState download(cudaStream_t stream) const;
  const T* params16() const { return params16_.get(); }
  float* grads() { return grads_.get(); }
  // The optimizer step of the adapters only (the base is frozen); writes the T copy.
  void adamw(const AdamWArgs& a, cudaStream_t stream);

 private:
  std::int64_t numel_ = 0;
  DeviceBuffer<float> master_, exp_avg_, exp_avg_sq_, grads_;  // [numel]
  DeviceBuffer<T> params16_;                                   // [numel]
};

}  // namespace fsdpx::cuda
