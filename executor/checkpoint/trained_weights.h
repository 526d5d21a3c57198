// executor/checkpoint/trained_weights.h — a trained model out of a checkpoint root: `fsdpx run
// --checkpoint-dir D` also writes D/plan.json (the plan trained), so `fsdpx sample` and `fsdpx export-hf`
// need only D. The newest checkpoint that verifies (or the step directory named) is resharded into one
// full fp32 parameter buffer in ParamLayout order, with a LoRA run's adapters beside it (merged by
// executor/session/full_weights.h). Leaves out optimizer moments and TP/PP checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "executor/runtime/param_layout.h"
#include "executor/runtime/train_state.h"

namespace fsdpx {

inline constexpr const char* kCheckpointPlanFile = "plan.json";

// Writes root/plan.json whole (temporary file, fsync, rename); creates root if needed.
void write_checkpoint_plan(const std::string& root, const Plan& plan);

// `saved` re-cut into the full model: [layout.total] fp32 in layout order. ConfigError naming `origin`
// when a module is missing or of another size (reshard_state).
std::vector<float> full_params_from_state(const TrainerState& saved, const ParamLayout& layout,
                                          const std::string& origin);

struct TrainedWeights {
  Plan plan;
  std::vector<float> params;  // [make_param_layout(plan.model).total]
  std::vector<float> adapters;  // a LoRA run's adapters (executor/model/lora.h order), not merged; else empty
  std::int64_t step = 0;      // optimizer steps the weights have seen
  std::string checkpoint;     // the step directory read
};

// `dir`: a checkpoint root (the newest good step is read) or one step directory in it. ConfigError
// naming the file for a missing or invalid plan.json, no loadable checkpoint, or a checkpoint of
// another model.
TrainedWeights load_trained_weights(const std::string& dir);

}  // namespace fsdpx
