// executor/cuda_backend/cuda_unit.h — one FSDP unit of one rank on the GPU (the device twin of
// executor/cpu_backend/fsdp_unit.h): resident fp32 master shard, Adam moments and gradient accumulator, a
// 16-bit copy (T = bf16, or f16 for fp16 plans) of the shard (the all-gather input, written by AdamW); the
// unsharded T parameters from
// all-gather to release and the unsharded fp32 gradients from the first backward to the reduction,
// both stream-ordered allocations (cudaMallocAsync/cudaFreeAsync) on the stream of the op that
// creates or ends them. Gradients are reduced in the plan's reduce dtype (fp32, or a bf16 copy as
// FSDP's MixedPrecisionPolicy.reduce_dtype) and accumulated in fp32; under fp16 the unsharded gradients are
// first rounded through fp16, the values an fp16 gradient would hold (as FsdpUnit). Under expert
// parallelism the unit is in two parts (executor/model/expert_shards.h, the CPU unit's): the dense part
// over dp_shard, the routed experts over efsdp, gathered and reduced by their twin ops; the state is the
// dense shard then the expert shard. Leaves out rate limiting (the step program's dependencies bound how
// many units are unsharded at once).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "executor/cuda/device_communicator.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/device_buffer.h"
#include "executor/model/expert_shards.h"
#include "executor/runtime/grad_norm_ranges.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/memory_tracker.h"
#include "executor/runtime/train_state.h"
#include "executor/runtime/unit_lifecycle.h"

namespace fsdpx::cuda {

// The communicator word of T buffers that are only copied (all-gather, pipeline messages): 2-byte words
// for bf16 and f16 (nothing is summed), fp32 for the float model of the emulated build (tests/cuda/emulated).
template <class T>
constexpr DType copy_dtype() {
  return sizeof(T) == 4 ? DType::fp32 : DType::bf16;
}

template <class T>
class CudaUnitT {
 public:
  // `shard_index` of padded_numel / shard_numel shards; `replicated`: DDP / ZeRO-1 (unsharded buffers
  // live all run). `mem` counts this unit's device bytes by category, `param_bytes` per parameter element:
  // the plan's parameter dtype (the program's kept-copy bytes), sizeof(T) on a GPU; the emulated build's
  // float model counts a bf16 plan's 2, as CudaModelComm counts its words.
  CudaUnitT(FlatUnitLayout flat, int shard_index, bool replicated, DType reduce_type, double param_bytes,
            MemoryTracker* mem);
  // Expert parallelism: `flat` (the rank's local experts) in two parts; its state parts.state_numel() long.
  CudaUnitT(FlatUnitLayout flat, ExpertShards parts, DType reduce_type, double param_bytes, MemoryTracker* mem);
  ~CudaUnitT();
  CudaUnitT(const CudaUnitT&) = delete;
  CudaUnitT& operator=(const CudaUnitT&) = delete;

  // The unit's layout; shard_numel is the state's length (both parts under expert parallelism).
  const FlatUnitLayout& flat() const { return flat_; }
  const ExpertShards* expert_shards() const { return parts_.empty() ? nullptr : &parts_.front(); }
  // The state's ranges AdamW steps (executor/model/optimizer_ranges.h: all but buffers), set by the backend.
  const ShardRanges& stepped() const { return stepped_; }
  void set_stepped(ShardRanges r) { stepped_ = std::move(r); }
  std::int64_t shard_offset() const { return shard_offset_; }
  // Host <-> device state (synchronous on `stream`): masters, moments; the T shard follows.
  void upload(const UnitShardState& s, cudaStream_t stream);
  UnitShardState download(cudaStream_t stream) const;

