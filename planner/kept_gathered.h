// planner/kept_gathered.h — the all-gathered parameters a plan holds as the lowering sizes them
// (program/lower.cpp gather_bytes_), and without pipelining the units it keeps gathered after forward
// (program/lower_units.cpp forward_segment): the term of the memory bound (memory_bound.h) that tells
// whether a shape may keep its units gathered at all (shape_bound.h regather_share). Leaves out
// pipelines (a stage's units stay gathered across micro-batches: a walk of the schedule would be needed),
// MoE experts' own gathers and LoRA.
#pragma once

#include <vector>

#include "core/plan.h"
#include "planner/memory_bound.h"

namespace fsdpx {

// Per unit of `plan`, the bytes its all-gather allocates: the param dtype, a block's linear weights in
// fp8 under fp8 all-gather. `params_per_unit` as unit_params(plan) counts them.
std::vector<double> unit_gather_bytes(const Plan& plan, const std::vector<double>& params_per_unit);
std::vector<double> unit_gather_bytes(const Plan& plan);

// Without pipelining, the gathered bytes alive when the last forward op starts: every unit kept gathered
// (reshard_after_forward 0), the copy over g ranks of a unit resharded to g, and the head's unit. -1 when
// the plan reshards every unit fully or this does not apply (pipelines, MoE, LoRA, unsharded parameters).
double kept_gathered_bytes(const Plan& plan, const std::vector<double>& gather);

// Without pipelining (a dense model, sharded parameters, no LoRA), `b`, a bound of `plan` under any
// reshard, raised to the plan with every unit kept gathered after forward: all of them are gathered when
// the last forward op starts. `b` otherwise.
MemoryBound kept_gathered_bound(const Plan& plan, MemoryBound b);

}  // namespace fsdpx
