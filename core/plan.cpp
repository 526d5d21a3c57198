// core/plan.cpp — names of the plan's modes, the module list of a model, and the FSDP2/torchtitan
// default plan. Reading and writing JSON live in plan_json.cpp, consistency checks in plan_validate.cpp;
// docs/plan-format.md has the table of keys. Leaves out any search: choosing a plan is the planner's job.
//
// Schema "fsdpx-plan/1" — required keys: format, model, cluster, training{seq, micro_batch,
// global_batch}, parallelism{dp_shard}, units. Optional keys and their defaults:
//   training.seed 0, training.dropout 0 (written only when > 0); parallelism.dp_replicate/tp/cp/pp/vpp 1, sequence_parallel false,
//   pp_schedule "none", data_parallel "fsdp_full_shard"; units[].reshard_after_forward true;
//   prefetch {forward 1, backward 1, max_all_gathers_in_flight 2} (each key optional);
//   recompute "none"; mixed_precision {param_dtype "bf16", reduce_dtype "fp32", fp32_master_weights true};
//   optimizer {kind "adamw", lr 3e-4, beta1 0.9, beta2 0.95, eps 1e-8, weight_decay 0.1,
//   grad_clip_norm 1.0, warmup_steps 10, total_steps 1000, min_lr_ratio 0.1} (each key optional);
//   reduce_grads "every_micro_batch"; predicted absent (each of its keys optional, 0 = not predicted);
//   notes absent. The defaults are the field initialisers of core/plan.h.
#include "core/plan.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/compile.h>  // FMT_COMPILE: op and module names, formatted per op
#include <fmt/format.h>

#include "core/data_placement.h"
#include "core/errors.h"

namespace fsdpx {

namespace {

constexpr std::array<std::pair<DataParallel, const char*>, 6> kDataParallelNames{{
    {DataParallel::fsdp_full_shard, "fsdp_full_shard"},
    {DataParallel::fsdp_shard_grad_op, "fsdp_shard_grad_op"},
    {DataParallel::hsdp, "hsdp"},
    {DataParallel::ddp, "ddp"},
    {DataParallel::zero1, "zero1"},
    {DataParallel::distributed_optimizer, "distributed_optimizer"},
}};
constexpr std::array<std::pair<RecomputeMode, const char*>, 4> kRecomputeNames{{
    {RecomputeMode::none, "none"},
    {RecomputeMode::selective, "selective"},
    {RecomputeMode::full, "full"},
    {RecomputeMode::selective_op, "selective_op"}}};
constexpr std::array<std::pair<ReduceGrads, const char*>, 2> kReduceGradsNames{{
    {ReduceGrads::every_micro_batch, "every_micro_batch"}, {ReduceGrads::last_micro_batch, "last_micro_batch"}}};
constexpr std::array<std::pair<PipelineSchedule, const char*>, 5> kScheduleNames{{
    {PipelineSchedule::none, "none"},
    {PipelineSchedule::gpipe, "gpipe"},
    {PipelineSchedule::one_f_one_b, "1f1b"},
    {PipelineSchedule::interleaved_1f1b, "interleaved_1f1b"},
    {PipelineSchedule::zero_bubble, "zero_bubble"},
}};

template <typename E, std::size_t N>
const char* enum_name(const std::array<std::pair<E, const char*>, N>& names, E e) {
  for (const auto& [v, n] : names)
    if (v == e) return n;
  FSDP_CHECK(false, "plan enum value without a name");
  return "";
}

}  // namespace

const char* data_parallel_name(DataParallel d) { return enum_name(kDataParallelNames, d); }
const char* recompute_mode_name(RecomputeMode r) { return enum_name(kRecomputeNames, r); }
const char* reduce_grads_name(ReduceGrads r) { return enum_name(kReduceGradsNames, r); }
const char* pipeline_schedule_name(PipelineSchedule s) { return enum_name(kScheduleNames, s); }

std::vector<std::string> module_names(const ModelSpec& m) {
  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(m.layers) + 3);
  names.emplace_back("embedding");
  for (std::int64_t i = 0; i < m.layers; ++i) names.push_back(fmt::format(FMT_COMPILE("block.{}"), i));
  names.emplace_back("final_norm");
  names.emplace_back("head");
  return names;
}