  // Collectives are enqueued on `stream`; `op` names the step-program op in watchdog messages.
  void gather(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  // Expert parallelism: the experts' part over efsdp (the program's twin op, ahead of gather, which places
  // it; without an efsdp op, one rank, gather takes it from the state), and its reduce-scatter ahead of
  // reduce_scatter's dense part.
  void gather_experts(DeviceCommunicator& efsdp, cudaStream_t stream, std::string_view op);
  void reduce_scatter_experts(DeviceCommunicator& efsdp, cudaStream_t stream, std::string_view op);
  // keep_ranks = g > 1 (FSDP2's int reshard_after_forward): slice keep_index of g of the unsharded
  // parameters stays for backward, which gather_kept all-gathers over the reshard group and frees. The
  // all-gather's stream waits for the copy: the step program orders it after a compute op that may come
  // before the release (its prefetch), not after the release.
  void release(int keep_ranks, int keep_index, cudaStream_t stream);
  void gather_kept(DeviceCommunicator& reshard, cudaStream_t stream, std::string_view op);
  double kept_bytes() const { return life_.kept_bytes(); }
  bool params_live() const { return life_.params_live(); }
  const T* module_params(int k) const;
  void copy_master_to_replica(cudaStream_t stream);  // DDP

  float* module_grads(int k, cudaStream_t stream);  // zeroed when it comes alive
  void reduce_scatter(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  void all_reduce_full(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  void all_reduce_reduced(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  // Adds the reduced shard to the accumulator; sets *non_finite (device) on a NaN or an infinity.
  void finish_reduction(int* non_finite, cudaStream_t stream);

  float* master() { return master_.get(); }
  float* exp_avg() { return exp_avg_.get(); }
  float* exp_avg_sq() { return exp_avg_sq_.get(); }
  T* master16() { return master16_.get(); }
  const float* grad_shard() const { return grad_acc_.get(); }
  float* grad_shard() { return grad_acc_.get(); }  // fp16 loss scaling unscales it in place

 private:
  void free_full_grads(cudaStream_t stream);
  void* alloc_reduce(std::int64_t n, cudaStream_t stream);  // n elements of reduce_type_, counted
  void free_reduce(void* p, std::int64_t n, cudaStream_t stream);
  bf16* bf16_grads_copy(cudaStream_t stream);
  void allocate_state(std::int64_t shard);
  // Expert parallelism: the two parts' gather and reduce-scatter, and the unsharded experts' bytes.
  void gather_split(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  void reduce_scatter_split(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op);
  void* packed_grads(const std::vector<PartRun>& runs, std::int64_t padded, cudaStream_t stream);  // reduce type
  void count_experts(MemCategory c, double bytes_per_element, bool alloc);
  FlatUnitLayout flat_;
  std::vector<ExpertShards> parts_;            // one under expert parallelism, else none
  std::vector<PartRun> dense_runs_, expert_runs_;
  ShardRanges stepped_;
  T* experts_gathered_ = nullptr;              // [expert_shard · expert_ranks], stream-ordered
  void* experts_reduced_ = nullptr;            // [expert_shard] of reduce_type_, stream-ordered
  UnitLifecycle life_;  // which unsharded buffers are alive, and their bytes
  std::int64_t shard_offset_ = 0;
  DType reduce_type_;
  double param_bytes_;  // counted per parameter element
  MemoryTracker* mem_;
  DeviceBuffer<float> master_, exp_avg_, exp_avg_sq_, grad_acc_;  // [shard_numel]
  DeviceBuffer<T> master16_;                                       // [shard_numel]
  T* full_params_ = nullptr;      // [padded_numel], stream-ordered
  float* full_grads_ = nullptr;   // [padded_numel], stream-ordered
  void* reduced_ = nullptr;       // [shard_numel] of reduce_type_, stream-ordered
  T* kept_ = nullptr;             // [life_.kept_numel()]: the copy kept between forward and backward, stream-ordered
  cudaEvent_t kept_ready_ = nullptr;  // recorded after the kept copy is written (release's stream)
};

using CudaUnit = CudaUnitT<bf16>;

}  // namespace fsdpx::cuda
