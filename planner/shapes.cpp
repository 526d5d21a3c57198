// planner/shapes.cpp — enumeration of parallel shapes and micro-batch sizes (torchtitan ParallelDims:
// the degrees multiply to the world size; the mesh is (pp, dp_replicate, dp_shard, cp, tp), tp innermost).
#include "planner/shapes.h"

#include "core/backend_capabilities.h"
#include "cost_models/compute.h"
#include "planner/ep_degrees.h"
#include "planner/target.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

bool allowed(int fixed, int value) { return fixed == 0 || fixed == value; }

// (schedule, vpp) pairs for pp: none with pp = 1; else the space's schedules, interleaving with each of
// its chunk counts that leaves every virtual stage a block. fsdpx's runtimes run ZB-H1's split backward
// with tp = cp = 1 only (core/backend_capabilities.cpp), so its target skips it beside tp or cp.
std::vector<std::pair<PipelineSchedule, int>> pipelines(const PlanRequest& r, int pp, int tp_cp) {
  const FixedDegrees& f = r.space.fixed;
  if (pp == 1) return {{PipelineSchedule::none, 1}};
  std::vector<PipelineSchedule> schedules = r.space.pp_schedules;
  if (f.pp_schedule) schedules = {*f.pp_schedule};
  std::vector<std::pair<PipelineSchedule, int>> out;
  for (PipelineSchedule s : schedules) {
    if (s == PipelineSchedule::zero_bubble && tp_cp > 1 && r.target.kind == TargetKind::fsdpx) continue;
    if (s != PipelineSchedule::interleaved_1f1b) {
      if (allowed(f.vpp, 1)) out.emplace_back(s, 1);
      continue;
    }
    std::vector<int> vpps = r.space.vpp_choices;
    if (f.vpp > 1) vpps = {f.vpp};
    for (int v : vpps)
      if (v > 1 && pp * v <= r.model.layers) out.emplace_back(s, v);
  }
  return out;
}