namespace {

// Units of one stage's blocks [first, first + count): one unit per `blocks_per_unit` blocks.
void add_block_units(std::vector<PlanUnit>& units, std::int64_t first, std::int64_t count, int blocks_per_unit,
                     int reshard, int stage) {
  for (std::int64_t b = first; b < first + count; b += blocks_per_unit) {
    PlanUnit u{{}, reshard, stage};
    for (std::int64_t k = b; k < std::min<std::int64_t>(b + blocks_per_unit, first + count); ++k)
      u.modules.push_back(fmt::format(FMT_COMPILE("block.{}"), k));
    units.push_back(std::move(u));
  }
}

// One pipeline stage per virtual stage: the embedding alone on stage 0, each stage's blocks in units,
// final norm + head on the last stage. torchtitan applies FSDP to each stage's model part separately
// (torchtitan/distributed/pipeline_parallel.py, pipeline_llm: parallelize_fn per model part), so a unit
// never spans two stages.
std::vector<PlanUnit> pipeline_units(const ModelSpec& m, const Parallelism& par, int blocks_per_unit, int reshard,
                                     StageAccounting accounting) {
  const int stages = virtual_stages(par.pp, par.vpp);
  const std::vector<int> blocks = balance_stage_blocks(int(m.layers), stages, accounting);
  std::vector<PlanUnit> units{PlanUnit{{"embedding"}, reshard, 0}};
  std::int64_t first = 0;
  for (int s = 0; s < stages; ++s) {
    add_block_units(units, first, blocks[std::size_t(s)], blocks_per_unit, reshard, s);
    first += blocks[std::size_t(s)];
  }
  units.push_back(PlanUnit{{"final_norm", "head"}, reshard, stages - 1});
  return units;
}

}  // namespace

// torchtitan's apply_fsdp (parallelize_llama.py) wraps the token embedding, each transformer block,
// and norm + output together; the last group is not resharded after forward because backward starts
// with it. A tied embedding shares its weight with the head, so both must live in one FlatParameter
// group (FSDP1 paper §3: shared parameters belong to the unit that owns both users). Under pipeline
// parallelism torchtitan keeps parameters unsharded across micro-batches (reshard_after_forward =
// not pp_enabled, torchtitan/models/llama3/infra/parallelize.py, apply_fsdp) and torch's pipeline stage
// reduces gradients once, after the last backward (torch/distributed/pipelining/stage.py,
// backward_maybe_with_nosync: set_requires_gradient_sync(False) until then).
Plan default_plan(const ModelSpec& m, const ClusterSpec& c, const TrainingSettings& t, const Parallelism& par,
                  int blocks_per_unit, RecomputeMode recompute, StageAccounting accounting) {
  FSDP_CHECK(blocks_per_unit >= 1, "blocks_per_unit must be >= 1");
  FSDP_CHECK(m.layers >= 1, "model without layers");
  Plan p;
  p.model = m;
  p.cluster = c;
  p.training = t;
  p.parallelism = par;
  const bool pipelined = par.pp > 1;
  const int reshard = data_placement(par).reshard_after_forward && !pipelined ? 1 : 0;
  if (pipelined) {
    p.units = pipeline_units(m, par, blocks_per_unit, reshard, accounting);
    p.reduce_grads = ReduceGrads::last_micro_batch;
  } else {
    if (!m.tied_embeddings) p.units.push_back(PlanUnit{{"embedding"}, reshard});
    add_block_units(p.units, 0, m.layers, blocks_per_unit, reshard, 0);
    PlanUnit last{{}, 0};
    if (m.tied_embeddings) last.modules.emplace_back("embedding");
    last.modules.emplace_back("final_norm");
    last.modules.emplace_back("head");
    p.units.push_back(std::move(last));
  }
  p.recompute.assign(static_cast<std::size_t>(m.layers), recompute);
  // The `cpu` cluster's ranks run the CPU reference backend, which computes in fp32 and materialises
  // the attention probabilities (executor/model/block.h); its runtime rejects plans saying otherwise.
  if (c.host_threads) p.precision.param = DType::fp32, p.attention_kernel = AttentionKernel::unfused;
  return p;
}

}  // namespace fsdpx
