// executor/cuda_backend/cuda_adapters.cpp — see cuda_adapters.h.
#include "executor/cuda_backend/cuda_adapters.h"

#include "core/errors.h"
#include "executor/cuda/cast.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/adam_state_copy.h"

namespace fsdpx::cuda {

template <class T>
CudaAdaptersT<T>::CudaAdaptersT(const LoraLayout& layout, MemoryTracker* mem)
    : numel_(layout.total), master_(layout.total), exp_avg_(layout.total), exp_avg_sq_(layout.total),
      grads_(layout.total), params16_(layout.total) {
  const auto bytes = std::size_t(numel_) * sizeof(float);
  for (const DeviceBuffer<float>* b : {&master_, &exp_avg_, &exp_avg_sq_, &grads_})
    CUDA_CHECK(cudaMemset(b->get(), 0, bytes));
  CUDA_CHECK(cudaMemset(params16_.get(), 0, std::size_t(numel_) * sizeof(T)));
  // cudaMemset is asynchronous on the legacy stream, which the backend's non-blocking streams do not wait
  // for: the zeros must land before the first upload or backward.
  CUDA_CHECK(cudaDeviceSynchronize());
  mem->alloc(MemCategory::params, double(numel_) * (4 + 2));
  mem->alloc(MemCategory::grads, double(numel_) * 4);
  mem->alloc(MemCategory::optimizer, double(numel_) * 8);
}

template <class T>
void CudaAdaptersT<T>::upload(const AdapterState& s, cudaStream_t stream) {
  const auto n = std::size_t(numel_);
  FSDP_CHECK(adam_state_fits(s, n), "CudaAdapters: adapter state of another layout");
  enqueue_adam_upload(s, n, {master_.get(), exp_avg_.get(), exp_avg_sq_.get()}, stream);
  cast_f32_to_16(params16_.get(), master_.get(), numel_, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));  // the host vectors may go away after return
}

template <class T>
AdapterState CudaAdaptersT<T>::download(cudaStream_t stream) const {
  const auto n = std::size_t(numel_);
  AdapterState s;
  enqueue_adam_download({master_.get(), exp_avg_.get(), exp_avg_sq_.get()}, n, s, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return s;
}

template <class T>
void CudaAdaptersT<T>::adamw(const AdamWArgs& a, cudaStream_t stream) {
  adamw_update(a, master_.get(), exp_avg_.get(), exp_avg_sq_.get(), grads_.get(), params16_.get(), numel_, stream);
}

template class CudaAdaptersT<bf16>;
template class CudaAdaptersT<f16>;
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
template class CudaAdaptersT<float>;
#endif

}  // namespace fsdpx::cuda
