// executor/cuda_backend/cuda_unit.cpp — buffers and collectives of one FSDP unit on the GPU (see
// cuda_unit.h). In-place conventions as NCCL's (NCCL user guide, "In-place Operations"): the all-gather input is the 16-bit
// shard, the reduce-scatter output a separate shard (in the reduction dtype) so the unsharded
// gradients can be freed.
#include "executor/cuda_backend/cuda_unit.h"

#include <algorithm>
#include <type_traits>

#include <cuda_runtime.h>  // the typed cudaMalloc(T**) template; nccl.h brought it only where NCCL is found

#include "core/errors.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/adam_state_copy.h"
#include "executor/cuda_backend/grad_kernels.h"

namespace fsdpx::cuda {

namespace {
constexpr double kF32 = 4.0;  // bytes per fp32 element

template <class T>
T* alloc_async(std::int64_t n, cudaStream_t stream) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocAsync(&p, std::size_t(n) * sizeof(T), stream));
  return static_cast<T*>(p);
}
}  // namespace

template <class T>
CudaUnitT<T>::CudaUnitT(FlatUnitLayout layout, int shard_index, bool replicated, DType reduce_type, double param_bytes,
                        MemoryTracker* mem)
    : flat_(layout), life_("CudaUnit", std::move(layout), replicated, param_bytes, mem), reduce_type_(reduce_type),
      param_bytes_(param_bytes), mem_(mem) {
  FSDP_CHECK(reduce_type == DType::fp32 || reduce_type == DType::bf16, "CudaUnit: gradients reduce in f32 or bf16");
  const std::int64_t padded = flat().padded_numel;
  allocate_state(flat().shard_numel);
  shard_offset_ = std::int64_t(shard_index) * flat().shard_numel;
  if (replicated) {  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    CUDA_CHECK(cudaMalloc(&full_params_, std::size_t(padded) * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&full_grads_, std::size_t(padded) * sizeof(float)));
    CUDA_CHECK(cudaMemset(full_grads_, 0, std::size_t(padded) * sizeof(float)));
  }
}

template <class T>
CudaUnitT<T>::CudaUnitT(FlatUnitLayout layout, ExpertShards parts, DType reduce_type, double param_bytes,
                        MemoryTracker* mem)
    : flat_(expert_state_view(layout, parts)), parts_{parts}, dense_runs_(part_runs(parts.dense)),
      expert_runs_(part_runs(parts.expert)),
      life_("CudaUnit", expert_dense_view(std::move(layout), parts), false, param_bytes, mem),
      reduce_type_(reduce_type), param_bytes_(param_bytes), mem_(mem) {
  FSDP_CHECK(reduce_type == DType::fp32 || reduce_type == DType::bf16, "CudaUnit: gradients reduce in f32 or bf16");
  allocate_state(parts.state_numel());
  shard_offset_ = -1;  // two parts: no single offset (the trainer maps each element: session/expert_state.h)
}

// The resident state [shard]: fp32 master, moments and gradient accumulator, and the T master.
template <class T>
void CudaUnitT<T>::allocate_state(std::int64_t shard) {
  master_ = DeviceBuffer<float>(shard);
  exp_avg_ = DeviceBuffer<float>(shard);
  exp_avg_sq_ = DeviceBuffer<float>(shard);
  grad_acc_ = DeviceBuffer<float>(shard);
  master16_ = DeviceBuffer<T>(shard);
  CUDA_CHECK(cudaMemset(grad_acc_.get(), 0, std::size_t(shard) * sizeof(float)));
  mem_->alloc(MemCategory::params, double(shard) * (kF32 + param_bytes_));
  mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
  mem_->alloc(MemCategory::grads, double(shard) * kF32);
}

