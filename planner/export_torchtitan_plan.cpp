// planner/export_torchtitan_plan.cpp — the plan torchtitan runs from the settings written
// (torchtitan_closest_plan, export_torchtitan.h): apply_fsdp's units and reshard policy
// (models/llama3/infra/parallelize.py: embedding and each block with the policy, [norm, output] resharded
// only under "always"), activation_checkpoint.py's modes, FSDP2's reduction after every micro-batch in
// the configured dtype.
#include <algorithm>

#include <fmt/format.h>

#include "planner/export_torchtitan.h"

namespace fsdpx {

namespace {

std::vector<RecomputeMode> recompute_of(const TorchtitanSettings& s, std::size_t blocks) {
  std::vector<RecomputeMode> r(blocks, RecomputeMode::none);
  if (s.ac_mode == "full") r.assign(blocks, RecomputeMode::full);
  if (s.ac_mode != "selective") return r;
  if (s.ac_selective_option == "op") {
    r.assign(blocks, RecomputeMode::selective_op);
    return r;
  }
  // _apply_layer_sac: the counter is incremented before the test, so blocks i with (i + 1) % n == 0.
  const std::size_t n = std::stoul(s.ac_selective_option);
  for (std::size_t i = 0; i < blocks; ++i)
    if ((i + 1) % n == 0) r[i] = RecomputeMode::full;
  return r;
}

}  // namespace

Plan torchtitan_closest_plan(const Plan& plan, const TorchtitanSettings& s) {
  Plan p = plan;
  Parallelism& par = p.parallelism;
  par.dp_replicate = s.dp_replicate;
  par.dp_shard = s.dp_shard;
  // torchtitan has FSDP (HSDP when replicated) and DDP; ZeRO-1 and shard-grad-op are written as FSDP.
  if (par.data_parallel != DataParallel::ddp)
    par.data_parallel = s.dp_replicate > 1 ? DataParallel::hsdp : DataParallel::fsdp_full_shard;
  if (par.tp > 1) par.sequence_parallel = true;
  p.units = default_plan(p.model, p.cluster, p.training, par, 1, RecomputeMode::none).units;
  // Under PP the config names the plan's stages exactly (module_fqns_per_model_part).
  if (par.pp > 1)
    for (PlanUnit& u : p.units)
      for (const PlanUnit& v : plan.units)
        if (std::find(v.modules.begin(), v.modules.end(), u.modules.front()) != v.modules.end()) u.stage = v.stage;
  if (par.data_parallel != DataParallel::ddp) {
    for (PlanUnit& u : p.units) u.reshard_after_forward = s.reshard_policy == "never" ? 0 : 1;
    if (s.reshard_policy == "default") p.units.back().reshard_after_forward = 0;
  }
  p.recompute = recompute_of(s, p.recompute.size());
  p.precision.param = s.param_dtype == "float32" ? DType::fp32 : DType::bf16;
  p.precision.reduce = DType::fp32;
  p.precision.fp32_master_weights = true;
  p.reduce_grads = par.pp > 1 ? ReduceGrads::last_micro_batch : ReduceGrads::every_micro_batch;
  if (par.pp > 1 && par.pp_schedule == PipelineSchedule::zero_bubble) par.pp_schedule = PipelineSchedule::one_f_one_b;
  p.prefetch = Prefetch{1, 1, kTorchtitanAllGathersInFlight};
  if (p.optimizer.grad_clip_norm <= 0) p.optimizer.grad_clip_norm = 1e30;
  p.framework = Framework::torchtitan;
  p.framework_version = s.version;
  p.compiled = s.compile;
  p.fp8 = s.fp8;
  p.predicted.reset();
  return p;
}

}  // namespace fsdpx
