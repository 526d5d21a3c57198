// executor/cuda/adamw.h — AdamW on one rank's flat fp32 shard (ZeRO-3/FSDP: each rank updates the
// master weights it owns, Rajbhandari et al. 2020, ZeRO §5.1), the same update as executor/runtime/adamw.cpp
// (torch.optim.AdamW: decoupled weight decay, bias-corrected moments; Loshchilov & Hutter 2019),
// and it writes the 16-bit (bf16 or f16) copy that the next all-gather sends. Leaves out per-tensor decay masks and
// llm.c's stochastic rounding (round-to-nearest here).
#pragma once

#include <cstdint>

#include "executor/cuda/types.h"

namespace fsdpx::cuda {

struct AdamWArgs {
  float lr = 0, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0;
  std::int64_t t = 1;      // 1-based update count, for bias correction
  float grad_scale = 1.0f;  // gradient clipping factor (≤ 1), applied to the gradient first
};

// params, exp_avg, exp_avg_sq, grads: fp32 [n]; params_16 [n] (T = bf16 or f16; may be a typed null)
// receives the updated weights rounded to T.
template <class T>
void adamw_update(const AdamWArgs& a, float* params, float* exp_avg, float* exp_avg_sq, const float* grads,
                  T* params_16, std::int64_t n, cudaStream_t stream);

}  // namespace fsdpx::cuda
