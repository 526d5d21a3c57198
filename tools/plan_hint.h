// tools/plan_hint.h — the hint `fsdpx plan` gives when the default target, fsdpx's own executor, is far
// below what another target reaches for the same request (issue 35): it plans the request again for the
// newest torchtitan release and, when that plan is at least kHintSpeedup times faster in tokens/s per
// GPU (or fits where fsdpx's does not), names the target, its throughput, MFU and layout, and what of that
// plan fsdpx's executor cannot run (planner/target.h target_gaps: today TP and CP on CUDA). Leaves out
// stacks without a target (Megatron) and requests that chose a target, a framework, fp16 or LoRA.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/planner.h"

namespace fsdpx {

// "Far below": another target's plan at least 1.2x as fast. A presentation threshold, not a model
// constant: smaller gaps are within the planner's own prediction error on published runs (docs/validation.md).
inline constexpr double kHintSpeedup = 1.2;

struct TargetHint {
  std::string target;                 // "torchtitan@0.2.2"
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double speedup = 0;                 // over the fsdpx plan's tokens/s; 0 when no fsdpx plan fits
  std::string layout;                 // the other plan's label
  std::vector<std::string> why;       // what of that plan fsdpx's executor cannot run
};

// The hint for `r` (planned for the default target, with result `res`), or none.
std::optional<TargetHint> target_hint(const PlanRequest& r, const PlanResult& res);
std::string target_hint_text(const TargetHint& h);
nlohmann::json target_hint_json(const TargetHint& h);

}  // namespace fsdpx
