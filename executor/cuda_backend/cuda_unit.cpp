// executor/cuda_backend/cuda_unit.cpp — buffers and collectives of one FSDP unit on the GPU (see
// cuda_unit.h). In-place conventions as NCCL's (NCCL user guide, "In-place Operations"): the all-gather input is the 16-bit
// shard, the reduce-scatter output a separate shard (in the reduction dtype) so the unsharded
// gradients can be freed.
#include "executor/cuda_backend/cuda_unit.h"

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
CudaUnitT<T>::CudaUnitT(FlatUnitLayout layout, int shard_index, bool replicated, DType reduce_type, MemoryTracker* mem)
    : life_("CudaUnit", std::move(layout), replicated, sizeof(T), mem), reduce_type_(reduce_type), mem_(mem) {
  FSDP_CHECK(reduce_type == DType::fp32 || reduce_type == DType::bf16, "CudaUnit: gradients reduce in f32 or bf16");
  const std::int64_t shard = flat().shard_numel, padded = flat().padded_numel;
  shard_offset_ = std::int64_t(shard_index) * shard;
  master_ = DeviceBuffer<float>(shard);
  exp_avg_ = DeviceBuffer<float>(shard);
  exp_avg_sq_ = DeviceBuffer<float>(shard);
  grad_acc_ = DeviceBuffer<float>(shard);
  master16_ = DeviceBuffer<T>(shard);
  CUDA_CHECK(cudaMemset(grad_acc_.get(), 0, std::size_t(shard) * sizeof(float)));
  mem_->alloc(MemCategory::params, double(shard) * (kF32 + double(sizeof(T))));
  mem_->alloc(MemCategory::optimizer, 2.0 * double(shard) * kF32);
  mem_->alloc(MemCategory::grads, double(shard) * kF32);
  if (replicated) {  // DDP / ZeRO-1: unsharded parameters and gradients live for the whole run
    CUDA_CHECK(cudaMalloc(&full_params_, std::size_t(padded) * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&full_grads_, std::size_t(padded) * sizeof(float)));
    CUDA_CHECK(cudaMemset(full_grads_, 0, std::size_t(padded) * sizeof(float)));
  }
}

template <class T>
CudaUnitT<T>::~CudaUnitT() {
  // Destructors run after the backend synchronised its streams; plain frees are then safe.
  if (full_params_) cudaFree(full_params_);
  if (full_grads_) cudaFree(full_grads_);
  if (reduced_) cudaFree(reduced_);
  if (kept_) cudaFree(kept_);  // a run stopped between a partial reshard and its backward
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
  if (life_.gather(comm.size())) full_params_ = alloc_async<T>(flat().padded_numel, stream);
  comm.all_gather(master16_.get(), full_params_, flat().shard_numel, copy_dtype<T>(), stream, op);
}

template <class T>
void CudaUnitT<T>::release(int keep_ranks, int keep_index, cudaStream_t stream) {
  if (life_.replicated()) return;
  if (const std::int64_t n = life_.release(keep_ranks, keep_index)) {
    kept_ = alloc_async<T>(n, stream);
    CUDA_CHECK(cudaMemcpyAsync(kept_, full_params_ + keep_index * n, std::size_t(n) * sizeof(T),
                               cudaMemcpyDeviceToDevice, stream));
  }
  CUDA_CHECK(cudaFreeAsync(full_params_, stream));
  full_params_ = nullptr;
}

template <class T>
void CudaUnitT<T>::gather_kept(DeviceCommunicator& reshard, cudaStream_t stream, std::string_view op) {
  const std::int64_t n = life_.gather_kept(reshard.size());
  full_params_ = alloc_async<T>(flat().padded_numel, stream);
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

template class CudaUnitT<bf16>;
template class CudaUnitT<f16>;
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
template class CudaUnitT<float>;
#endif

}  // namespace fsdpx::cuda
