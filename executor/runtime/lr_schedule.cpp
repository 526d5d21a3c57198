// executor/runtime/lr_schedule.cpp — linear warm-up then cosine decay (see lr_schedule.h).
#include "executor/runtime/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace fsdpx {

double learning_rate(const OptimizerSettings& o, std::int64_t step) {
  // llm.c schedulers.h: warm-up lr·(step+1)/warmup; then decay_ratio = (step − warmup)/(total − warmup),
  // coeff = ½(1 + cos(π·decay_ratio)), lr = min + coeff·(lr − min).
  if (step < o.warmup_steps) return o.lr * double(step + 1) / double(o.warmup_steps);
  const double min_lr = o.lr * o.min_lr_ratio;
  const std::int64_t decay_steps = o.total_steps - o.warmup_steps;
  if (decay_steps <= 0) return min_lr;
  const double ratio = std::clamp(double(step - o.warmup_steps) / double(decay_steps), 0.0, 1.0);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return min_lr + coeff * (o.lr - min_lr);
}

}  // namespace fsdpx