template <class T>
CudaUnitT<T>::~CudaUnitT() {
  // Destructors run after the backend synchronised its streams; plain frees are then safe.
  if (full_params_) cudaFree(full_params_);
  if (full_grads_) cudaFree(full_grads_);
  if (reduced_) cudaFree(reduced_);
  if (kept_) cudaFree(kept_);  // a run stopped between a partial reshard and its backward
  if (experts_gathered_) cudaFree(experts_gathered_);
  if (experts_reduced_) cudaFree(experts_reduced_);
  if (kept_ready_) cudaEventDestroy(kept_ready_);
}

template <class T>
void CudaUnitT<T>::upload(const UnitShardState& s, cudaStream_t stream) {
  const auto n = std::size_t(flat().shard_numel);
  FSDP_CHECK(adam_state_fits(s, n), "CudaUnit: state size");
  enqueue_adam_upload(s, n, {master_.get(), exp_avg_.get(), exp_avg_sq_.get()}, stream);
  cast_f32_to_16(master16_.get(), master_.get(), flat().shard_numel, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors may go away after return
}

template <class T>
UnitShardState CudaUnitT<T>::download(cudaStream_t stream) const {
  const auto n = std::size_t(flat().shard_numel);
  UnitShardState s;
  s.unit_numel = flat().numel;
  s.shard_offset = shard_offset_;
  enqueue_adam_download({master_.get(), exp_avg_.get(), exp_avg_sq_.get()}, n, s, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return s;
}

template <class T>
void CudaUnitT<T>::gather(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  if (!parts_.empty()) return gather_split(comm, stream, op);
  if (life_.gather(comm.size())) full_params_ = alloc_async<T>(flat().padded_numel, stream);
  comm.all_gather(master16_.get(), full_params_, flat().shard_numel, copy_dtype<T>(), stream, op);
}

template <class T>
void CudaUnitT<T>::release(int keep_ranks, int keep_index, cudaStream_t stream) {
  if (life_.replicated()) return;
  FSDP_CHECK(parts_.empty() || keep_ranks <= 1, "CudaUnit: no kept copy with expert parallelism");
  if (!parts_.empty() && life_.params_live()) count_experts(MemCategory::transient, param_bytes_, false);
  if (const std::int64_t n = life_.release(keep_ranks, keep_index)) {
    kept_ = alloc_async<T>(n, stream);
    CUDA_CHECK(cudaMemcpyAsync(kept_, full_params_ + keep_index * n, std::size_t(n) * sizeof(T),
                               cudaMemcpyDeviceToDevice, stream));
    if (!kept_ready_) CUDA_CHECK(cudaEventCreateWithFlags(&kept_ready_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(kept_ready_, stream));
  }
  CUDA_CHECK(cudaFreeAsync(full_params_, stream));
  full_params_ = nullptr;
}

template <class T>
void CudaUnitT<T>::gather_kept(DeviceCommunicator& reshard, cudaStream_t stream, std::string_view op) {
  const std::int64_t n = life_.gather_kept(reshard.size());
  full_params_ = alloc_async<T>(flat().padded_numel, stream);
  CUDA_CHECK(cudaStreamWaitEvent(stream, kept_ready_, 0));  // the copy written on release's stream
  reshard.all_gather(kept_, full_params_, n, copy_dtype<T>(), stream, op);  // the words of gather
  CUDA_CHECK(cudaFreeAsync(kept_, stream));
  kept_ = nullptr;
}

template <class T>
const T* CudaUnitT<T>::module_params(int k) const {
  life_.check_params();
  return full_params_ + flat().module_offsets[std::size_t(k)];
}

template <class T>
void CudaUnitT<T>::copy_master_to_replica(cudaStream_t stream) {
  life_.check_master_whole();
  CUDA_CHECK(cudaMemcpyAsync(full_params_, master16_.get(), std::size_t(flat().padded_numel) * sizeof(T),
                             cudaMemcpyDeviceToDevice, stream));
}

template <class T>
float* CudaUnitT<T>::module_grads(int k, cudaStream_t stream) {
  if (life_.touch_grads()) {
    if (!parts_.empty()) count_experts(MemCategory::transient, kF32, true);
    full_grads_ = alloc_async<float>(flat().padded_numel, stream);
    CUDA_CHECK(cudaMemsetAsync(full_grads_, 0, std::size_t(flat().padded_numel) * sizeof(float), stream));
  }
  return full_grads_ + flat().module_offsets[std::size_t(k)];
}

template <class T>
void CudaUnitT<T>::free_full_grads(cudaStream_t stream) {
  if (!life_.end_grads()) {  // replicated: zeroed for the next step
    CUDA_CHECK(cudaMemsetAsync(full_grads_, 0, std::size_t(flat().padded_numel) * sizeof(float), stream));
    return;
  }
  if (!parts_.empty()) count_experts(MemCategory::transient, kF32, false);
  CUDA_CHECK(cudaFreeAsync(full_grads_, stream));
  full_grads_ = nullptr;
}

template <class T>
void* CudaUnitT<T>::alloc_reduce(std::int64_t n, cudaStream_t stream) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocAsync(&p, std::size_t(n) * word_bytes(reduce_type_), stream));
  mem_->alloc(MemCategory::transient, double(n) * double(word_bytes(reduce_type_)));
  return p;
}

template <class T>
void CudaUnitT<T>::free_reduce(void* p, std::int64_t n, cudaStream_t stream) {
  CUDA_CHECK(cudaFreeAsync(p, stream));
  mem_->free(MemCategory::transient, double(n) * double(word_bytes(reduce_type_)));
}

// fp16 plans: the unsharded gradients rounded through fp16 first (the values of an fp16 gradient, so an
// overflowing loss scale shows as infinities, as FsdpUnit). Then the gradients in the reduction dtype: a
// bf16 copy (then the fp32 buffer is done with), or
// the fp32 buffer itself (null: use full_grads_).
template <class T>
bf16* CudaUnitT<T>::bf16_grads_copy(cudaStream_t stream) {
  if constexpr (std::is_same_v<T, f16>) round_through_f16(full_grads_, flat().padded_numel, stream);  // fp16 values
  if (reduce_type_ != DType::bf16) return nullptr;
  auto* copy = static_cast<bf16*>(alloc_reduce(flat().padded_numel, stream));
  cast_f32_to_bf16(copy, full_grads_, flat().padded_numel, stream);
  free_full_grads(stream);
  return copy;
}

template <class T>
void CudaUnitT<T>::reduce_scatter(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  if (!parts_.empty()) return reduce_scatter_split(comm, stream, op);
  life_.check_reduce_scatter(comm.size());
  bf16* copy = bf16_grads_copy(stream);
  reduced_ = alloc_reduce(flat().shard_numel, stream);
  comm.reduce_scatter(copy ? static_cast<void*>(copy) : full_grads_, reduced_, flat().shard_numel, reduce_type_,
                      stream, op);
  if (copy)
    free_reduce(copy, flat().padded_numel, stream);
  else
    free_full_grads(stream);
}

template <class T>
void CudaUnitT<T>::all_reduce_full(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  life_.check_all_reduce_full();
  if (bf16* copy = bf16_grads_copy(stream)) {  // the bf16 copy, reduced in place, is the reduced shard
    comm.all_reduce(copy, copy, flat().padded_numel, reduce_type_, stream, op);
    reduced_ = copy;
    return;
  }
  comm.all_reduce(full_grads_, full_grads_, flat().padded_numel, reduce_type_, stream, op);
  reduced_ = alloc_reduce(flat().shard_numel, stream);
  CUDA_CHECK(cudaMemcpyAsync(reduced_, full_grads_, std::size_t(flat().shard_numel) * sizeof(float),
                             cudaMemcpyDeviceToDevice, stream));
  free_full_grads(stream);
}

template <class T>
void CudaUnitT<T>::all_reduce_reduced(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  FSDP_CHECK(reduced_ != nullptr, "CudaUnit: all-reduce across replicas before the reduce-scatter");
  comm.all_reduce(reduced_, reduced_, flat().shard_numel, reduce_type_, stream, op);
}

template <class T>
void CudaUnitT<T>::finish_reduction(int* non_finite, cudaStream_t stream) {
  FSDP_CHECK(reduced_ != nullptr, "CudaUnit: nothing reduced");
  const std::int64_t n = flat().shard_numel;
  if (reduce_type_ == DType::bf16) {  // widen to fp32 first: the accumulator and the finiteness check are fp32
    float* wide = alloc_async<float>(n, stream);
    mem_->alloc(MemCategory::transient, double(n) * kF32);
    cast_bf16_to_f32(wide, static_cast<const bf16*>(reduced_), n, false, stream);
    accumulate_check_finite(grad_acc_.get(), wide, n, non_finite, stream);
    CUDA_CHECK(cudaFreeAsync(wide, stream));
    mem_->free(MemCategory::transient, double(n) * kF32);
  } else {
    accumulate_check_finite(grad_acc_.get(), static_cast<const float*>(reduced_), n, non_finite, stream);
  }
  free_reduce(reduced_, n, stream);
  reduced_ = nullptr;
}

// Expert parallelism (expert_shards.h): the parts move as runs of consecutive unit elements.
namespace {
// to_unit: dst[unit_at + i] = src[part_at + i] (unpack), else dst[part_at + i] = src[unit_at + i] (pack).
template <class E>
void copy_runs(const std::vector<PartRun>& runs, const E* src, E* dst, bool to_unit, cudaStream_t stream) {
  for (const PartRun& r : runs) {
    const std::int64_t from = to_unit ? r.part_at : r.unit_at, to = to_unit ? r.unit_at : r.part_at;
    CUDA_CHECK(cudaMemcpyAsync(dst + to, src + from, std::size_t(r.count) * sizeof(E), cudaMemcpyDeviceToDevice,
                               stream));
  }
}
}  // namespace

template <class T>
void CudaUnitT<T>::count_experts(MemCategory c, double bytes_per_element, bool alloc) {
  const double bytes = double(parts_.front().expert.size()) * bytes_per_element;
  if (alloc)
    mem_->alloc(c, bytes);
  else
    mem_->free(c, bytes);
}

template <class T>
void CudaUnitT<T>::gather_experts(DeviceCommunicator& efsdp, cudaStream_t stream, std::string_view op) {
  const ExpertShards& p = parts_.at(0);
  FSDP_CHECK(efsdp.size() == p.expert_ranks && experts_gathered_ == nullptr, "CudaUnit: the experts' all-gather");
  experts_gathered_ = alloc_async<T>(std::max<std::int64_t>(1, p.expert_shard * p.expert_ranks), stream);
  efsdp.all_gather(master16_.get() + p.dense_shard, experts_gathered_, p.expert_shard, copy_dtype<T>(), stream, op);
}

// The dense part over dp_shard into its staging, then both parts to their places in the unit.
template <class T>
void CudaUnitT<T>::gather_split(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  const ExpertShards& p = parts_.front();
  life_.gather(comm.size());
  count_experts(MemCategory::transient, param_bytes_, true);
  full_params_ = alloc_async<T>(flat().padded_numel, stream);
  T* dense = alloc_async<T>(std::max<std::int64_t>(1, p.dense_shard * p.dense_ranks), stream);
  comm.all_gather(master16_.get(), dense, p.dense_shard, copy_dtype<T>(), stream, op);
  copy_runs(dense_runs_, static_cast<const T*>(dense), full_params_, true, stream);
  CUDA_CHECK(cudaFreeAsync(dense, stream));
  const bool own = p.expert_ranks == 1;  // no efsdp op: the state holds every local expert
  FSDP_CHECK(own || p.expert.empty() || experts_gathered_ != nullptr, "CudaUnit: the dense all-gather before the experts'");
  copy_runs(expert_runs_, own ? master16_.get() + p.dense_shard : experts_gathered_, full_params_, true, stream);
  if (experts_gathered_) CUDA_CHECK(cudaFreeAsync(experts_gathered_, stream));
  experts_gathered_ = nullptr;
}

// A part's gradients [padded] packed from the unsharded fp32 gradients (padding zero), in the reduce dtype.
template <class T>
void* CudaUnitT<T>::packed_grads(const std::vector<PartRun>& runs, std::int64_t padded, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, f16>) round_through_f16(full_grads_, flat().padded_numel, stream);  // fp16 values
  float* packed = alloc_async<float>(padded, stream);
  CUDA_CHECK(cudaMemsetAsync(packed, 0, std::size_t(padded) * sizeof(float), stream));
  copy_runs(runs, static_cast<const float*>(full_grads_), packed, false, stream);
  if (reduce_type_ != DType::bf16) return packed;
  void* copy = alloc_async<bf16>(padded, stream);
  cast_f32_to_bf16(static_cast<bf16*>(copy), packed, padded, stream);
  CUDA_CHECK(cudaFreeAsync(packed, stream));
  return copy;
}

