// executor/cuda/norm.h — LayerNorm and RMSNorm over the last dim on bf16 activations with fp32
// statistics (mean, rstd) and fp32 weight gradients; the same math and += semantics as
// executor/cpu/norm.h. Backward's weight/bias sums are deterministic: per-chunk column sums in a fixed
// row order into a scratch buffer, then a fixed-order sum over chunks (no float atomics, as llm.c
// layernorm_backward_kernel10). Leaves out the fused residual add and vectorised loads.
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

// fp32 elements of the scratch buffer that norm backward needs for n rows of width c.
std::int64_t norm_backward_scratch_elems(std::int64_t n, std::int64_t c);

// out [N, C] = (inp − mean)·rstd·weight + bias; mean [N], rstd [N] fp32 saved.
void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                       std::int64_t n, std::int64_t c, float eps, cudaStream_t stream);

// dinp [N, C] (bf16) +=; dweight [C], dbias [C] (fp32) +=; scratch [norm_backward_scratch_elems].
// dweight null (frozen weights): dinp only.
void layernorm_backward(bf16* dinp, float* dweight, float* dbias, float* scratch, const bf16* dout, const bf16* inp,
                        const bf16* weight, const float* mean, const float* rstd, std::int64_t n, std::int64_t c,
                        cudaStream_t stream);

// out [N, C] = inp·rstd·weight, rstd = 1/sqrt(mean(inp²) + eps); rstd [N] fp32 saved.
void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* weight, std::int64_t n, std::int64_t c,
                     float eps, cudaStream_t stream);

// dinp [N, C] (bf16) +=; dweight [C] (fp32) +=; scratch [norm_backward_scratch_elems].
// dweight null (frozen weights): dinp only.
void rmsnorm_backward(bf16* dinp, float* dweight, float* scratch, const bf16* dout, const bf16* inp,
                      const bf16* weight, const float* rstd, std::int64_t n, std::int64_t c, cudaStream_t stream);

}  // namespace fsdpx::cuda
