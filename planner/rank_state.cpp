// planner/rank_state.cpp — rank_state_bytes (rank_state.h), as program/lower.cpp resident_memory counts it.
#include "planner/rank_state.h"

#include "core/data_placement.h"
#include "cost_models/lora_memory.h"
#include "cost_models/memory.h"
#include "cost_models/stack_costs.h"
#include "program/group_members.h"
#include "program/lower.h"

namespace fsdpx {

double rank_state_bytes(const Plan& plan, double local, double state) {
  const auto& par = plan.parallelism;
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const DataPlacement placement = data_placement(par);
  if (plan.lora)
    return lora_state_bytes(local, lora_params(plan.model, *plan.lora), is_sharded(placement.params) ? shard_group_ranks(par) : 1,
                            plan.precision.param)
        .total();
  if (is_sharded(placement.params)) {
    const StateBytes b = fsdp2_state_bytes(state, shard_group_ranks(par), policy);
    // FSDP2's sharded gradients appear with the first reduce-scatter (program/lower_units.cpp reduce),
    // after the last forward op of a one-micro-batch step: left out.
    return b.total() - (sharded_grads_from_reduction(stack_costs(plan.framework, plan.compiled).fsdp) ? b.grads : 0.0);
  }
  const StateBytes whole = model_state_bytes(local, sharding_mode(placement), shard_group_ranks(par), policy);
  return whole.params + whole.grads + model_state_bytes(state, sharding_mode(placement), shard_group_ranks(par), policy).optimizer;
}

}  // namespace fsdpx
