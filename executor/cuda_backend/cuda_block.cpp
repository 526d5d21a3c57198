// executor/cuda_backend/cuda_block.cpp — the device block: the arch's norm on the device (shared with
// the final norm), and cuda_block_forward / _backward / _backward_input / _backward_weight as the block's
// shared kernel-call sequence (executor/model/block_sequence.h) over the CUDA policy
// (cuda_block_policy.h), on one stream. With a profiler each kernel group is event-timed under the CPU
// block's names. The block's buffers are executor/model/block_buffers.h's.
#include "executor/cuda_backend/cuda_block.h"

#include "core/errors.h"
#include "executor/cuda/norm.h"
#include "executor/cuda/types.h"
#include "executor/cuda_backend/cuda_block_policy.h"
#include "executor/model/block_sequence.h"
#include "executor/model/block_tensor_names.h"

namespace fsdpx::cuda {
template <class T>
BlockTensors<const T*> block_params16(const ModuleLayout& m, const T* base) {
  return block_tensors_at(m, base);
}

template <class T>
void norm_forward16(const CudaBlockContext<T>& ctx, T* out, float* mean, float* rstd, const T* inp,
                       const T* w, const T* b) {
  const BlockDims& d = ctx.dims;
  const float eps = float(ctx.spec->norm_eps);
  if (ctx.spec->arch == Arch::gpt) layernorm_forward(out, mean, rstd, inp, w, b, d.n_local, d.c, eps, ctx.stream);
  else rmsnorm_forward(out, rstd, inp, w, d.n_local, d.c, eps, ctx.stream);
}

template <class T>
void norm_backward16(const CudaBlockContext<T>& ctx, T* dinp, float* dw, float* db, float* scratch,
                        const T* dout, const T* inp, const T* w, const float* mean, const float* rstd) {
  const BlockDims& d = ctx.dims;
  if (ctx.spec->arch == Arch::gpt)
    layernorm_backward(dinp, dw, db, scratch, dout, inp, w, mean, rstd, d.n_local, d.c, ctx.stream);
  else
    rmsnorm_backward(dinp, dw, scratch, dout, inp, w, rstd, d.n_local, d.c, ctx.stream);
}

template <class T>
void cuda_block_forward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p, const T* x_in, T* x_out,
                        CudaBlockActs<T>& a) {
  FSDP_CHECK(x_out != x_in, "cuda_block_forward: x_out aliases x_in");
  block_sequence::block_forward<CudaBlockPolicy<T>>(ctx, p, x_in, x_out, a);
}

template <class T>
void cuda_block_backward(const CudaBlockContext<T>& ctx, const BlockTensors<const T*>& p,
                         const BlockTensors<float*>& g, const T* x_in, const CudaBlockActs<T>& a, T* dres,
                         CudaBlockScratch<T>& scratch, GradPass pass, CudaBlockWeightGrads<T>* keep) {
  block_sequence::block_backward<CudaBlockPolicy<T>>(ctx, p, g, x_in, a, dres, scratch, pass, keep);
}

#define FSDPX_INSTANTIATE(T)                                                                                     \
  template BlockTensors<const T*> block_params16<T>(const ModuleLayout&, const T*);                              \
  template void cuda_block_forward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&, const T*, T*,    \
                                      CudaBlockActs<T>&);                                                        \
  template void cuda_block_backward<T>(const CudaBlockContext<T>&, const BlockTensors<const T*>&,                 \
                                       const BlockTensors<float*>&, const T*, const CudaBlockActs<T>&, T*,        \
                                       CudaBlockScratch<T>&, GradPass, CudaBlockWeightGrads<T>*);                 \
  template void norm_forward16<T>(const CudaBlockContext<T>&, T*, float*, float*, const T*, const T*, const T*);  \
  template void norm_backward16<T>(const CudaBlockContext<T>&, T*, float*, float*, float*, const T*, const T*,    \
                                   const T*, const float*, const float*);
FSDPX_CUDA_MODEL_TYPES(FSDPX_INSTANTIATE)
#undef FSDPX_INSTANTIATE

}  // namespace fsdpx::cuda
