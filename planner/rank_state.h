// planner/rank_state.h — the model state (parameters, gradients, optimizer) one rank holds before a step
// starts, for the planner's memory bound: the lowering's own accounting (program/lower.cpp
// resident_memory), with an MoE model's experts sharded over their own FSDP group. Leaves out everything
// a step allocates (activations, gathered units, buffers: planner/memory_bound.h).
#pragma once

#include "core/plan.h"

namespace fsdpx {

// Bytes of `plan`'s state on a rank holding `local` parameters (after tp, its units' unit_params) whose
// sharded state is that of `state` parameters (program/moe_block.h unit_state_params: an MoE model's local
// experts x ep, so that dividing by dp_shard x cp gives their shard over dp_shard x cp / ep ranks):
// FSDP2's shards over dp_shard x cp (less the gradient shards when they appear only with the first
// reduce-scatter), or under replicated parameters the `local` ones whole with the optimizer's shards.
double rank_state_bytes(const Plan& plan, double local, double state);

}  // namespace fsdpx
