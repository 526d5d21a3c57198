// executor/cpu/norm.h — LayerNorm (GPT-2; Ba et al. 2016) and RMSNorm (Llama; Zhang & Sennrich 2019)
// over the last dim, forward and backward, after llm.c train_gpt2.c layernorm_forward/backward.
// Per-row statistics (mean, rstd) are saved for backward. Backward accumulates (+=) into dinp, dweight,
// dbias; a null dinp skips the input gradient (then weight may be null) and a null dweight the parameter
// gradients, so a pipeline's split backward computes them in two passes. Leaves out fusing the residual add (llm.c's fused_residual_forward is a GPU optimisation).
#pragma once

#include <cstdint>

namespace fsdpx::cpu {

// out [N, C] = (inp - mean) * rstd * weight [C] + bias [C]; mean [N], rstd [N] saved.
template <class Real>
void layernorm_forward(Real* out, Real* mean, Real* rstd, const Real* inp, const Real* weight, const Real* bias,
                       std::int64_t n, std::int64_t c, double eps);

// dinp [N, C] += ...; dweight [C] += Σ_n dout·norm; dbias [C] += Σ_n dout.
template <class Real>
void layernorm_backward(Real* dinp, Real* dweight, Real* dbias, const Real* dout, const Real* inp,
                        const Real* weight, const Real* mean, const Real* rstd, std::int64_t n, std::int64_t c);

// out [N, C] = inp * rstd * weight [C], rstd = 1/sqrt(mean(inp²) + eps); rstd [N] saved.
template <class Real>
void rmsnorm_forward(Real* out, Real* rstd, const Real* inp, const Real* weight, std::int64_t n, std::int64_t c,
                     double eps);

// dinp [N, C] += rstd·(dnorm − norm·mean(dnorm·norm)), dnorm = dout·weight; dweight [C] += Σ_n dout·norm.
template <class Real>
void rmsnorm_backward(Real* dinp, Real* dweight, const Real* dout, const Real* inp, const Real* weight,
                      const Real* rstd, std::int64_t n, std::int64_t c);

}  // namespace fsdpx::cpu
