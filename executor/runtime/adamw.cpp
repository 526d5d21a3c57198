// executor/runtime/adamw.cpp — sharded AdamW (see adamw.h).
#include "executor/runtime/adamw.h"

#include <algorithm>
#include <cmath>

namespace fsdpx {

void adamw_update(const OptimizerSettings& o, const AdamWStep& s, float* params, float* exp_avg, float* exp_avg_sq,
                  const float* grads, std::int64_t n) {
  // torch.optim.AdamW (single-tensor path): p ← p·(1 − lr·wd); m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²;
  // p ← p − lr/(1−β1^t) · m / (√v / √(1−β2^t) + eps).
  const double bc1 = 1.0 - std::pow(o.beta1, double(s.t));
  const double bc2 = 1.0 - std::pow(o.beta2, double(s.t));
  const float decay = float(1.0 - s.lr * o.weight_decay);
  const float step_size = float(s.lr / bc1);
  const float bc2_sqrt = float(std::sqrt(bc2));
  const float b1 = float(o.beta1), b2 = float(o.beta2), eps = float(o.eps), scale = float(s.grad_scale);
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * scale;
    exp_avg[i] = b1 * exp_avg[i] + (1.0f - b1) * g;
    exp_avg_sq[i] = b2 * exp_avg_sq[i] + (1.0f - b2) * g * g;
    const float denom = std::sqrt(exp_avg_sq[i]) / bc2_sqrt + eps;
    params[i] = params[i] * decay - step_size * exp_avg[i] / denom;
  }
}

double clip_scale(double grad_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (grad_norm + 1e-6));
}

}  // namespace fsdpx
