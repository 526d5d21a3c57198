// executor/cuda_backend/cuda_rank_backend_lora.cpp — the LoRA adapters of the CUDA rank backend (see
// cuda_rank_backend.h, cuda_adapters.h): their state for checkpoints, the `ar.lora` all-reduce of their
// gradient and its share of the gradient norm. Mirrors cpu_rank_backend.cpp's adapter members; the
// adapters' forward and backward GEMMs are the model's (cuda_lora.h).
#include <type_traits>

#include "core/errors.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda_backend/cuda_rank_backend.h"
#include "executor/cuda/cast.h"
#include "executor/cuda_backend/grad_scaler_kernels.h"

namespace fsdpx::cuda {

template <class T>
AdapterState CudaRankBackendT<T>::adapter_state() const {
  if (!adapters_) return {};
  sync_streams();
  return adapters_->download(stream(StreamKind::compute));
}

template <class T>
void CudaRankBackendT<T>::load_adapter_state(const AdapterState& s) {
  FSDP_CHECK(adapters_ != nullptr, "CudaRankBackend: adapter state for a plan without LoRA");
  sync_streams();
  adapters_->upload(s, stream(StreamKind::compute));
}

// ar.lora: the adapters' gradient summed in fp32 over the group; a non-finite value is reported against
// the first unit, as on the CPU (the check leaves the values alone: an inv_scale of 1 multiplies nothing).
template <class T>
void CudaRankBackendT<T>::all_reduce_adapter_grads(MeshGroup group) {
  FSDP_CHECK(adapters_ != nullptr, "CudaRankBackend: an adapter reduction without LoRA");
  float* g = adapters_->grads();
  // fp16 plans: the adapters' gradients leave their GEMMs as fp16 values, as the base units' (and as
  // CpuRankBackend rounds them), so an overflowing loss scale shows here too.
  if constexpr (std::is_same_v<T, f16>) round_through_f16(g, adapters_->numel(), current_);
  comm(group).all_reduce(g, g, adapters_->numel(), DType::fp32, current_, current_op_);
  unscale_check_finite(g, adapters_->numel(), 1.0f, non_finite_.get(), current_);
}

template <class T>
double CudaRankBackendT<T>::adapter_grad_sq_sum() {
  if (!adapters_) return 0.0;
  use_device();
  sum_squares_async(adapters_->grads(), adapters_->numel(), false);
  return read_sq_sum();
}

// The members defined here (cuda_rank_backend.cpp instantiates the class with the others).
#define FSDPX_INSTANTIATE(T)                                                    \
  template AdapterState CudaRankBackendT<T>::adapter_state() const;             \
  template void CudaRankBackendT<T>::load_adapter_state(const AdapterState&);   \
  template void CudaRankBackendT<T>::all_reduce_adapter_grads(MeshGroup);       \
  template double CudaRankBackendT<T>::adapter_grad_sq_sum();
FSDPX_INSTANTIATE(bf16)
FSDPX_INSTANTIATE(f16)
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
FSDPX_INSTANTIATE(float)
#endif
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
