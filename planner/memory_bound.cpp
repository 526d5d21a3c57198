// planner/memory_bound.cpp — the pruning bound of memory_bound.h, built from the same cost-model
// calls the lowering uses (program/lower.cpp resident_memory, program/segment_work.cpp
// segment_memory) so that it stays below the simulated peak by construction.
#include "planner/memory_bound.h"

#include <array>

#include "cost_models/memory.h"
#include "cost_models/params.h"
#include "program/lower.h"
#include "program/segment_work.h"

namespace fsdpx {

MemoryBound memory_lower_bound(const Plan& plan) {
  MemoryBound b;
  const auto& par = plan.parallelism;
  double params = 0;
  for (double p : unit_params(plan)) params += p;
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  const DataPlacement placement = data_placement(par);
  b.state_bytes = is_sharded(placement.params) ? fsdp2_state_bytes(params, par.dp_shard, policy).total()
                                               : model_state_bytes(params, sharding_mode(placement), par.dp_shard, policy).total();
  // Communicators the lowering always creates (reshard groups would only add).
  const int communicators = (par.tp > 1) + (par.cp > 1) + (par.dp_shard > 1) + (par.dp_replicate > 1);
  const OverheadBytes fixed = overhead_bytes(communicators, 0);
  b.fixed_bytes = fixed.cuda_context + fixed.nccl_buffers;
  const int modules = int(plan.model.layers) + 3;
  std::array<double, 4> block_bytes{-1, -1, -1, -1};  // by recompute mode: identical blocks computed once
  for (int i = 0; i < modules; ++i) {
    const bool block = i >= 1 && i <= int(plan.model.layers);
    if (!block) {
      b.activation_bytes += segment_memory(plan, i, 1).saved_activation_bytes;
      continue;
    }
    double& cached = block_bytes[std::size_t(plan.recompute[std::size_t(i - 1)])];
    if (cached < 0) cached = segment_memory(plan, i, 1).saved_activation_bytes;
    b.activation_bytes += cached;
  }
  if (is_sharded(placement.params) && placement.reshard_after_forward) {
    // The head (the tied table when embeddings are tied) is gathered while the last forward op runs;
    // divided by tp at most (vocabulary-parallel head), so never more than the lowering allocates.
    const ParamCounts pc = count_params(plan.model);
    const double head_params = double(plan.model.tied_embeddings ? pc.embedding : pc.head) / par.tp;
    b.gathered_bytes = head_params * dtype_bytes(plan.precision.param);
  }
  b.headroom_bytes = allocator_headroom_bytes(b.activation_bytes + b.gathered_bytes);
  return b;
}

}  // namespace fsdpx