template <class T>
void CudaUnitT<T>::reduce_scatter_experts(DeviceCommunicator& efsdp, cudaStream_t stream, std::string_view op) {
  const ExpertShards& p = parts_.at(0);
  FSDP_CHECK(life_.grads_live() && efsdp.size() == p.expert_ranks && experts_reduced_ == nullptr,
             "CudaUnit: the experts' reduce-scatter");
  const std::int64_t padded = std::max<std::int64_t>(1, p.expert_shard * p.expert_ranks);
  void* packed = packed_grads(expert_runs_, padded, stream);
  experts_reduced_ = alloc_reduce(std::max<std::int64_t>(1, p.expert_shard), stream);
  efsdp.reduce_scatter(packed, experts_reduced_, p.expert_shard, reduce_type_, stream, op);
  CUDA_CHECK(cudaFreeAsync(packed, stream));
}

// The dense part over dp_shard; the experts' reduced shard joins it (reduced by their twin op, or, with a
// one-rank efsdp group, this rank's own: the ep group's tokens all reached its experts).
template <class T>
void CudaUnitT<T>::reduce_scatter_split(DeviceCommunicator& comm, cudaStream_t stream, std::string_view op) {
  const ExpertShards& p = parts_.front();
  life_.check_reduce_scatter(comm.size());
  const std::size_t word = word_bytes(reduce_type_);
  void* packed = packed_grads(dense_runs_, std::max<std::int64_t>(1, p.dense_shard * p.dense_ranks), stream);
  reduced_ = alloc_reduce(flat().shard_numel, stream);
  comm.reduce_scatter(packed, reduced_, p.dense_shard, reduce_type_, stream, op);
  CUDA_CHECK(cudaFreeAsync(packed, stream));
  const std::int64_t own_padded = std::max<std::int64_t>(1, p.expert_shard);
  void* experts = p.expert_ranks == 1 ? packed_grads(expert_runs_, own_padded, stream) : experts_reduced_;
  FSDP_CHECK(p.expert_shard == 0 || experts != nullptr, "CudaUnit: the dense reduce-scatter before the experts'");
  CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(reduced_) + std::size_t(p.dense_shard) * word, experts,
                             std::size_t(p.expert_shard) * word, cudaMemcpyDeviceToDevice, stream));
  if (p.expert_ranks == 1)
    CUDA_CHECK(cudaFreeAsync(experts, stream));
  else if (experts_reduced_)
    free_reduce(experts_reduced_, own_padded, stream);
  experts_reduced_ = nullptr;
  free_full_grads(stream);
}

template class CudaUnitT<bf16>;
template class CudaUnitT<f16>;
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
template class CudaUnitT<float>;
#endif

}  // namespace fsdpx::cuda
