// executor/session/runtime_program_from_plan.cpp — the session's entry into the runtime: checks that a
// backend runs the plan, lowers it once and copies what the interpreter needs besides the program into
// RunSettings (executor/runtime/runtime_program.h). The one executor file below the session's own
// headers that reads core/plan.h; everything under it reads the program and the run settings.
#include "core/plan.h"
#include "executor/runtime/runtime_program.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/backend_capabilities.h"
#include "core/errors.h"
#include "program/group_members.h"
#include "program/lower.h"

namespace fsdpx {

namespace {

// The first way the plan leaves the backend's row of core/backend_capabilities.h (precision, attention
// kernel and head size, dropout, parallelism axes and tensor-parallel splits, schedules, LoRA): the
// planner's fsdpx target reads the same row (planner/target.cpp), so what it plans this accepts.
void check_capabilities(const Plan& plan, ExecutorDevice device) {
  const std::vector<CapabilityGap> gaps = capability_gaps(plan, backend_capabilities(device));
  if (!gaps.empty()) throw ConfigError(fmt::format("plan: {}: {}", gaps.front().path, gaps.front().what));
}

void check_runnable(const Plan& plan, ExecutorDevice device) {
  check_capabilities(plan, device);
  if (plan.model.arch == Arch::gpt && plan.training.seq > plan.model.max_seq)
    throw ConfigError(fmt::format("plan: /training/seq: at most the model's max_seq {} for a learned position "
                                  "table (got {})", plan.model.max_seq, plan.training.seq));
}

}  // namespace

RuntimeProgram make_runtime_program(const Plan& plan, ExecutorDevice device) {
  check_runnable(plan, device);
  RuntimeProgram rp;
  rp.settings = RunSettings{plan.model,     plan.training,  plan.parallelism, plan.precision,
                            plan.optimizer, plan.loss_scale, plan.lora,    plan.fp8,
                            plan.attention_kernel};
  rp.program = lower(plan);
  rp.layout = make_param_layout(plan.model);
  // Checkpoints hold one shard count for the run: every unit's optimizer state is placed alike.
  FSDP_CHECK(!rp.program.units.empty(), "runtime: a program without units");
  const Placement optimizer = rp.program.units.front().placement.optimizer;
  for (const ProgramUnit& u : rp.program.units)
    FSDP_CHECK(u.placement.optimizer == optimizer, "runtime: units with different optimizer placements");
  rp.shard_count = is_sharded(optimizer) ? shard_group_ranks(plan.parallelism) : 1;  // dp_shard x cp
  rp.grad_accum = plan.grad_accum();
  rp.dp_ranks = plan.parallelism.data_parallel_ranks();
  for (int t = 0; t < plan.parallelism.tp; ++t) rp.tp_layouts.push_back(make_param_layout(plan.model, TpSlice{plan.parallelism.tp, t}));
  const int ep = plan.parallelism.ep;
  for (int e = 0; ep > 1 && e < ep; ++e) rp.ep_layouts.push_back(make_param_layout(plan.model, {}, EpSlice{ep, e}));
  const ParamLayout& local = ep > 1 ? rp.ep_layouts.front() : rp.tp_layouts.front();
  for (const PlanUnit& u : plan.units) {
    rp.flats.push_back(make_flat_unit(local, u.modules, rp.shard_count));  // the same on every tp or ep rank
    rp.full_flats.push_back(make_flat_unit(rp.layout, u.modules, rp.shard_count));
  }
  // The kept copy in the device's storage dtype: the CPU holds fp32 values (fp16 plans rounded), CUDA the
  // 16-bit compute dtype.
  const double elem_bytes = device == ExecutorDevice::cpu ? 4.0 : dtype_bytes(plan.precision.param);
  for (std::size_t u = 0; u < rp.flats.size(); ++u) {
    const int g = rp.program.units[u].kept_shard_ranks;
    rp.kept_copy_bytes.push_back(g > 1 ? double(rp.flats[u].padded_numel) * elem_bytes / g : 0.0);
  }
  return rp;
}

}  // namespace fsdpx
