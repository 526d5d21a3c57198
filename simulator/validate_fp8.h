// simulator/validate_fp8.h — what an fp8 case's prediction owes to each part of its recipe: the same plan
// simulated in bf16, and with FSDP's fp8 all-gather switched on or off, so that validate's notes state the
// predicted fp8 speedup and the all-gather's share of it. Leaves out per-kernel attribution.
#pragma once

#include <string>
#include <vector>

#include "core/plan.h"

namespace fsdpx {

struct Fp8Attribution {
  double bf16_tokens_per_s_per_gpu = 0;       // the plan without fp8
  double no_gather_tokens_per_s_per_gpu = 0;  // fp8 GEMMs, weights gathered in bf16
  double gather_tokens_per_s_per_gpu = 0;     // fp8 GEMMs and fp8 all-gather; 0 where the recipe has none
  // (gather - no_gather) / (plan's fp8 speed - bf16 speed): the share of the predicted fp8 speedup the
  // fp8 all-gather brings; 0 where the recipe has none.
  double all_gather_share = 0;
};

// `plan` must have an fp8 section. Simulates the variants (two or three runs of the simulator).
Fp8Attribution fp8_attribution(const Plan& plan);
// One note line for validate's output: "fp8 tensorwise (all-gather off): 1.24x bf16 predicted; ...".
std::string fp8_attribution_note(const Plan& plan, const Fp8Attribution& a);

}  // namespace fsdpx
