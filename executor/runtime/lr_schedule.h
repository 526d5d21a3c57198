// executor/runtime/lr_schedule.h — the learning rate of an optimizer step: linear warm-up to the peak,
// then cosine decay to min_lr_ratio·lr at total_steps, flat after (llm.c llmc/schedulers.h, cosine
// schedule; torchtitan's warmup + cosine with a floor). Leaves out other schedule shapes (WSD, linear).
#pragma once

#include <cstdint>

#include "core/plan_settings.h"

namespace fsdpx {

// Learning rate of the step with 0-based index `step` (the (step+1)-th optimizer update).
double learning_rate(const OptimizerSettings& o, std::int64_t step);

}  // namespace fsdpx
