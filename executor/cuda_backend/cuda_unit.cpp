// executor/cuda_backend/cuda_unit.cpp — the GPU unit policy's state copies (see cuda_unit.h): the AdamW
// state in and out in stream order, then a wait, since the host vectors may go away after return.
#include "executor/cuda_backend/cuda_unit.h"

#include "executor/cuda_backend/adam_state_copy.h"

namespace fsdpx::cuda {

template <class T>
void CudaUnitDevice<T>::upload(const UnitShardState& s, float* master, float* exp_avg, float* exp_avg_sq, T* copy,
                               std::int64_t n) const {
  enqueue_adam_upload(s, std::size_t(n), {master, exp_avg, exp_avg_sq}, *stream);
  cast_f32_to_16(copy, master, n, *stream);
  CUDA_CHECK(cudaStreamSynchronize(*stream));
}

template <class T>
void CudaUnitDevice<T>::download(const float* master, const float* exp_avg, const float* exp_avg_sq, std::int64_t n,
                                 UnitShardState& s) const {
  enqueue_adam_download({const_cast<float*>(master), const_cast<float*>(exp_avg), const_cast<float*>(exp_avg_sq)},
                        std::size_t(n), s, *stream);
  CUDA_CHECK(cudaStreamSynchronize(*stream));
}

template struct CudaUnitDevice<bf16>;
template struct CudaUnitDevice<f16>;
#if defined(FSDPX_CUDA_EMULATED)  // the float model of the emulated build (tests/cuda/emulated)
template struct CudaUnitDevice<float>;
#endif

}  // namespace fsdpx::cuda
