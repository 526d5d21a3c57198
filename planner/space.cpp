// planner/space.cpp — the dimensions of space.h and how the target narrows them: fsdpx's executor runs
// what its backend's row in core/backend_capabilities.h says (tp and cp on both backends; pipelines with
// tp or cp where the row allows, which the search's capability-gap filter in planner/target.cpp keeps to),
// and never op-level selective recompute (both models run it as none); torchtitan's job config has one unit per
// block, a single reshard policy, implicit prefetch, fp32 reduction, op-level or every-n-th-block
// recompute, and no way to say fsdpx's cp sharding (export_torchtitan_map.cpp).
#include "planner/space.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/backend_capabilities.h"
#include "planner/memory_bound.h"
#include "planner/wrapping.h"

namespace fsdpx {

namespace {

void narrow_for_torchtitan(SearchSpace& k) {
  // torchtitan's single-stage schedules are 1F1B and GPipe; its zero-bubble schedules are multi-stage
  // (InterleavedZeroBubble, ZBVZeroBubble need two or more stages per rank), not ZB-H1.
  std::erase(k.pp_schedules, PipelineSchedule::zero_bubble);
  k.blocks_per_unit = {1};
  k.merge_embedding_head = false;
  k.fsdp1_min_params.clear();
  k.try_simplefsdp_auto = false;
  k.try_node_reshard = false;
  k.prefetch_depths = {1};
  k.all_gather_caps = {2};
  k.reduce_dtypes = {DType::fp32};  // job_config.py: mixed_precision_reduce is Literal["float32"]
  k.allow_cp = false;
  std::erase(k.uniform_recompute, RecomputeMode::selective);
}

}  // namespace

Space effective_space(const PlanRequest& r) {
  Space s{r.space, PartialRecompute::first_k};
  if (r.target.kind == TargetKind::fsdpx) {
    const BackendCapabilities& caps = backend_capabilities(cluster_device(r.cluster));
    s.knobs.allow_tp = s.knobs.allow_tp && caps.tensor_parallel;
    s.knobs.allow_cp = s.knobs.allow_cp && caps.context_parallel;
    // The attention kernel the plans record (target.cpp) must have a context-parallel variant too, or no
    // cp > 1 shape runs (CUDA's tensor_core: capability_gaps' /parallelism/cp).
    const AttentionKernel kernel = target_attention_kernel(r.target, r.cluster, r.model.head_dim);
    for (const AttentionKernelSupport& k : caps.attention_kernels)
      if (k.kernel == kernel && !k.context_parallel) s.knobs.allow_cp = false;
    // Both backends' models run op-level selective recompute as none (executor/model/transformer.h,
    // cuda_backend/cuda_model.h) and refuse it with tp > 1 (core/backend_capabilities.cpp), and the space's
    // recompute choices are the same for every shape, so the fsdpx target never chooses it.
    std::erase(s.knobs.uniform_recompute, RecomputeMode::selective_op);
  } else {
    narrow_for_torchtitan(s.knobs);
    s.partial = PartialRecompute::every_nth;
  }
  if (!s.knobs.partial_recompute || r.model.layers < 2) s.partial = PartialRecompute::none;
  // Gradients reduce in fp32 unless the user allowed bf16; the CPU backend reduces in fp32 only.
  if (!r.allow_bf16_reduce || r.cluster.host_threads) std::erase(s.knobs.reduce_dtypes, DType::bf16);
  if (s.knobs.reduce_dtypes.empty()) s.knobs.reduce_dtypes = {DType::fp32};
  if (s.knobs.prefetch_depths.empty()) s.knobs.prefetch_depths = {1};
  if (s.knobs.all_gather_caps.empty()) s.knobs.all_gather_caps = {2};
  if (s.knobs.blocks_per_unit.empty()) s.knobs.blocks_per_unit = {1};
  return s;
}

PlanRequest resolve_memory(const PlanRequest& request) {
  PlanRequest r = request;
  const double capacity = r.memory_limit_bytes.value_or(r.cluster.gpu.hbm_bytes);
  const double margin = r.memory_margin_bytes.value_or(kDefaultMemoryMarginFraction * capacity);
  r.memory_limit_bytes = capacity - margin;
  r.memory_margin_bytes = margin;
  return r;
}

std::vector<RecomputeMode> recompute_pattern(const RecomputeChoice& c, std::int64_t layers, PartialRecompute partial) {
  std::vector<RecomputeMode> r(std::size_t(layers), c.uniform);
  if (c.member == 0) return r;
  for (std::int64_t i = 0; i < layers; ++i) {
    const bool full = partial == PartialRecompute::first_k ? i < c.member : (i + 1) % c.member == 0;
    r[std::size_t(i)] = full ? RecomputeMode::full : RecomputeMode::none;
  }
  return r;
}

std::vector<int> partial_members(std::int64_t layers, PartialRecompute partial) {
  std::vector<int> out;
  if (partial == PartialRecompute::first_k)
    for (int k = 1; k < layers; ++k) out.push_back(k);
  if (partial == PartialRecompute::every_nth)
    for (int n = int(layers); n >= 2; --n) out.push_back(n);
  return out;
}

int full_blocks(int member, std::int64_t layers, PartialRecompute partial) {
  if (member == 0) return 0;
  return partial == PartialRecompute::first_k ? member : int(layers / member);
}

namespace {

// Under pipeline parallelism FSDP wraps each stage's model part separately (torchtitan applies
// parallelize_fn per part), so units never cross a stage: per-block k within the shape's stages.
std::vector<WrapChoice> pipeline_wrap_choices(const Plan& shape, const Space& s) {
  std::vector<WrapChoice> out;
  for (int k : s.knobs.blocks_per_unit) {
    WrapChoice w{WrapPolicy::per_block, fmt::format("per_block k{} in stages", k), {}};
    int stage = -1, in_unit = 0;
    for (const PlanUnit& u : shape.units) {
      const bool block = u.modules.front().rfind("block.", 0) == 0;
      if (block && !w.units.empty() && stage == u.stage && in_unit < k &&
          w.units.back().modules.back().rfind("block.", 0) == 0) {
        w.units.back().modules.push_back(u.modules.front());
        ++in_unit;
        continue;
      }
      w.units.push_back(u);
      stage = u.stage;
      in_unit = 1;
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

namespace {

std::vector<WrapChoice> flat_wrap_choices(const Plan& shape, const PlanRequest& r, const Space& s) {
  std::vector<WrapChoice> out;
  const bool tied = r.model.tied_embeddings;
  const int merges = tied || !s.knobs.merge_embedding_head ? 1 : 4;
  for (int k : s.knobs.blocks_per_unit)
    for (int merge = 0; merge < merges; ++merge)
      out.push_back({WrapPolicy::per_block, fmt::format("per_block k{}{}{}", k, merge & 1 ? "+emb" : "", merge & 2 ? "+head" : ""),
                     wrap_per_block(r.model, PerBlockWrapping{k, (merge & 1) != 0, (merge & 2) != 0})});
  // FSDP1's size-based policy and SimpleFSDP's auto wrapping count dense blocks (count_params): per-block
  // wrapping only for MoE models.
  const bool moe = r.model.is_moe();
  for (double min_params : moe ? std::vector<double>{} : s.knobs.fsdp1_min_params)
    out.push_back({WrapPolicy::fsdp1_size_based, fmt::format("fsdp1 min {:.0e}", min_params),
                   wrap_fsdp1_size_based(r.model, min_params)});
  if (s.knobs.try_simplefsdp_auto && !moe) {
    Plan least = shape;
    least.recompute.assign(least.recompute.size(), RecomputeMode::full);
    const double room = std::max(1.0, *r.memory_limit_bytes - memory_lower_bound(least).total());
    out.push_back({WrapPolicy::simplefsdp_auto, "simplefsdp", wrap_simplefsdp_auto(shape, room)});
  }
  return out;
}

}  // namespace

std::vector<WrapChoice> wrap_choices(const Plan& shape, const PlanRequest& r, const Space& s) {
  std::vector<WrapChoice> out =
      shape.parallelism.pp > 1 ? pipeline_wrap_choices(shape, s) : flat_wrap_choices(shape, r, s);
  // The fsdpx target drops what its executor refuses (target.cpp): wrappings that split a tied model's
  // shared weight, and every wrapping of a shape the row does not run (a pipeline with tp or cp where the
  // row lacks pipeline_with_model_parallel, cp > 1 with an attention kernel that has no cp variant).
  std::erase_if(out, [&](const WrapChoice& w) {
    Plan p = shape;
    p.units = w.units;
    return !target_gaps(p, r.target).empty() && r.target.kind == TargetKind::fsdpx;
  });
  return out;
}

std::vector<int> reshard_choices(const Plan& shape, const PlanRequest& r, const Space& s) {
  std::vector<int> out{1};
  if (s.knobs.try_no_reshard || shape.parallelism.pp > 1) out.push_back(0);
  const auto& par = shape.parallelism;
  const int per_node = r.cluster.gpus_per_node / (par.tp * par.cp);
  if (s.knobs.try_node_reshard && per_node > 1 && par.dp_shard > per_node && par.dp_shard % per_node == 0)
    out.push_back(per_node);
  return out;
}

// Under pipeline parallelism torchtitan's default keeps parameters unsharded (reshard_after_forward =
// not pp_enabled).
Config default_config(const Plan& shape, const PlanRequest&, const Space& s) {
  const int reshard = shape.parallelism.pp > 1 ? 0 : 1;
  return Config{0, reshard, s.knobs.prefetch_depths.front(), s.knobs.all_gather_caps.front(), s.knobs.reduce_dtypes.front()};
}

Plan configured_plan(const Plan& shape, const std::vector<WrapChoice>& wraps, const Config& c,
                     const std::vector<RecomputeMode>& recompute) {
  Plan p = shape;
  p.units = wraps[c.wrap].units;
  for (auto& u : p.units) u.reshard_after_forward = c.reshard;
  if (c.reshard == 1) p.units.back().reshard_after_forward = 0;  // backward starts with the last unit
  p.prefetch.forward = p.prefetch.backward = c.prefetch;
  p.prefetch.max_all_gathers_in_flight = c.cap;
  p.precision.reduce = c.reduce;
  p.recompute = recompute;
  return p;
}

}  // namespace fsdpx
