// executor/cuda/norm.h — LayerNorm and RMSNorm over the last dim on 16-bit activations (T = bf16 or
// f16) with fp32 statistics (mean, rstd) and fp32 weight gradients; the same math and += semantics as
// executor/cpu/norm.h. Backward's weight/bias sums are deterministic: per-chunk column sums in a fixed
// row order into a scratch buffer, then a fixed-order sum over chunks (no float atomics, as llm.c
// layernorm_backward_kernel10). Leaves out the fused residual add and vectorised loads.
#pragma once

#include <cstdint>

#include "executor/cuda/row_chunks.h"  // norm_backward_scratch_elems
#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// out [N, C] = (inp − mean)·rstd·weight + bias; mean [N], rstd [N] fp32 saved.
template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias,
                       std::int64_t n, std::int64_t c, float eps, cudaStream_t stream);

// dinp [N, C] (16-bit) +=; dweight [C], dbias [C] (fp32) +=; scratch [norm_backward_scratch_elems].
// dweight null (frozen weights): dinp only.
template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, float* scratch, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                        cudaStream_t stream);

// out [N, C] = inp·rstd·weight, rstd = 1/sqrt(mean(inp²) + eps); rstd [N] fp32 saved.
template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, std::int64_t n, std::int64_t c,
                     float eps, cudaStream_t stream);

// dinp [N, C] (16-bit) +=; dweight [C] (fp32) +=; scratch [norm_backward_scratch_elems].
// dweight null (frozen weights): dinp only.
template <class T>
void rmsnorm_backward(T* dinp, float* dweight, float* scratch, const T* dout, const T* inp,
                      const T* weight, const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream);

}  // namespace fsdpx::cuda
