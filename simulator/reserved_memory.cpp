// simulator/reserved_memory.cpp — the allocated peak of a simulated step turned into the caching
// allocator's reserved bytes: which stream each FSDP2 buffer is allocated on, per
// pytorch/pytorch torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py.
#include "simulator/reserved_memory.h"

#include <algorithm>

#include "cost_models/memory.h"
#include "cost_models/stack_costs.h"
#include "program/group_members.h"

namespace fsdpx {
namespace {

// Bytes of the role's "other" residents (CUDA context, NCCL buffers): outside the allocator.
double outside_allocator_bytes(const RoleProgram& role) {
  double bytes = 0;
  for (const MemEffect& e : role.resident)
    if (e.category == MemCategory::other) bytes += e.bytes;
  return bytes;
}

// FSDP2 allocates a unit's all-gather output on the copy-in stream and its reduce-scatter output, which
// becomes the sharded gradient, on the reduce-scatter stream (reduce_scatter_input.new_empty under that
// stream in foreach_reduce); LoRA's frozen units and the other stacks are left on the compute stream.
bool fsdp2_streams(const Plan& plan) {
  return !plan.lora && stack_costs(plan.framework, plan.compiled).fsdp == FsdpImpl::fsdp2;
}

void add_fsdp2_pools(const Plan& plan, const StepProgram& program, int role, StreamPoolBytes& pools) {
  const PrecisionPolicy policy{plan.precision.param, plan.precision.reduce, plan.precision.fp32_master_weights};
  std::vector<double> gathers;
  for (const ProgramUnit& u : program.units) {
    if (u.role != role || !is_sharded(u.placement.params)) continue;
    gathers.push_back(u.param_bytes);
    const double params = u.param_bytes / dtype_bytes(plan.precision.param);
    // The gradients are freed by zero_grad(set_to_none) after each step and reallocated in the next
    // backward, always on the reduce-scatter stream: its pool keeps them all reserved.
    pools.reduce_scatter += allocator_block_bytes(fsdp2_state_bytes(params, shard_group_ranks(plan.parallelism), policy).grads);
  }
  pools.all_gather = fsdp2_all_gather_pool_bytes(gathers);
}

double loss_hole_bytes(const Plan& plan, const StepProgram& program, int role) {
  if (role != int(program.roles.size()) - 1) return 0;  // the head's stage
  ActivationShape a;
  a.micro_batch = plan.training.micro_batch;
  a.seq = plan.training.seq;
  a.tp = plan.parallelism.tp;
  a.cp = plan.parallelism.cp;
  a.act_bytes = dtype_bytes(plan.precision.param);
  a.fused_loss = stack_costs(plan.framework, plan.compiled).loss == LossImpl::fused;
  return eager_loss_hole_bytes(plan.model, a);
}

}  // namespace

ReservedMemory reserved_memory(const Plan& plan, const Simulation& sim) {
  const int role = sim.peak_memory_stage;
  const MemoryPeak& peak = sim.engine.peak_by_role[std::size_t(role)];
  const double allocated = std::max(0.0, peak.total_bytes - outside_allocator_bytes(sim.program.roles[std::size_t(role)]));
  ReservedMemory r;
  r.pools.compute_allocated = allocated;
  if (fsdp2_streams(plan)) {
    add_fsdp2_pools(plan, sim.program, role, r.pools);
    // Gradients live at the peak sit in the reduce-scatter pool, counted there.
    r.pools.compute_allocated = std::max(0.0, allocated - peak.by_category[std::size_t(MemCategory::grads)]);
  }
  r.pools.compute_holes = loss_hole_bytes(plan, sim.program, role);
  r.bytes = reserved_bytes(r.pools);
  return r;
}

}  // namespace fsdpx