// fsdpx's executor and an MoE or latent-attention model: whether the backend's row refuses the shape's
// parallel degrees (searched gaps at /parallelism: core/backend_capabilities.cpp moe_gaps, mla_gaps and
// ep_gaps, e.g. tp or cp > 1 with MoE blocks, replicas beside ep > 1), read from the row on the shape's
// plan with one micro-batch per data-parallel rank (splitting the batch is micro_batch_choices' question).
// Dropping them here keeps the search, its no-fit suggestions and the batch-split message to shapes the
// backend runs (the wrappings' filter, space.cpp wrap_choices, reads the same row for every other gap).
bool row_refuses_shape(const PlanRequest& r, const Parallelism& par) {
  if (r.target.kind != TargetKind::fsdpx || !(r.model.is_moe() || r.model.is_mla())) return false;
  PlanRequest probe = r;
  probe.global_batch = par.data_parallel_ranks() * (par.pp_schedule == PipelineSchedule::interleaved_1f1b ? par.pp : 1);
  const Plan p = shape_plan(probe, par, 1, RecomputeMode::none);
  for (const CapabilityGap& g : capability_gaps(p, backend_capabilities(cluster_device(r.cluster))))
    if (g.searched && g.path.rfind("/parallelism/", 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<Parallelism> parallel_shapes(const PlanRequest& r) {
  const int world = r.cluster.world_size();
  const FixedDegrees& f = r.space.fixed;
  std::vector<Parallelism> out;
  for (int tp : divisors(r.cluster.gpus_per_node)) {
    // Megatron TP splits query and key/value heads across ranks (plan-format.md: tp divides heads).
    if (world % tp != 0 || r.model.heads % tp != 0 || r.model.kv_heads % tp != 0 || r.model.ffn_hidden % tp != 0 ||
        !allowed(f.tp, tp))
      continue;
    if (tp > 1 && (!r.space.allow_tp || r.lora)) continue;  // LoRA: data and context parallelism (core/lora.h)
    // The CPU runtime splits the FFN and the vocabulary evenly (no padding: executor/runtime).
    if (r.cluster.host_threads && (r.model.ffn_hidden % tp != 0 || r.model.vocab % tp != 0)) continue;
    for (int cp : divisors(world / tp)) {
      // Load-balanced causal CP cuts the sequence into 2·cp chunks (plan-format.md).
      if (cp > 1 && (!r.space.allow_cp || r.seq % (2 * cp) != 0)) continue;
      if (!allowed(f.cp, cp)) continue;
      // Sequence parallelism on the CPU splits each sequence's tokens evenly (as Megatron-LM requires).
      if (r.cluster.host_threads && tp > 1 && (r.seq / cp) % tp != 0) continue;
      for (int pp : divisors(world / (tp * cp))) {
        // Every stage runs at least one block (the first and last also hold the embedding and head), and
        // a stage fills whole nodes or fits in one (pp is the outermost mesh axis).
        if (!allowed(f.pp, pp) || (pp > 1 && (!r.space.allow_pp || pp > r.model.layers || r.lora))) continue;
        // fsdpx's executor keeps a tied weight in one unit (target.cpp), which stages split, and runs
        // pipelines with tp or cp > 1 where its backend's row says so (core/backend_capabilities.h), and
        // without MoE blocks (core/backend_capabilities.cpp moe_gaps).
        if (pp > 1 && r.target.kind == TargetKind::fsdpx &&
            (r.model.tied_embeddings || r.model.is_moe() ||
             (tp * cp > 1 && !backend_capabilities(cluster_device(r.cluster)).pipeline_with_model_parallel)))
          continue;
        const int stage_world = world / pp;
        if (stage_world > r.cluster.gpus_per_node && stage_world % r.cluster.gpus_per_node != 0) continue;
        const int dp = stage_world / (tp * cp);
        for (auto [schedule, vpp] : pipelines(r, pp, tp * cp))
          for (int rep : divisors(dp)) {
            if ((rep > 1 && !r.space.allow_hsdp) || !allowed(f.dp_replicate, rep) || !allowed(f.dp_shard, dp / rep))
              continue;
            Parallelism par;
            par.tp = tp;
            par.cp = cp;
            par.pp = pp;
            par.vpp = vpp;
            par.pp_schedule = schedule;
            par.dp_replicate = rep;
            par.dp_shard = dp / rep;
            par.sequence_parallel = tp > 1;
            par.data_parallel = rep > 1 ? DataParallel::hsdp : DataParallel::fsdp_full_shard;
            for (int ep : searched_ep_degrees(r, par)) {  // {1} for a dense model (planner/ep_degrees.h)
              par.ep = ep;
              if (!row_refuses_shape(r, par)) out.push_back(par);
            }
          }
      }
    }
  }
  return out;
}

std::vector<std::int64_t> micro_batch_choices(const PlanRequest& r, const Parallelism& par) {
  std::vector<std::int64_t> out;
  const int dp_ranks = par.data_parallel_ranks();
  if (r.global_batch % dp_ranks != 0) return out;
  const std::int64_t per_rank = r.global_batch / dp_ranks;
  auto accepts = [&](std::int64_t mb) {
    return per_rank % mb == 0 && (par.pp_schedule != PipelineSchedule::interleaved_1f1b || (per_rank / mb) % par.pp == 0);
  };
  if (!r.space.micro_batches.empty()) {
    for (std::int64_t mb : r.space.micro_batches)
      if (mb >= 1 && accepts(mb)) out.push_back(mb);
    return out;
  }
  // Divisors up to 16: larger micro-batches rarely pay and multiply the space.
  for (std::int64_t mb = 1; mb <= std::min<std::int64_t>(per_rank, 16); ++mb)
    if (accepts(mb)) out.push_back(mb);
  return out;
}

StageAccounting planner_stage_accounting(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch) {
  if (r.target.kind == TargetKind::torchtitan) return {1, 1};
  LayerShape s;
  s.micro_batch = micro_batch;
  s.seq = r.seq;
  s.tp = par.tp;
  s.cp = par.cp;
  s.sequence_parallel = par.sequence_parallel && par.tp > 1;
  auto time_s = [&](std::vector<KernelWork> (*kernels)(const ModelSpec&, const LayerShape&, Pass)) {
    double t = 0;
    for (Pass p : {Pass::forward, Pass::input_grad, Pass::weight_grad})
      t += kernels_time_s(kernels(r.model, s, p), r.cluster.gpu, s.act_dtype);
    return t;
  };
  const double block_s = time_s(block_kernels);
  if (!(block_s > 0)) return {1, 1};
  return {time_s(embedding_kernels) / block_s, time_s(head_kernels) / block_s};
}

Plan shape_plan(const PlanRequest& r, const Parallelism& par, std::int64_t micro_batch, RecomputeMode recompute) {
  TrainingSettings t;
  t.seq = r.seq;
  t.micro_batch = micro_batch;
  t.global_batch = r.global_batch;
  Plan p;
  if (par.pp > 1) {
    // Weights so large that a middle stage would get no block fall back to Megatron's even split, which
    // fits whenever pp x vpp <= layers (parallel_shapes).
    try {
      p = default_plan(r.model, r.cluster, t, par, 1, recompute, planner_stage_accounting(r, par, micro_batch));
    } catch (const ConfigError&) {
      p = default_plan(r.model, r.cluster, t, par, 1, recompute, {0, 0});
    }
  } else {
    p = default_plan(r.model, r.cluster, t, par, 1, recompute);
    p.units = wrap_per_block(r.model, PerBlockWrapping{});
  }
  p.framework = request_framework(r);
  // The release the plan is for, whose code its costs follow (core/framework.h framework_versions).
  if (p.framework == Framework::torchtitan && r.target.kind == TargetKind::torchtitan)
    p.framework_version = r.target.version;
  p.attention_kernel = target_attention_kernel(r.target, r.cluster, r.model.head_dim);
  p.compiled = r.compiled;
  p.lora = r.lora;
  if (r.fp16) p.precision.param = DType::fp16, p.loss_scale = LossScaleSettings{};
  p.fp8 = r.fp8;
  return p;
}

}  // namespace fsdpx
