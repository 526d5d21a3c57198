// planner/ep_degrees.h — the expert-parallel degrees the planner may try for a shape: every ep that
// core/expert_parallel.h accepts (divides the routed experts and dp_shard x cp, a multiple of cp),
// ascending, 1 first; {1} for a dense model. Its own file so that the search's speed work and this
// enumeration stay apart. Leaves out expert tensor parallelism and any cost-based pruning (the
// simulator ranks them); the search does not call it while plans refuse MoE models (issue 30).
#pragma once

#include <vector>

#include "core/model_spec.h"
#include "core/plan_settings.h"

namespace fsdpx {

// Candidate ep for `par` (its dp_shard and cp read; its ep ignored), capped at `max_ep` (0: no cap).
std::vector<int> ep_degrees(const ModelSpec& m, const Parallelism& par, int max_ep = 0);

}  // namespace fsdpx
