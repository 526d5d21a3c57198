// executor/checkpoint/trained_weights.h — a sharded training state re-cut into the full model: one fp32
// parameter buffer in ParamLayout order (what executor/session/checkpoint_plan.h's load_trained_weights
// reads out of a checkpoint root). Leaves out optimizer moments and TP/PP states.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/runtime/param_layout.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

// `saved` re-cut into the full model: [layout.total] fp32 in layout order. ConfigError naming `origin`
// when a module is missing or of another size (reshard_state).
std::vector<float> full_params_from_state(const TrainerState& saved, const ParamLayout& layout,
                                          const std::string& origin);

}  // namespace fsdpx
