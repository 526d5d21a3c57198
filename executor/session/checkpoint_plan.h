// executor/session/checkpoint_plan.h — where a checkpoint meets the plan it was trained with: the
// fingerprint that decides what a checkpoint loads into, and `fsdpx run --checkpoint-dir D`'s D/plan.json
// (the plan trained), so that `fsdpx sample` and `fsdpx export-hf` need only D. The newest checkpoint that
// verifies (or the step directory named) is resharded into one full fp32 parameter buffer in ParamLayout
// order, with a LoRA run's adapters beside it. The session entry is the only executor layer that reads a
// Plan; executor/checkpoint/ works on fingerprints and TrainerState. Leaves out optimizer moments and TP/PP
// checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

inline constexpr const char* kCheckpointPlanFile = "plan.json";

// Identifies what a checkpoint can be loaded into: the model and its LoRA settings (rank, alpha,
// targets) when it has them, not the parallel degrees nor the unit grouping (reshard.h maps both by
// module), so a state saved with N ranks loads with M. 16 hex digits (FNV-1a 64 of the model's JSON,
// then the lora section's). Module sizes are checked against the model's by reshard_state, which
// names a module that differs (e.g. after a change of the parameter layout).
std::string plan_fingerprint(const Plan& plan);

// Writes root/plan.json whole (temporary file, fsync, rename); creates root if needed.
void write_checkpoint_plan(const std::string& root, const Plan& plan);

struct TrainedWeights {
  Plan plan;
  std::vector<float> params;    // [make_param_layout(plan.model).total]
  std::vector<float> adapters;  // a LoRA run's adapters (executor/model/lora.h order), not merged; else empty
  std::int64_t step = 0;        // optimizer steps the weights have seen
  std::string checkpoint;       // the step directory read
};

// `dir`: a checkpoint root (the newest good step is read) or one step directory in it. ConfigError
// naming the file for a missing or invalid plan.json, no loadable checkpoint, or a checkpoint of
// another model.
TrainedWeights load_trained_weights(const std::string& dir);

}  // namespace fsdpx
