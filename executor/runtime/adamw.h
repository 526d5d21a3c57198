// executor/runtime/adamw.h — AdamW on one rank's flat fp32 shard (ZeRO-3 / FSDP: each rank updates only
// the master weights it owns, Rajbhandari et al. 2020, ZeRO §5.1): bias-corrected moments and decoupled weight decay
// as torch.optim.AdamW (Loshchilov & Hutter 2019), applied to every element as torchtitan does
// (padding elements stay 0: zero weight, zero gradient). Gradients are scaled by the clip factor first.
// The backends call it on the ranges a unit's state steps (executor/model/optimizer_ranges.h: buffers left
// out). Leaves out per-tensor decay masks (llm.c decays 2-D tensors only) and stochastic rounding.
#pragma once

#include <cstdint>

#include "core/plan_settings.h"

namespace fsdpx {

struct AdamWStep {
  double lr = 0;
  std::int64_t t = 1;       // 1-based update count, for bias correction
  double grad_scale = 1.0;  // gradient clipping factor (≤ 1)
};

// params, exp_avg, exp_avg_sq, grads: [n] each.
void adamw_update(const OptimizerSettings& o, const AdamWStep& s, float* params, float* exp_avg, float* exp_avg_sq,
                  const float* grads, std::int64_t n);

// torch.nn.utils.clip_grad_norm_: scale = min(1, max_norm / (norm + 1e-6));
// max_norm 0 disables clipping.
double clip_scale(double grad_norm, double max_norm);

}  // namespace fsdpx
